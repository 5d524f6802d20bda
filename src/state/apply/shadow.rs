//! The shadow registry's invariants: one record per id and workload, created enabled, a
//! later authentication refreshes and re-enables it without touching `is_system` or
//! `created_at`, only enabled records are disabled (for inactivity) and only disabled ones
//! deleted (after the retention), and each record has exactly one lifecycle index entry,
//! moved in the same command that changes it (see `state::shadow`).

use super::super::cf;
use super::super::command::{not_found, Applied, ApplyError, ApplyResult};
use super::super::keys::ns;
use super::super::mapping::keys as mapping_keys;
use super::super::model::{Group, User};
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::super::ruleset::GroupStrategy;
use super::super::shadow::{keys, GroupRequest, ShadowApplied, ShadowCommand, VirtualUserMetadata, MAX_BATCH};
use super::fatal::Fatal;
use super::{expiring, group, identity};

fn done(a: ShadowApplied) -> Result<ApplyResult, Fatal> {
    Ok(Ok(Applied::Shadow(a)))
}

pub fn apply(tx: &mut Tx<'_>, cmd: ShadowCommand) -> Result<ApplyResult, Fatal> {
    match cmd {
        ShadowCommand::Upsert { record, at } => upsert(tx, *record, at),
        ShadowCommand::DisableInactive { before, at, limit } => disable_inactive(tx, before, at, limit),
        ShadowCommand::DeleteArchived { before, limit } => delete_archived(tx, before, limit),
        ShadowCommand::LocalLogin { user, groups } => local_login(tx, *user, groups),
        ShadowCommand::ExpiringLogin { user, groups, idp_id, at, expires_at } => {
            expiring_login(tx, *user, groups, &idp_id, at, expires_at)
        }
    }
}

/// The index entry a record is listed under.
fn index_key(r: &VirtualUserMetadata) -> Vec<u8> {
    match (r.enabled, r.disabled_at) {
        (false, Some(at)) => keys::disabled(at, &r.user_id),
        _ => keys::active(r.last_authenticated_at, &r.user_id),
    }
}

fn store(tx: &mut Tx<'_>, before: Option<&VirtualUserMetadata>, r: &VirtualUserMetadata) -> Result<(), Fatal> {
    if let Some(old) = before {
        tx.delete(cf::SHADOW, index_key(old));
    }
    tx.batch.put(cf::SHADOW, index_key(r), &[]);
    tx.put(cf::SHADOW, keys::record(&r.user_id), r)
}

fn upsert(tx: &mut Tx<'_>, mut record: VirtualUserMetadata, at: i64) -> Result<ApplyResult, Fatal> {
    if record.user_id.is_empty() || record.unique_workload_id.is_empty() {
        return Ok(Err(ApplyError::Invalid("a virtual user needs its user_id and unique_workload_id".into())));
    }
    if tx.get_raw(cf::MAPPINGS, &mapping_keys::ruleset(&record.mapping_id))?.is_none() {
        return Ok(Err(not_found("mapping", &record.mapping_id)));
    }
    let before = tx.get::<VirtualUserMetadata>(cf::SHADOW, &keys::record(&record.user_id))?;
    if let Some(old) = &before {
        if old.unique_workload_id != record.unique_workload_id {
            return Ok(Err(ApplyError::Conflict(format!(
                "Virtual user {} belongs to another workload.",
                record.user_id
            ))));
        }
        record.is_system = old.is_system;
        record.created_at = old.created_at;
        // A command stamped earlier than the last one applied never moves the time back.
        record.last_authenticated_at = old.last_authenticated_at.max(at);
    } else {
        record.created_at = at;
        record.last_authenticated_at = at;
    }
    record.enabled = true;
    record.disabled_at = None;
    store(tx, before.as_ref(), &record)?;
    done(ShadowApplied::Record(Box::new(record)))
}

fn bounded(limit: u32) -> usize {
    (limit as usize).min(MAX_BATCH)
}

fn disable_inactive(tx: &mut Tx<'_>, before: i64, at: i64, limit: u32) -> Result<ApplyResult, Fatal> {
    let due = tx.scan_before(cf::SHADOW, keys::ACTIVE_PREFIX, &keys::active(before, ""), bounded(limit))?;
    let mut ids = Vec::with_capacity(due.len());
    for (index, _) in due {
        let record = match keys::user_id_of(&index) {
            Some(id) => tx.get::<VirtualUserMetadata>(cf::SHADOW, &keys::record(&id))?,
            None => None,
        };
        let Some(old) = record else {
            // An entry without its record cannot be (apply writes both); drop it all the same.
            tx.delete(cf::SHADOW, index);
            continue;
        };
        let mut r = old.clone();
        r.enabled = false;
        r.disabled_at = Some(at);
        store(tx, Some(&old), &r)?;
        ids.push(r.user_id);
    }
    done(ShadowApplied::Disabled(ids))
}

fn delete_archived(tx: &mut Tx<'_>, before: i64, limit: u32) -> Result<ApplyResult, Fatal> {
    let due = tx.scan_before(cf::SHADOW, keys::DISABLED_PREFIX, &keys::disabled(before, ""), bounded(limit))?;
    let mut deleted = Vec::with_capacity(due.len());
    for (index, _) in due {
        if let Some(id) = keys::user_id_of(&index) {
            let key = keys::record(&id);
            if let Some(r) = tx.get::<VirtualUserMetadata>(cf::SHADOW, &key)? {
                tx.delete(cf::SHADOW, key);
                deleted.push(r);
            }
        }
        tx.delete(cf::SHADOW, index);
    }
    done(ShadowApplied::Deleted(deleted))
}

