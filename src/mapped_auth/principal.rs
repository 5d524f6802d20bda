//! The principal a matched rule resolves to, written through raft only when something
//! changed: a login that finds its user (or virtual user) as the last one left it writes
//! nothing, so repeated logins cost no consensus round (a virtual user's
//! `last_authenticated_at` is refreshed at most every [`REFRESH_S`]: the inactivity job
//! counts in days).

use super::login::External;
use super::rulesets::Live;
use super::state::MappedAuth;
use crate::clock::now_micros;
use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::mapping::engine::Matched;
use crate::mapping::model::GroupStrategy;
use crate::mapping::MappingError;
use crate::state::derived_ids::resolve_derived_user;
use crate::state::keys::ns;
use crate::state::model::{FederatedIdentity, FederatedProtocol, Group, User};
use crate::state::read::{IdentityReads, ShadowReads};
use crate::state::shadow::{virtual_user_id, GroupRequest, ResolvedGroupBinding, ShadowCommand, VirtualUserMetadata};
use crate::state::{Command, Reader};

/// Seconds between refreshes of an unchanged virtual user's `last_authenticated_at`.
pub const REFRESH_S: i64 = 3600;
/// The longest user id a rule's `user_id` template may produce (Keystone's id column).
const MAX_USER_ID: usize = 64;
/// Attempts at a shadow write that raced another login of the same principal.
const ATTEMPTS: usize = 3;

fn conflict() -> ApiError {
    MappingError::new(409, "shadow_registry_conflict", "The principal could not be recorded; try again.").into()
}

/// The `protocol_id` under which a mapped user's federated identity is listed.
pub const PROTOCOL: &str = "mapped";

fn group_requests(m: &Matched) -> Vec<GroupRequest> {
    m.groups
        .iter()
        .map(|g| GroupRequest {
            group_id: g.group_id.clone(),
            name: g.group_name.clone(),
            domain_id: g.group_domain_id.clone(),
            strategy: g.strategy,
            new_id: uuid::Uuid::new_v4().simple().to_string(),
        })
        .collect()
}

/// The group a binding names, if it exists (nothing is created here).
fn find_group(view: &impl Reader, g: &GroupRequest) -> idnode_storage::Result<Option<String>> {
    Ok(match &g.group_id {
        Some(id) => view.group(id)?.map(|g| g.id),
        None => view.id_by_name(ns::GROUP_NAME, &g.domain_id, &g.name)?,
    })
}

/// How long the memberships a `local` login grants last, in microseconds: the ruleset's
/// `authorization_ttl`, else the node's `[federation] default_authorization_ttl` (minutes, 0
/// or absent skipped as Keystone does); `None`: they are synced for good.
fn membership_ttl(mapped: &MappedAuth, live: &Live) -> Option<i64> {
    let minutes = live.rs.authorization_ttl.filter(|m| *m > 0).unwrap_or(mapped.default_authorization_ttl);
    (minutes > 0).then(|| i64::from(minutes) * 60_000_000)
}

/// How much sooner than a fresh login would say an expiring membership may end and still be
/// left as it is: a tenth of the TTL, at most [`REFRESH_S`], so repeated logins cost no
/// consensus round each.
fn refresh_slack(ttl: i64) -> i64 {
    (ttl / 10).min(REFRESH_S * 1_000_000)
}

