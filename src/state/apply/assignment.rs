//! Role assignments (grants) and their cascades.

use super::super::cf;
use super::super::command::{grant_not_found, not_found, Applied, ApplyError, ApplyResult};
use super::super::keys::{self, assignment_keys};
use super::super::model::{ActorKind, Assignment, Target};
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::fatal::Fatal;

pub fn put(tx: &mut Tx<'_>, a: &Assignment) -> Result<(), Fatal> {
    for k in assignment_keys(a) {
        tx.put(cf::ASSIGNMENTS, k, a)?;
    }
    Ok(())
}

pub fn remove(tx: &mut Tx<'_>, a: &Assignment) {
    for k in assignment_keys(a) {
        tx.delete(cf::ASSIGNMENTS, k);
    }
}

fn remove_all(tx: &mut Tx<'_>, prefix: &[u8]) -> Result<(), Fatal> {
    let found: Vec<Assignment> = tx.scan(cf::ASSIGNMENTS, prefix)?;
    for a in &found {
        remove(tx, a);
    }
    Ok(())
}

pub fn remove_for_actor(tx: &mut Tx<'_>, kind: ActorKind, id: &str) -> Result<(), Fatal> {
    remove_all(tx, &keys::by_actor_prefix(kind, id))
}

pub fn remove_for_target(tx: &mut Tx<'_>, t: &Target) -> Result<(), Fatal> {
    remove_all(tx, &keys::by_target_prefix(t))
}

pub fn remove_for_role(tx: &mut Tx<'_>, role_id: &str) -> Result<(), Fatal> {
    remove_all(tx, &keys::by_role_prefix(role_id))
}

/// Records a grant once its role, actor and target exist. A domain-specific role is only
/// granted on projects of its domain (Keystone's `DomainSpecificRoleMismatch`, 403) and never
/// on the system (400); only domains and projects pass grants on to projects (OS-INHERIT).
/// Granting twice is a no-op.
pub fn create_grant(tx: &mut Tx<'_>, a: Assignment) -> Result<ApplyResult, Fatal> {
    if let Some(refusal) = check_refs(tx, &a)? {
        return Ok(Err(refusal));
    }
    if a.inherited && a.target == Target::System {
        return Ok(Err(ApplyError::Invalid("Only domains and projects pass roles on to projects.".into())));
    }
    let Some(role) = tx.role(&a.role_id)? else {
        return Ok(Err(not_found("role", &a.role_id)));
    };
    if let Some(role_domain) = &role.domain_id {
        match &a.target {
            Target::Project(pid) => {
                if tx.project(pid)?.is_some_and(|p| &p.domain_id != role_domain) {
                    return Ok(Err(ApplyError::Forbidden(format!(
                        "Project {pid} must be in the same domain as the role {} being assigned.",
                        a.role_id
                    ))));
                }
            }
            Target::System => {
                return Ok(Err(ApplyError::Invalid(format!(
                    "Role {} is a domain-specific role. Unable to use a domain-specific role in a system assignment.",
                    a.role_id
                ))))
            }
            Target::Domain(_) => {}
        }
    }
    put(tx, &a)?;
    Ok(Ok(Applied::Done))
}

/// Removes a grant; 404 when the role, actor or target is unknown or the grant is absent.
pub fn delete_grant(tx: &mut Tx<'_>, a: Assignment) -> Result<ApplyResult, Fatal> {
    if let Some(refusal) = check_refs(tx, &a)? {
        return Ok(Err(refusal));
    }
    let [by_actor, ..] = assignment_keys(&a);
    if tx.get_raw(cf::ASSIGNMENTS, &by_actor)?.is_none() {
        return Ok(Err(grant_not_found(&a)));
    }
    remove(tx, &a);
    Ok(Ok(Applied::Done))
}

/// The first missing reference of a grant (role, actor, target), as a refusal. Keystone does
/// not look the actor of an inherited grant up, so neither is it checked here.
fn check_refs(tx: &Tx<'_>, a: &Assignment) -> Result<Option<ApplyError>, Fatal> {
    if tx.role(&a.role_id)?.is_none() {
        return Ok(Some(not_found("role", &a.role_id)));
    }
    let actor_found = a.inherited
        || match a.actor_kind {
            ActorKind::User => tx.user(&a.actor_id)?.is_some(),
            ActorKind::Group => tx.group(&a.actor_id)?.is_some(),
        };
    if !actor_found {
        let kind = if a.actor_kind == ActorKind::User { "user" } else { "group" };
        return Ok(Some(not_found(kind, &a.actor_id)));
    }
    let refusal = match &a.target {
        Target::Project(id) => tx.project(id)?.filter(|p| !p.is_domain).is_none().then(|| not_found("project", id)),
        Target::Domain(id) => tx.domain(id)?.is_none().then(|| not_found("domain", id)),
        Target::System => None,
    };
    Ok(refusal)
}
