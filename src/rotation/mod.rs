//! Key rotation on a running node, each from one operator command through the ops listener
//! (docs/operations.md, "Key rotation"): the node's data keys (a new epoch, then background
//! re-sealing), the replicated token key ring (through raft, so every node switches at the
//! same log entry), and the KEK that wraps the node's key ring.

pub mod cli;
pub mod dek;
pub mod routes;
pub mod schedule;
#[cfg(test)]
mod schedule_tests;