/// Whether the user's memberships already say what this login would write: with a TTL, an
/// expiring membership through this provider of exactly each wanted group, ending within the
/// slack before what this login would say (never after it: a shortened TTL is written), and
/// no permanent sync left; without, the permanent sync of exactly those groups and no
/// expiring membership.
fn memberships_current(
    view: &impl Reader,
    user_id: &str,
    idp_id: &str,
    wanted: &[String],
    ttl: Option<i64>,
    now: i64,
) -> idnode_storage::Result<bool> {
    let synced: Vec<String> = view.synced_groups(user_id)?;
    let expiring = view.expiring_memberships_of_user(user_id)?;
    Ok(match ttl {
        None => {
            if !expiring.is_empty() || synced != wanted {
                return Ok(false);
            }
            for g in wanted {
                if !view.is_member(g, user_id)? {
                    return Ok(false);
                }
            }
            true
        }
        Some(ttl) => {
            let ours: Vec<_> = expiring.iter().filter(|m| m.idp_id == idp_id).collect();
            synced.is_empty()
                && ours.len() == wanted.len()
                && wanted.iter().all(|g| {
                    ours.iter().any(|m| {
                        m.group_id == *g && (now + ttl - refresh_slack(ttl)..=now + ttl).contains(&m.expires_at)
                    })
                })
        }
    })
}

/// `local`: the real user the rule names (its `user_id` template, else the id derived from
/// the user's domain, this provider and the identity, so two providers whose subjects collide
/// never share a user), created on first login, with its groups synced (for good, or as
/// expiring memberships when the ruleset has a TTL). An existing user is taken only if this
/// provider made it (`confine::local_user`).
pub async fn local(node: &Core, mapped: &MappedAuth, live: &Live, m: &Matched, ext: &External) -> ApiResult<User> {
    let id = m.identity.user_id.clone().map_or_else(
        || resolve_derived_user(&node.engine.read(), &m.identity.user_domain_id, &ext.provider.id, &ext.workload),
        Ok,
    )?;
    if id.is_empty() || id.len() > MAX_USER_ID || id.contains('/') {
        return Err(ApiError::unauthorized("The mapped user id is not a valid user id."));
    }
    let groups = group_requests(m);
    let ttl = membership_ttl(mapped, live);
    let now = now_micros();
    let existing = {
        let view = node.engine.read();
        match view.user(&id)? {
            Some(u) => {
                if !u.enabled {
                    return Err(ApiError::unauthorized("The mapped user is disabled."));
                }
                super::confine::local_user(&view, &u, &m.identity.user_domain_id, &ext.provider)?;
                let mut wanted = Vec::new();
                let mut all_found = true;
                for g in &groups {
                    match find_group(&view, g)? {
                        Some(gid) if !wanted.contains(&gid) => wanted.push(gid),
                        Some(_) => {}
                        None => all_found = false,
                    }
                }
                if all_found && memberships_current(&view, &u.id, &ext.provider.id, &wanted, ttl, now)? {
                    return Ok(u);
                }
                Some(u)
            }
            None => None,
        }
    };
    if existing.is_none() {
        mapped.creation_limit.check(&*node.raft, &ext.provider.id).await?;
    }
    let user = User {
        id,
        name: m.identity.user_name.clone(),
        domain_id: m.identity.user_domain_id.clone(),
        enabled: true,
        password_hash: None,
        default_project_id: None,
        password_expires_at: None,
        extra: "{}".into(),
        options: "{}".into(),
        created_at: now,
        tokens_valid_after: 0,
        federated: vec![FederatedIdentity {
            idp_id: ext.provider.id.clone(),
            protocols: vec![FederatedProtocol { protocol_id: PROTOCOL.into(), unique_id: ext.workload.clone() }],
        }],
    };
    let user = Box::new(user);
    let cmd = Command::Shadow(match ttl {
        None => ShadowCommand::LocalLogin { user, groups },
        Some(ttl) => ShadowCommand::ExpiringLogin {
            user,
            groups,
            idp_id: ext.provider.id.clone(),
            at: now,
            expires_at: now + ttl,
        },
    });
    let u: User = node.propose_as(cmd).await?;
    if !u.enabled {
        return Err(ApiError::unauthorized("The mapped user is disabled."));
    }
    Ok(u)
}

