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
    /// Reads of the family are refused on this node: one of its stored values failed to open.
    #[error("column family {0} is quarantined on this node (its log says why: a value that did not open, or a digest that differed)")]
    Quarantined(String),
    #[error("snapshot stream: {0}")]
    Stream(String),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}
