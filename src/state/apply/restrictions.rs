//! Token restrictions' invariants: an id belongs to one restriction of one domain for good;
//! what a restriction names exists and belongs to its domain (its user and project are of the
//! domain, its roles global or the domain's own); and it never outlives what it names (a
//! deleted user, project or domain takes its restrictions along, a deleted role leaves
//! them).

use super::super::cf;
use super::super::command::{not_found, Applied, ApplyError, ApplyResult};
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::super::restrictions::{keys, RestrictionApplied, RestrictionCommand, TokenRestriction};
use super::fatal::Fatal;

pub fn apply(tx: &mut Tx<'_>, cmd: RestrictionCommand) -> Result<ApplyResult, Fatal> {
    match cmd {
        RestrictionCommand::Put { restriction, create } => put(tx, *restriction, create),
        RestrictionCommand::Delete { id, domain_id } => {
            if of_domain(tx, &id, &domain_id)?.is_none() {
                return Ok(Err(not_found("token restriction", &id)));
            }
            tx.delete(cf::RESTRICTIONS, keys::record(&id));
            Ok(Ok(Applied::Done))
        }
    }
}

fn of_domain(tx: &Tx<'_>, id: &str, domain_id: &str) -> Result<Option<TokenRestriction>, Fatal> {
    Ok(tx.get::<TokenRestriction>(cf::RESTRICTIONS, &keys::record(id))?.filter(|r| r.domain_id == domain_id))
}

fn put(tx: &mut Tx<'_>, r: TokenRestriction, create: bool) -> Result<ApplyResult, Fatal> {
    let exists = tx.get_raw(cf::RESTRICTIONS, &keys::record(&r.id))?.is_some();
    if create && exists {
        return Ok(Err(ApplyError::Conflict(format!("A token restriction with id {} already exists.", r.id))));
    }
    if !create && of_domain(tx, &r.id, &r.domain_id)?.is_none() {
        return Ok(Err(not_found("token restriction", &r.id)));
    }
    if let Err(e) = references(tx, &r)? {
        return Ok(Err(e));
    }
    tx.put(cf::RESTRICTIONS, keys::record(&r.id), &r)?;
    Ok(Ok(Applied::Restrictions(RestrictionApplied::Restriction(Box::new(r)))))
}

/// The records a restriction names, checked in the state it lands in.
fn references(tx: &Tx<'_>, r: &TokenRestriction) -> Result<Result<(), ApplyError>, Fatal> {
    if r.role_ids.is_empty() {
        return Ok(Err(ApplyError::Invalid("A token restriction names at least one role.".into())));
    }
    if !tx.project(&r.domain_id)?.is_some_and(|d| d.is_domain) {
        return Ok(Err(not_found("domain", &r.domain_id)));
    }
    if let Some(uid) = &r.user_id {
        match tx.user(uid)? {
            None => return Ok(Err(not_found("user", uid))),
            Some(u) if u.domain_id != r.domain_id => {
                return Ok(Err(ApplyError::Invalid(format!(
                    "User {uid} is not in the restriction's domain {}.",
                    r.domain_id
                ))))
            }
            Some(_) => {}
        }
    }
    if let Some(pid) = &r.project_id {
        match tx.project(pid)? {
            Some(p) if !p.is_domain && p.domain_id == r.domain_id => {}
            Some(p) if !p.is_domain => {
                return Ok(Err(ApplyError::Invalid(format!(
                    "Project {pid} is not in the restriction's domain {}.",
                    r.domain_id
                ))))
            }
            _ => return Ok(Err(not_found("project", pid))),
        }
    }
    for rid in &r.role_ids {
        match tx.role(rid)? {
            None => return Ok(Err(not_found("role", rid))),
            Some(role) if role.domain_id.as_ref().is_some_and(|d| *d != r.domain_id) => {
                return Ok(Err(ApplyError::Invalid(format!(
                    "Role {rid} belongs to another domain than the restriction's {}.",
                    r.domain_id
                ))))
            }
            Some(_) => {}
        }
    }
    Ok(Ok(()))
}

/// A project (or domain) is going: restrictions bound to it, or owned by it, go too.
pub fn forget_project(tx: &mut Tx<'_>, project_id: &str) -> Result<(), Fatal> {
    forget_where(tx, |r| r.domain_id == project_id || r.project_id.as_deref() == Some(project_id))
}

/// A user is going: restrictions bound to it go too.
pub fn forget_user(tx: &mut Tx<'_>, user_id: &str) -> Result<(), Fatal> {
    forget_where(tx, |r| r.user_id.as_deref() == Some(user_id))
}

/// A role is going: restrictions stop naming it (and keep narrowing to the roles left, none
/// included).
pub fn forget_role(tx: &mut Tx<'_>, role_id: &str) -> Result<(), Fatal> {
    for mut r in tx.scan::<TokenRestriction>(cf::RESTRICTIONS, keys::RECORD_PREFIX)? {
        if r.role_ids.iter().any(|id| id == role_id) {
            r.role_ids.retain(|id| id != role_id);
            tx.put(cf::RESTRICTIONS, keys::record(&r.id), &r)?;
        }
    }
    Ok(())
}

fn forget_where(tx: &mut Tx<'_>, gone: impl Fn(&TokenRestriction) -> bool) -> Result<(), Fatal> {
    for r in tx.scan::<TokenRestriction>(cf::RESTRICTIONS, keys::RECORD_PREFIX)? {
        if gone(&r) {
            tx.delete(cf::RESTRICTIONS, keys::record(&r.id));
        }
    }
    Ok(())
}
