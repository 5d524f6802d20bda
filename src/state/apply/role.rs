//! Roles and role implication rules.

use std::collections::{BTreeMap, BTreeSet};

use super::super::cf;
use super::super::command::{not_found, Applied, ApplyError, ApplyResult};
use super::super::keys::{self, ns};
use super::super::model::Role;
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::assignment;
use super::fatal::Fatal;

/// Keystone's `[assignment] prohibited_implied_role` default: nobody becomes admin by
/// implication, only by an explicit grant.
const PROHIBITED_IMPLIED: &[&str] = &["admin"];

/// Global role names share one namespace; a domain-specific role's name is unique within its
/// domain.
fn name_scope(r: &Role) -> &str {
    r.domain_id.as_deref().unwrap_or("")
}

fn conflict(name: &str) -> ApplyError {
    ApplyError::Conflict(format!(
        "Conflict occurred attempting to store role - Duplicate entry found with name {name}."
    ))
}

pub fn create(tx: &mut Tx<'_>, r: Role) -> Result<ApplyResult, Fatal> {
    if tx.role(&r.id)?.is_some() {
        return Ok(Err(ApplyError::Conflict(format!(
            "Conflict occurred attempting to store role - Duplicate ID, {}.",
            r.id
        ))));
    }
    if let Some(d) = &r.domain_id {
        if tx.domain(d)?.is_none() {
            return Ok(Err(not_found("domain", d)));
        }
    }
    if tx.id_by_name(ns::ROLE_NAME, name_scope(&r), &r.name)?.is_some() {
        return Ok(Err(conflict(&r.name)));
    }
    tx.put_name(ns::ROLE_NAME, name_scope(&r), &r.name, &r.id);
    tx.put(cf::ROLES, keys::role(&r.id), &r)?;
    Ok(Ok(Applied::Role(r)))
}

/// `domain_id` is immutable; the rest is replaced.
pub fn update(tx: &mut Tx<'_>, mut r: Role) -> Result<ApplyResult, Fatal> {
    let Some(old) = tx.role(&r.id)? else {
        return Ok(Err(not_found("role", &r.id)));
    };
    r.domain_id = old.domain_id.clone();
    if r.name.to_lowercase() != old.name.to_lowercase()
        && tx.id_by_name(ns::ROLE_NAME, name_scope(&r), &r.name)?.is_some()
    {
        return Ok(Err(conflict(&r.name)));
    }
    tx.delete_name(ns::ROLE_NAME, name_scope(&old), &old.name);
    tx.put_name(ns::ROLE_NAME, name_scope(&r), &r.name, &r.id);
    tx.put(cf::ROLES, keys::role(&r.id), &r)?;
    Ok(Ok(Applied::Role(r)))
}

pub fn delete(tx: &mut Tx<'_>, id: &str) -> Result<ApplyResult, Fatal> {
    let Some(r) = tx.role(id)? else {
        return Ok(Err(not_found("role", id)));
    };
    remove_role(tx, &r)?;
    Ok(Ok(Applied::Done))
}

/// Removes a role with its grants, its implication rules (either side) and its name.
pub fn remove_role(tx: &mut Tx<'_>, r: &Role) -> Result<(), Fatal> {
    assignment::remove_for_role(tx, &r.id)?;
    super::restrictions::forget_role(tx, &r.id)?;
    for (prior, implied) in tx.implied_rules()? {
        if prior == r.id || implied == r.id {
            tx.delete(cf::ROLES, keys::implied(&prior, &implied));
        }
    }
    tx.delete_name(ns::ROLE_NAME, name_scope(r), &r.name);
    tx.delete(cf::ROLES, keys::role(&r.id));
    Ok(())
}

/// Domain-specific roles go with their domain, with their grants and implication rules.
pub fn remove_roles_of_domain(tx: &mut Tx<'_>, domain_id: &str) -> Result<(), Fatal> {
    let roles: Vec<Role> = tx.scan(cf::ROLES, keys::ROLE_PREFIX)?;
    for r in roles.iter().filter(|r| r.domain_id.as_deref() == Some(domain_id)) {
        remove_role(tx, r)?;
    }
    Ok(())
}

/// Adds `prior` implies `implied`. Refused when a role is missing (404), when the implied
/// role is prohibited or a global role would imply a domain-specific one (403, Keystone's
/// `InvalidImpliedRole`), when the rule exists (409), or when it would close a cycle in the
/// implication graph (403).
pub fn create_implied(tx: &mut Tx<'_>, prior_id: &str, implied_id: &str) -> Result<ApplyResult, Fatal> {
    let Some(prior) = tx.role(prior_id)? else {
        return Ok(Err(not_found("role", prior_id)));
    };
    let Some(implied) = tx.role(implied_id)? else {
        return Ok(Err(not_found("role", implied_id)));
    };
    if PROHIBITED_IMPLIED.contains(&implied.name.as_str()) {
        return Ok(Err(ApplyError::Forbidden(format!("{implied_id} cannot be an implied roles."))));
    }
    if prior.domain_id.is_none() && implied.domain_id.is_some() {
        return Ok(Err(ApplyError::Forbidden("Global role cannot imply a domain-specific role".into())));
    }
    if tx.implied_rule_exists(prior_id, implied_id)? {
        return Ok(Err(ApplyError::Conflict(format!(
            "Conflict occurred attempting to store implied_role - {prior_id} already implies {implied_id}."
        ))));
    }
    let mut graph: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (p, i) in tx.implied_rules()? {
        graph.entry(p).or_default().push(i);
    }
    if reaches(&graph, implied_id, prior_id) {
        return Ok(Err(ApplyError::Forbidden(format!(
            "{implied_id} cannot be implied by {prior_id}: the rule would create a cycle of implied roles."
        ))));
    }
    tx.put(cf::ROLES, keys::implied(prior_id, implied_id), &(prior_id.to_string(), implied_id.to_string()))?;
    Ok(Ok(Applied::Done))
}

/// Whether `to` is reachable from `from` (including `from == to`).
fn reaches(graph: &BTreeMap<String, Vec<String>>, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_string()];
    while let Some(n) = stack.pop() {
        if n == to {
            return true;
        }
        if seen.insert(n.clone()) {
            stack.extend(graph.get(&n).into_iter().flatten().cloned());
        }
    }
    false
}

pub fn delete_implied(tx: &mut Tx<'_>, prior_id: &str, implied_id: &str) -> Result<ApplyResult, Fatal> {
    for id in [prior_id, implied_id] {
        if tx.role(id)?.is_none() {
            return Ok(Err(not_found("role", id)));
        }
    }
    if !tx.implied_rule_exists(prior_id, implied_id)? {
        return Ok(Err(ApplyError::NotFound {
            kind: "implied role".into(),
            id: format!("{prior_id} does not imply {implied_id}"),
        }));
    }
    tx.delete(cf::ROLES, keys::implied(prior_id, implied_id));
    Ok(Ok(Applied::Done))
}
