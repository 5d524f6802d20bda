//! Every SCIM write goes through [`submit`]: the realm's write quota (`[keystone]
//! scim_realm_write_rate_limit`, per provider across the cluster: 429 over this member's
//! share), one raft command (apply decides uniqueness, ownership, `If-Match` and membership, so what it refuses wrote
//! nothing), and one audit event (spec, Events item 1) with the key's `client_id` as the
//! initiator. A deprovisioning answers only once every reachable member applied it: the
//! user's tokens are refused everywhere the moment DELETE returns.

use super::caller::ScimCaller;
use super::state::Scim;
use super::wire::ScimResult;
use crate::audit::event::{scim_write, Action, Outcome, ScimInitiator, ScimWrite};
use crate::context::Core;
use crate::state::scim::{Kind, ScimCommand, ScimResourceIndex};

pub async fn submit(
    node: &Core,
    scim: &Scim,
    caller: &ScimCaller,
    kind: Kind,
    action: Action,
    cmd: ScimCommand,
) -> ScimResult<ScimResourceIndex> {
    scim.write_limit.check(&*node.raft, &caller.realm.provider_id).await?;
    let id = match &cmd {
        ScimCommand::PutUser { id, .. }
        | ScimCommand::PutGroup { id, .. }
        | ScimCommand::Deprovision { id, .. }
        | ScimCommand::Purge { id, .. } => id.clone(),
        ScimCommand::PutRealm { .. } => String::new(),
    };
    let (index, outcome) = node.propose_outcome::<ScimResourceIndex>(cmd).await?;
    let event = |outcome, external_id: Option<&str>| {
        scim_write(&ScimWrite {
            action,
            kind,
            resource_id: &id,
            realm_provider_id: &caller.realm.provider_id,
            external_id,
            initiator: ScimInitiator::ApiKey(&caller.key.client_id),
            outcome,
        })
    };
    match outcome {
        Ok(idx) => {
            if action == Action::Disable {
                node.wait_cluster_applied(index).await;
            }
            node.audit.emit(event(Outcome::Success, idx.external_id.as_deref()));
            Ok(idx)
        }
        Err(refused) => {
            node.audit.emit(event(Outcome::Failure, None));
            Err(refused.into())
        }
    }
}
