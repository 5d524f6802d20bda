use thiserror::Error;

#[derive(Debug, Error)]
pub enum StorageError {
    #[error("rocksdb: {0}")]
    Rocks(#[from] rocksdb::Error),
    #[error("unknown column family {0}")]
    UnknownCf(String),
    #[error("value encoding: {0}")]
    Codec(String),
    #[error("sealed value in {cf} could not be opened: {source}")]
    Unseal { cf: String, source: idnode_keys::KeyError },
    #[error("snapshot stream: {0}")]
    Stream(String),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}