#[cfg(test)]
#[path = "shadow_tests.rs"]
mod tests;

fn detailed(status: u16, key: &str, message: String) -> ApplyError {
    ApplyError::Detailed { status, key: key.into(), message }
}

/// The group a binding names, created when `create_or_get` and missing.
fn resolve_group(tx: &mut Tx<'_>, g: &GroupRequest) -> Result<Result<String, ApplyError>, Fatal> {
    let found = match &g.group_id {
        Some(id) => tx.group(id)?.map(|g| g.id),
        None => tx.id_by_name(ns::GROUP_NAME, &g.domain_id, &g.name)?,
    };
    if let Some(id) = found {
        return Ok(Ok(id));
    }
    if g.strategy == GroupStrategy::Get {
        return Ok(Err(detailed(403, "group_not_found", format!("Group {:?} does not exist.", g.name))));
    }
    let created = Group {
        id: g.group_id.clone().unwrap_or_else(|| g.new_id.clone()),
        name: g.name.clone(),
        domain_id: g.domain_id.clone(),
        description: None,
        extra: "{}".into(),
    };
    Ok(match group::create(tx, created)? {
        Ok(_) => Ok(g.group_id.clone().unwrap_or_else(|| g.new_id.clone())),
        Err(e) => Err(e),
    })
}

/// The user a `local` login names, created when its id is free, and the ids of the groups
/// it binds (resolved or created), each once.
fn user_and_groups(
    tx: &mut Tx<'_>,
    user: User,
    groups: &[GroupRequest],
) -> Result<Result<(User, Vec<String>), ApplyError>, Fatal> {
    let user = match tx.user(&user.id)? {
        Some(stored) => stored,
        None => match identity::create(tx, user.clone())? {
            Ok(_) => user,
            Err(ApplyError::Conflict(_)) => {
                return Ok(Err(detailed(
                    409,
                    "shadow_registry_conflict",
                    format!("The name {:?} is taken by another user of the domain.", user.name),
                )))
            }
            Err(e) => return Ok(Err(e)),
        },
    };
    let mut wanted = Vec::with_capacity(groups.len());
    for g in groups {
        match resolve_group(tx, g)? {
            Ok(id) if !wanted.contains(&id) => wanted.push(id),
            Ok(_) => {}
            Err(e) => return Ok(Err(e)),
        }
    }
    Ok(Ok((user, wanted)))
}

/// Makes the user's permanent synced memberships exactly `wanted`: joins what is missing and
/// leaves what the previous sync joined and is no longer bound.
fn sync_permanent(tx: &mut Tx<'_>, user_id: &str, wanted: &[String]) -> Result<Result<(), ApplyError>, Fatal> {
    let key = keys::synced_groups(user_id);
    let before: Vec<String> = tx.get(cf::SHADOW, &key)?.unwrap_or_default();
    for gid in wanted {
        if !tx.is_member(gid, user_id)? {
            if let Err(e) = group::add_member(tx, gid, user_id)? {
                return Ok(Err(e));
            }
        }
    }
    for gid in before.iter().filter(|g| !wanted.contains(*g)) {
        if tx.group(gid)?.is_some() && tx.is_member(gid, user_id)? {
            if let Err(e) = group::remove_member(tx, gid, user_id)? {
                return Ok(Err(e));
            }
        }
    }
    if before != wanted {
        tx.put(cf::SHADOW, key, &wanted)?;
    }
    Ok(Ok(()))
}

fn local_login(tx: &mut Tx<'_>, user: User, groups: Vec<GroupRequest>) -> Result<ApplyResult, Fatal> {
    let (user, wanted) = match user_and_groups(tx, user, &groups)? {
        Ok(found) => found,
        Err(e) => return Ok(Err(e)),
    };
    if let Err(e) = sync_permanent(tx, &user.id, &wanted)? {
        return Ok(Err(e));
    }
    // A permanent sync replaces what an earlier ruleset with a TTL granted.
    expiring::remove_of_user(tx, &user.id)?;
    Ok(Ok(Applied::User(user)))
}

/// As `local_login`, but the groups are granted as expiring memberships, and what a
/// permanent sync granted before is left (the sync to nothing).
fn expiring_login(
    tx: &mut Tx<'_>,
    user: User,
    groups: Vec<GroupRequest>,
    idp_id: &str,
    at: i64,
    expires_at: i64,
) -> Result<ApplyResult, Fatal> {
    if expires_at <= at {
        return Ok(Err(ApplyError::Invalid("an expiring membership must end after it is verified".into())));
    }
    let (user, wanted) = match user_and_groups(tx, user, &groups)? {
        Ok(found) => found,
        Err(e) => return Ok(Err(e)),
    };
    if let Err(e) = sync_permanent(tx, &user.id, &[])? {
        return Ok(Err(e));
    }
    expiring::login(tx, &user.id, &wanted, idp_id, at, expires_at)?;
    Ok(Ok(Applied::User(user)))
}
