//! Role assignments and their cascades.

use super::super::keys::{self, assignment_keys};
use super::super::model::{ActorKind, Assignment, Role, Target};
use super::super::{cf, Reader, Tx};
use super::Fatal;

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

/// Domain-specific roles go with their domain, with their grants and implication rules.
pub fn remove_roles_of_domain(tx: &mut Tx<'_>, domain_id: &str) -> Result<(), Fatal> {
    let roles: Vec<Role> = tx.scan(cf::ROLES, keys::ROLE_PREFIX)?;
    for r in roles.iter().filter(|r| r.domain_id.as_deref() == Some(domain_id)) {
        remove_all(tx, &keys::by_role_prefix(&r.id))?;
        tx.delete(cf::ROLES, keys::role(&r.id));
    }
    Ok(())
}
