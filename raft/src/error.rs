//! Errors callers of the node see, shaped for HTTP mapping (NoLeader/Timeout are transient).

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ProposeError {
    #[error("no raft leader is known")]
    NoLeader,
    #[error("raft operation timed out")]
    Timeout,
    #[error("rejected: {0}")]
    Rejected(String),
    #[error("raft fatal: {0}")]
    Fatal(String),
}

/// Carries any displayable failure into openraft's error types (a storage error stops the node
/// loudly, which is what a failed write or an undecodable value must do).
pub(crate) fn any(e: impl std::fmt::Display) -> openraft::AnyError {
    openraft::AnyError::error(e.to_string())
}
