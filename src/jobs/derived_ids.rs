//! Runs the migration of users created under the first derivation of user ids
//! (`state::derived_ids`) to its end, on the leader, once the cluster version allows the
//! command (every voter runs a binary that applies it); a pass after that finds it done and
//! proposes nothing.

use crate::context::Core;
use crate::http::error::ApiResult;
use crate::state::derived_ids::{progress, MAX_BATCH};
use crate::state::Command;

/// The cluster version that brought `MigrateDerivedUserIds`.
const NEEDS_VERSION: u32 = 4;

/// Proposes migration batches until the migration is done; returns how many it proposed.
pub async fn migrate_pass(node: &Core) -> ApiResult<usize> {
    let mut batches = 0;
    loop {
        if progress(&node.engine.read())?.done {
            return Ok(batches);
        }
        if node.raft.cluster_version() < NEEDS_VERSION
            && node.raft.raise_cluster_version().await.ok() < Some(NEEDS_VERSION)
        {
            return Ok(batches);
        }
        node.propose(Command::MigrateDerivedUserIds { batch: MAX_BATCH }).await?;
        batches += 1;
        if !node.raft.is_leader() {
            return Ok(batches);
        }
    }
}

#[cfg(test)]
#[path = "derived_ids_tests.rs"]
mod tests;
