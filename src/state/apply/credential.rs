//! Credentials: the owner (and project, when set) must exist; a signature (`ec2`) credential
//! needs a project. Indexed by owner and by project so that deleting either removes them.

use super::super::cf;
use super::super::command::{not_found, Applied, ApplyError, ApplyResult};
use super::super::keys::ns;
use super::super::model::Credential;
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::fatal::Fatal;

/// The credential type of signature credentials (Keystone's literal).
pub const EC2: &str = "ec2";

fn check_refs(tx: &Tx<'_>, c: &Credential) -> Result<Option<ApplyError>, Fatal> {
    if tx.user(&c.user_id)?.is_none() {
        return Ok(Some(ApplyError::Invalid(format!(
            "Invalid input for field 'user_id': user {} does not exist.",
            c.user_id
        ))));
    }
    match &c.project_id {
        Some(p) if tx.project(p)?.is_none() => {
            Ok(Some(ApplyError::Invalid(format!("Invalid input for field 'project_id': project {p} does not exist."))))
        }
        None if c.cred_type == EC2 => {
            Ok(Some(ApplyError::Invalid("'project_id' is a required property of an ec2 credential.".into())))
        }
        _ => Ok(None),
    }
}

fn index(tx: &mut Tx<'_>, c: &Credential) {
    tx.add_member(ns::CREDENTIALS_OF_USER, &c.user_id, &c.id);
    if let Some(p) = &c.project_id {
        tx.add_member(ns::CREDENTIALS_OF_PROJECT, p, &c.id);
    }
}

fn remove(tx: &mut Tx<'_>, c: &Credential) {
    tx.remove_member(ns::CREDENTIALS_OF_USER, &c.user_id, &c.id);
    if let Some(p) = &c.project_id {
        tx.remove_member(ns::CREDENTIALS_OF_PROJECT, p, &c.id);
    }
    tx.delete(cf::CREDENTIALS, c.id.clone().into_bytes());
}

pub fn create(tx: &mut Tx<'_>, c: Credential) -> Result<ApplyResult, Fatal> {
    if tx.credential(&c.id)?.is_some() {
        return Ok(Err(ApplyError::Conflict(format!(
            "Conflict occurred attempting to store credential - Duplicate ID, {}.",
            c.id
        ))));
    }
    if let Some(err) = check_refs(tx, &c)? {
        return Ok(Err(err));
    }
    index(tx, &c);
    tx.put(cf::CREDENTIALS, c.id.clone().into_bytes(), &c)?;
    Ok(Ok(Applied::Credential(c)))
}

pub fn update(tx: &mut Tx<'_>, c: Credential) -> Result<ApplyResult, Fatal> {
    let Some(old) = tx.credential(&c.id)? else {
        return Ok(Err(not_found("credential", &c.id)));
    };
    if let Some(err) = check_refs(tx, &c)? {
        return Ok(Err(err));
    }
    remove(tx, &old);
    index(tx, &c);
    tx.put(cf::CREDENTIALS, c.id.clone().into_bytes(), &c)?;
    Ok(Ok(Applied::Credential(c)))
}

pub fn delete(tx: &mut Tx<'_>, id: &str) -> Result<ApplyResult, Fatal> {
    let Some(c) = tx.credential(id)? else {
        return Ok(Err(not_found("credential", id)));
    };
    remove(tx, &c);
    Ok(Ok(Applied::Done))
}

/// Cascade of a user's deletion.
pub fn remove_for_user(tx: &mut Tx<'_>, user_id: &str) -> Result<(), Fatal> {
    remove_listed(tx, ns::CREDENTIALS_OF_USER, user_id)
}

/// Cascade of a project's deletion (its signature credentials and any other bound to it).
pub fn remove_for_project(tx: &mut Tx<'_>, project_id: &str) -> Result<(), Fatal> {
    remove_listed(tx, ns::CREDENTIALS_OF_PROJECT, project_id)
}

fn remove_listed(tx: &mut Tx<'_>, index: &str, term: &str) -> Result<(), Fatal> {
    for id in tx.member_ids(index, term)? {
        if let Some(c) = tx.credential(&id)? {
            remove(tx, &c);
        }
    }
    Ok(())
}
