//! Reclaiming API keys (spec, "States and transitions": a revoked key keeps its tombstone,
//! "later physical reclamation by a background job"): on the leader, keys revoked more
//! than `[api_keys] tombstone_retention_days` ago are deleted with their
//! secret-hash index entry, in bounded batches. Until then a revoked key stays visible (with
//! `revoked_at` and `revoked_by`) for whoever audits it.

use crate::context::Core;
use crate::http::error::ApiResult;
use crate::state::api_keys::ApiKeyCommand;
use crate::state::reply::ReclaimedKeys;

const DAY: i64 = 86_400;
const BATCH: u32 = 100;

pub async fn reclaim_pass(node: &Core, now: i64) -> ApiResult<usize> {
    let revoked_before = now - node.cfg.scim.api_key_tombstone_retention_days * DAY;
    let mut total = 0;
    loop {
        let cmd = ApiKeyCommand::Reclaim { revoked_before, limit: BATCH };
        let ReclaimedKeys(gone) = node.propose_as(cmd).await?;
        total += gone.len();
        if gone.len() < BATCH as usize || !node.raft.is_leader() {
            return Ok(total);
        }
    }
}
