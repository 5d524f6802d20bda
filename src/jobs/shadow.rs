//! The shadow registry's lifecycle (spec, "States and transitions", virtual-user rows):
//! nightly, enabled virtual users not authenticated for `shadow_registry_inactivity_days`
//! are disabled (system ones included); weekly, those disabled for longer than
//! `shadow_registry_archive_retention_days` are deleted, each deletion reported by a
//! maintenance audit event carrying the record's identity (Events item 3).
//!
//! A pass proposes batches of [`BATCH`] until a batch comes back short, so its work per
//! command is bounded however large the registry is. Audit events are emitted by the node
//! that proposed, after the deletion committed: once per cluster. (A leader that dies between
//! commit and emit loses those events; the deletion itself is not repeated.)

use crate::audit::event::{virtual_user_archive_deleted, virtual_user_deactivated, ArchivedIdentity};
use crate::context::Core;
use crate::http::error::ApiResult;
use crate::mapping::model::MappingRuleSet;
use crate::state::mapping::MappingRecord;
use crate::state::read::MappingReads;
use crate::state::reply::DisabledUsers;
use crate::state::shadow::{ShadowCommand, VirtualUserMetadata};

/// Records one command of a pass touches at most.
pub const BATCH: u32 = 100;

const DAY: i64 = 86_400;

/// Disables every enabled virtual user last authenticated more than the inactivity period
/// before `now`; answers how many. Stops early when this node stops leading.
pub async fn deactivate_pass(node: &Core, now: i64) -> ApiResult<usize> {
    let before = now - node.cfg.shadow_registry.inactivity_days * DAY;
    let mut total = 0;
    loop {
        let cmd = ShadowCommand::DisableInactive { before, at: now, limit: BATCH };
        let DisabledUsers(ids) = node.propose_as(cmd).await?;
        for id in &ids {
            node.audit.emit(virtual_user_deactivated(id, node.cfg.shadow_registry.inactivity_days));
        }
        total += ids.len();
        if ids.len() < BATCH as usize || !node.raft.is_leader() {
            return Ok(total);
        }
    }
}

/// Deletes every virtual user disabled more than the retention before `now`, emitting one
/// audit event per deleted record; answers how many.
pub async fn archive_cleanup_pass(node: &Core, now: i64) -> ApiResult<usize> {
    let before = now - node.cfg.shadow_registry.archive_retention_days * DAY;
    let mut total = 0;
    loop {
        let cmd = ShadowCommand::DeleteArchived { before, limit: BATCH };
        let deleted: Vec<VirtualUserMetadata> = node.propose_as(cmd).await?;
        for r in &deleted {
            emit_deleted(node, r);
        }
        total += deleted.len();
        if deleted.len() < BATCH as usize || !node.raft.is_leader() {
            return Ok(total);
        }
    }
}

fn emit_deleted(node: &Core, r: &VirtualUserMetadata) {
    let disabled_at = r.disabled_at.map(rfc3339);
    let last = rfc3339(r.last_authenticated_at);
    let provider_id = provider_of(node, &r.mapping_id).unwrap_or_default();
    node.audit.emit(virtual_user_archive_deleted(&ArchivedIdentity {
        user_id: &r.user_id,
        user_name: &r.resolved_user_name,
        domain_id: r.domain_id.as_deref(),
        provider_id: &provider_id,
        mapping_id: &r.mapping_id,
        unique_workload_id: &r.unique_workload_id,
        disabled_at: disabled_at.as_deref(),
        last_authenticated_at: Some(&last),
    }));
}

/// The provider of the record's mapping, while the mapping exists (the record keeps only
/// the mapping id; a deleted mapping leaves the provider unknown, reported as empty).
fn provider_of(node: &Core, mapping_id: &str) -> Option<String> {
    let record: MappingRecord = node.engine.read().mapping_record(mapping_id).ok()??;
    MappingRuleSet::from_stored(&record.ruleset).ok().map(|rs| rs.provider_id)
}

fn rfc3339(t: i64) -> String {
    crate::token::render::iso_seconds(t)
}

#[cfg(test)]
#[path = "shadow_tests.rs"]
mod tests;
