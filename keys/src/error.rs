use thiserror::Error;

/// Errors from key handling. Messages never include key material.
#[derive(Debug, Error)]
pub enum KeyError {
    #[error("key-encryption key is invalid: {0}")]
    InvalidKek(String),
    #[error("key file {path}: {reason}")]
    KeyFile { path: String, reason: String },
    #[error("decryption failed (wrong key or tampered data)")]
    Decrypt,
    #[error("unknown data-key epoch {0}")]
    UnknownEpoch(u32),
    #[error("malformed sealed value")]
    Malformed,
    #[error("password hashing failed: {0}")]
    Password(String),
    #[error(
        "{path} is key-ring format {version}: this data directory was written by an idnode before data format 2, \
         whose name indexes were keyed per node (replicas could disagree after a snapshot install). It cannot be \
         upgraded in place; see docs/raft.md, \"Data format\""
    )]
    LegacyDataFormat { path: String, version: u8 },
}
