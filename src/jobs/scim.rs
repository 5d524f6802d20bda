//! The SCIM janitor (spec, "States and transitions", SCIM rows): hourly, on the leader,
//! every user or group deprovisioned longer ago than `[scim_resource]
//! janitor_deprovisioned_retention_days` is hard-deleted, one raft command per item (the
//! resource, its ownership record and its name and `externalId` index entries go together),
//! each reported by a `delete` audit event with the service as initiator. An item that fails
//! is left for the next pass; apply re-checks the retention, so a stale worklist cannot purge
//! anything early.

use crate::audit::event::{scim_write, Action, Outcome, ScimInitiator, ScimWrite};
use crate::context::Core;
use crate::http::error::ApiResult;
use crate::openfga::forget::{forget_in, Gone};
use crate::state::read::ScimReads;
use crate::state::scim::{RealmRef, ScimCommand, ScimResourceIndex};

const DAY: i64 = 86_400;

/// Purges what is due at `now` (unix seconds); answers how many were purged.
pub async fn janitor_pass(node: &Core, now: i64) -> ApiResult<usize> {
    let cutoff = now - node.cfg.scim.retention_days * DAY;
    let due: Vec<ScimResourceIndex> = node.engine.read().scim_deprovisioned_by(cutoff)?;
    let mut purged = 0;
    for idx in due {
        if !node.raft.is_leader() {
            break;
        }
        let gone = Gone::of_scim_purge(&node.engine.read(), idx.kind, &idx.keystone_id)?;
        if let Err(e) = forget_in(node.fga.as_deref(), gone).await {
            tracing::warn!(id = %idx.keystone_id, "SCIM purge left for the next pass: {}", e.message);
            continue;
        }
        let realm = RealmRef { domain_id: idx.domain_id.clone(), provider_id: idx.provider_id.clone() };
        let cmd =
            ScimCommand::Purge { realm, kind: idx.kind, id: idx.keystone_id.clone(), deprovisioned_by: Some(cutoff) };
        match node.propose_as::<ScimResourceIndex>(cmd).await {
            Ok(gone) => {
                node.audit.emit(scim_write(&ScimWrite {
                    action: Action::Delete,
                    kind: gone.kind,
                    resource_id: &gone.keystone_id,
                    realm_provider_id: &gone.provider_id,
                    external_id: gone.external_id.as_deref(),
                    initiator: ScimInitiator::Janitor,
                    outcome: Outcome::Success,
                }));
                purged += 1;
            }
            Err(e) => tracing::warn!(id = %idx.keystone_id, "SCIM purge left for the next pass: {}", e.message),
        }
    }
    Ok(purged)
}
