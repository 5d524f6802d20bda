//! Groups and group membership.

use super::super::cf;
use super::super::command::{not_found, Applied, ApplyError, ApplyResult};
use super::super::keys::{self, ns};
use super::super::model::{ActorKind, Group, Membership};
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::fatal::Fatal;
use super::{assignment, expiring, scim_ownership};

fn conflict(name: &str) -> ApplyError {
    ApplyError::Conflict(format!(
        "Conflict occurred attempting to store group - Duplicate entry found with name {name} at domain ID."
    ))
}

pub fn create(tx: &mut Tx<'_>, g: Group) -> Result<ApplyResult, Fatal> {
    if tx.group(&g.id)?.is_some() {
        return Ok(Err(ApplyError::Conflict(format!(
            "Conflict occurred attempting to store group - Duplicate ID, {}.",
            g.id
        ))));
    }
    if tx.domain(&g.domain_id)?.is_none() {
        return Ok(Err(not_found("domain", &g.domain_id)));
    }
    if tx.id_by_name(ns::GROUP_NAME, &g.domain_id, &g.name)?.is_some() {
        return Ok(Err(conflict(&g.name)));
    }
    tx.put_name(ns::GROUP_NAME, &g.domain_id, &g.name, &g.id);
    tx.add_member(ns::GROUPS_OF_DOMAIN, &g.domain_id, &g.id);
    tx.put(cf::GROUPS, keys::group(&g.id), &g)?;
    Ok(Ok(Applied::Group(g)))
}

/// `domain_id` is immutable; the rest is replaced.
pub fn update(tx: &mut Tx<'_>, mut g: Group) -> Result<ApplyResult, Fatal> {
    let Some(old) = tx.group(&g.id)? else {
        return Ok(Err(not_found("group", &g.id)));
    };
    g.domain_id = old.domain_id.clone();
    if g.name.to_lowercase() != old.name.to_lowercase()
        && tx.id_by_name(ns::GROUP_NAME, &g.domain_id, &g.name)?.is_some()
    {
        return Ok(Err(conflict(&g.name)));
    }
    tx.delete_name(ns::GROUP_NAME, &old.domain_id, &old.name);
    tx.put_name(ns::GROUP_NAME, &g.domain_id, &g.name, &g.id);
    tx.put(cf::GROUPS, keys::group(&g.id), &g)?;
    Ok(Ok(Applied::Group(g)))
}

pub fn delete(tx: &mut Tx<'_>, id: &str) -> Result<ApplyResult, Fatal> {
    let Some(g) = tx.group(id)? else {
        return Ok(Err(not_found("group", id)));
    };
    remove_group(tx, &g)?;
    Ok(Ok(Applied::Done))
}

/// Removes a group with its name index entries, memberships and role assignments.
pub fn remove_group(tx: &mut Tx<'_>, g: &Group) -> Result<(), Fatal> {
    assignment::remove_for_actor(tx, ActorKind::Group, &g.id)?;
    let members: Vec<Membership> = tx.scan(cf::GROUPS, &keys::members_prefix(&g.id))?;
    for m in &members {
        unlink(tx, m);
    }
    expiring::remove_of_group(tx, &g.id)?;
    tx.delete_name(ns::GROUP_NAME, &g.domain_id, &g.name);
    tx.remove_member(ns::GROUPS_OF_DOMAIN, &g.domain_id, &g.id);
    tx.delete(cf::GROUPS, keys::group(&g.id));
    scim_ownership::forget(tx, super::super::scim::Kind::Group, &g.id)?;
    Ok(())
}

/// A domain's groups go with the domain.
pub fn remove_groups_of_domain(tx: &mut Tx<'_>, domain_id: &str) -> Result<(), Fatal> {
    for gid in tx.member_ids(ns::GROUPS_OF_DOMAIN, domain_id)? {
        if let Some(g) = tx.group(&gid)? {
            remove_group(tx, &g)?;
        }
    }
    Ok(())
}

/// Drops every membership of a user (the user is going away).
pub fn remove_memberships_of_user(tx: &mut Tx<'_>, user_id: &str) -> Result<(), Fatal> {
    let found: Vec<Membership> = tx.scan(cf::GROUPS, &keys::user_groups_prefix(user_id))?;
    for m in &found {
        unlink(tx, m);
    }
    expiring::remove_of_user(tx, user_id)
}

fn unlink(tx: &mut Tx<'_>, m: &Membership) {
    tx.delete(cf::GROUPS, keys::member(&m.group_id, &m.user_id));
    tx.delete(cf::GROUPS, keys::user_group(&m.user_id, &m.group_id));
}

/// Both ends must exist; adding an existing membership is a no-op (Keystone answers 204).
pub fn add_member(tx: &mut Tx<'_>, group_id: &str, user_id: &str) -> Result<ApplyResult, Fatal> {
    if tx.group(group_id)?.is_none() {
        return Ok(Err(not_found("group", group_id)));
    }
    if tx.user(user_id)?.is_none() {
        return Ok(Err(not_found("user", user_id)));
    }
    let m = Membership { group_id: group_id.to_string(), user_id: user_id.to_string() };
    tx.put(cf::GROUPS, keys::member(group_id, user_id), &m)?;
    tx.put(cf::GROUPS, keys::user_group(user_id, group_id), &m)?;
    Ok(Ok(Applied::Done))
}

pub fn remove_member(tx: &mut Tx<'_>, group_id: &str, user_id: &str) -> Result<ApplyResult, Fatal> {
    if tx.group(group_id)?.is_none() {
        return Ok(Err(not_found("group", group_id)));
    }
    if tx.user(user_id)?.is_none() {
        return Ok(Err(not_found("user", user_id)));
    }
    if !tx.is_member(group_id, user_id)? {
        return Ok(Err(ApplyError::NotFound {
            kind: "membership".into(),
            id: format!("user {user_id} in group {group_id}"),
        }));
    }
    unlink(tx, &Membership { group_id: group_id.to_string(), user_id: user_id.to_string() });
    Ok(Ok(Applied::Done))
}
