//! Projects and domains (a domain is a project with `is_domain`).

use super::super::cf;
use super::super::command::{not_found, Applied, ApplyError, ApplyResult};
use super::super::keys::ns;
use super::super::model::{Project, Target};
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::fatal::Fatal;
use super::{assignment, credential, group, identity, role};

/// Names of domains live in one namespace; project names are unique per domain.
fn name_slot(p: &Project) -> (&'static str, &str) {
    if p.is_domain {
        (ns::DOMAIN_NAME, "")
    } else {
        (ns::PROJECT_NAME, p.domain_id.as_str())
    }
}

fn index(tx: &mut Tx<'_>, p: &Project) {
    let (n, scope) = name_slot(p);
    tx.put_name(n, scope, &p.name, &p.id);
    if !p.is_domain {
        tx.add_member(ns::PROJECTS_OF_DOMAIN, &p.domain_id, &p.id);
    }
}

fn unindex(tx: &mut Tx<'_>, p: &Project) {
    let (n, scope) = name_slot(p);
    tx.delete_name(n, scope, &p.name);
    if !p.is_domain {
        tx.remove_member(ns::PROJECTS_OF_DOMAIN, &p.domain_id, &p.id);
    }
}

pub fn create(tx: &mut Tx<'_>, p: Project) -> Result<ApplyResult, Fatal> {
    if tx.project(&p.id)?.is_some() {
        return Ok(Err(ApplyError::Conflict(format!(
            "Conflict occurred attempting to store project - Duplicate ID, {}.",
            p.id
        ))));
    }
    if !p.is_domain {
        if tx.domain(&p.domain_id)?.is_none() {
            return Ok(Err(not_found("domain", &p.domain_id)));
        }
        if let Some(parent) = &p.parent_id {
            match tx.project(parent)? {
                Some(pp) if pp.id == p.domain_id || pp.domain_id == p.domain_id => {}
                Some(_) => {
                    return Ok(Err(ApplyError::Invalid("The parent project must be in the same domain.".into())))
                }
                None => return Ok(Err(not_found("project", parent))),
            }
        }
    }
    let (n, scope) = name_slot(&p);
    if tx.id_by_name(n, scope, &p.name)?.is_some() {
        let what = if p.is_domain { "domain" } else { "project" };
        return Ok(Err(ApplyError::Conflict(format!(
            "Conflict occurred attempting to store {what} - it is not permitted to have two {what}s with the same name in the same domain : {}.",
            p.name
        ))));
    }
    index(tx, &p);
    tx.put(cf::PROJECTS, p.id.clone().into_bytes(), &p)?;
    Ok(Ok(Applied::Project(p)))
}

/// Replaces the mutable fields; `domain_id`, `is_domain`, `parent_id` and `created_at` keep
/// their stored values whatever the command says.
pub fn update(tx: &mut Tx<'_>, mut p: Project) -> Result<ApplyResult, Fatal> {
    let Some(old) = tx.project(&p.id)? else {
        return Ok(Err(not_found(if p.is_domain { "domain" } else { "project" }, &p.id)));
    };
    p.domain_id = old.domain_id.clone();
    p.is_domain = old.is_domain;
    p.parent_id = old.parent_id.clone();
    p.created_at = old.created_at;
    if p.name.to_lowercase() != old.name.to_lowercase() {
        let (n, scope) = name_slot(&p);
        if tx.id_by_name(n, scope, &p.name)?.is_some() {
            return Ok(Err(ApplyError::Conflict(format!(
                "Conflict occurred attempting to store project - Duplicate name, {}.",
                p.name
            ))));
        }
    }
    unindex(tx, &old);
    index(tx, &p);
    tx.put(cf::PROJECTS, p.id.clone().into_bytes(), &p)?;
    Ok(Ok(Applied::Project(p)))
}

pub fn delete(tx: &mut Tx<'_>, id: &str) -> Result<ApplyResult, Fatal> {
    let Some(p) = tx.project(id)? else {
        return Ok(Err(not_found("project", id)));
    };
    if p.is_domain && p.enabled {
        // As Keystone: a domain is disabled first, so deleting it is a deliberate two-step act.
        return Ok(Err(ApplyError::Forbidden(
            "Cannot delete a domain that is enabled, please disable it first.".to_string(),
        )));
    }
    if p.is_domain {
        // Deleting a domain removes what it owns: projects, users, groups, domain roles and
        // their grants.
        for pid in tx.member_ids(ns::PROJECTS_OF_DOMAIN, &p.id)? {
            if let Some(child) = tx.project(&pid)? {
                remove_project(tx, &child)?;
            }
        }
        for uid in tx.member_ids(ns::USERS_OF_DOMAIN, &p.id)? {
            if let Some(u) = tx.user(&uid)? {
                identity::remove_user(tx, &u)?;
            }
        }
        group::remove_groups_of_domain(tx, &p.id)?;
        assignment::remove_for_target(tx, &Target::Domain(p.id.clone()))?;
        role::remove_roles_of_domain(tx, &p.id)?;
    } else if has_children(tx, &p)? {
        return Ok(Err(ApplyError::Forbidden(format!(
            "Cannot delete the project {} since it is not a leaf in the hierarchy. Use the cascade option if you want to delete a subtree.",
            p.id
        ))));
    }
    remove_project(tx, &p)?;
    Ok(Ok(Applied::Done))
}

fn has_children(tx: &Tx<'_>, p: &Project) -> Result<bool, Fatal> {
    for pid in tx.member_ids(ns::PROJECTS_OF_DOMAIN, &p.domain_id)? {
        if let Some(c) = tx.project(&pid)? {
            if c.parent_id.as_deref() == Some(p.id.as_str()) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

fn remove_project(tx: &mut Tx<'_>, p: &Project) -> Result<(), Fatal> {
    assignment::remove_for_target(tx, &Target::Project(p.id.clone()))?;
    credential::remove_for_project(tx, &p.id)?;
    super::restrictions::forget_project(tx, &p.id)?;
    super::limits::forget_project(tx, &p.id)?;
    unindex(tx, p);
    tx.delete(cf::PROJECTS, p.id.clone().into_bytes());
    Ok(())
}