/// Resolves an ephemeral rule's groups: existing ones by id or name; `get` of a missing one
/// is 403 `group_not_found`; `create_or_get` of a missing one yields the command creating it.
fn ephemeral_groups(view: &impl Reader, m: &Matched) -> ApiResult<(Vec<ResolvedGroupBinding>, Vec<Command>)> {
    let mut bindings = Vec::new();
    let mut creates = Vec::new();
    for g in group_requests(m) {
        let id = match find_group(view, &g)? {
            Some(id) => id,
            None if g.strategy == GroupStrategy::Get => {
                return Err(
                    MappingError::new(403, "group_not_found", format!("Group {:?} does not exist.", g.name)).into()
                )
            }
            None => {
                let id = g.group_id.clone().unwrap_or(g.new_id);
                creates.push(Command::CreateGroup(Group {
                    id: id.clone(),
                    name: g.name,
                    domain_id: g.domain_id.clone(),
                    description: None,
                    extra: "{}".into(),
                }));
                id
            }
        };
        if !bindings.iter().any(|b: &ResolvedGroupBinding| b.resolved_group_id == id) {
            bindings.push(ResolvedGroupBinding {
                resolved_group_id: id,
                group_domain_id: g.domain_id,
                strategy: g.strategy,
            });
        }
    }
    Ok((bindings, creates))
}

/// Whether `old` already says everything `new` would (bar the clock).
fn unchanged(old: &VirtualUserMetadata, new: &VirtualUserMetadata, now: i64) -> bool {
    old.enabled
        && old.unique_workload_id == new.unique_workload_id
        && old.mapping_id == new.mapping_id
        && old.matched_rule_name == new.matched_rule_name
        && old.ruleset_version == new.ruleset_version
        && old.domain_id == new.domain_id
        && old.resolved_user_name == new.resolved_user_name
        && old.resolved_group_bindings == new.resolved_group_bindings
        && old.authorizations == new.authorizations
        && now - old.last_authenticated_at < REFRESH_S
}

/// `ephemeral`: the workload's virtual user in the shadow registry, created or refreshed.
pub async fn ephemeral(node: &Core, mapped: &MappedAuth, live: &Live, m: &Matched, ext: &External) -> ApiResult<User> {
    let now = now_micros() / 1_000_000;
    let id = virtual_user_id(&ext.provider.id, &ext.workload);
    let authorizations = VirtualUserMetadata::store_authorizations(&m.authorizations).map_err(ApiError::internal)?;
    for _ in 0..ATTEMPTS {
        let (bindings, creates, existing) = {
            let view = node.engine.read();
            let (bindings, creates) = ephemeral_groups(&view, m)?;
            (bindings, creates, view.virtual_user_record(&id)?)
        };
        let record = VirtualUserMetadata {
            user_id: id.clone(),
            unique_workload_id: ext.workload.clone(),
            mapping_id: live.id.clone(),
            matched_rule_name: m.rule_name.clone(),
            domain_id: Some(m.identity.user_domain_id.clone()),
            resolved_user_name: m.identity.user_name.clone(),
            is_system: m.identity.is_system,
            resolved_group_bindings: bindings,
            authorizations: authorizations.clone(),
            ruleset_version: live.version.clone(),
            enabled: true,
            created_at: now,
            last_authenticated_at: now,
            disabled_at: None,
        };
        match &existing {
            Some(old) if creates.is_empty() && unchanged(old, &record, now) => {
                return Ok(crate::reads::mapped::as_user(old));
            }
            Some(_) => {}
            None => mapped.creation_limit.check(&*node.raft, &ext.provider.id).await?,
        }
        let upsert = Command::Shadow(ShadowCommand::Upsert { record: Box::new(record), at: now });
        let cmd = if creates.is_empty() { upsert } else { Command::All(creates.into_iter().chain([upsert]).collect()) };
        match node.propose_as::<VirtualUserMetadata>(cmd).await {
            Ok(r) => return Ok(crate::reads::mapped::as_user(&r)),
            // Another login created one of the groups first: resolve again.
            Err(e) if e.status == axum::http::StatusCode::CONFLICT => continue,
            Err(e) => return Err(e),
        }
    }
    Err(conflict())
}
