//! The error that stops apply (and raft) rather than refusing a command.

use idnode_storage::StorageError;

/// Storage failures inside apply are fatal for the node (raft stops): a command is never
/// half-applied or skipped.
pub(crate) type Fatal = StorageError;
