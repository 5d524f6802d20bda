//! Users.

use super::super::cf;
use super::super::command::{not_found, Applied, ApplyError, ApplyResult, UserPatch};
use super::super::cutoff::Cutoff;
use super::super::keys::{self, ns};
use super::super::model::{ActorKind, DocKind, User, MAX_EXTRA_BYTES};
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::fatal::Fatal;
use super::{assignment, credential, group, scim_ownership, user_updated};

fn conflict(name: &str) -> ApplyError {
    ApplyError::Conflict(format!(
        "Conflict occurred attempting to store user - Duplicate entry found with name {name} at domain ID."
    ))
}

pub fn create(tx: &mut Tx<'_>, u: User) -> Result<ApplyResult, Fatal> {
    if tx.user(&u.id)?.is_some() {
        return Ok(Err(ApplyError::Conflict(format!(
            "Conflict occurred attempting to store user - Duplicate ID, {}.",
            u.id
        ))));
    }
    if tx.domain(&u.domain_id)?.is_none() {
        return Ok(Err(not_found("domain", &u.domain_id)));
    }
    if let Some(pid) = &u.default_project_id {
        if tx.project(pid)?.is_none() {
            return Ok(Err(not_found("project", pid)));
        }
    }
    if tx.id_by_name(ns::USER_NAME, &u.domain_id, &u.name)?.is_some() {
        return Ok(Err(conflict(&u.name)));
    }
    tx.put_name(ns::USER_NAME, &u.domain_id, &u.name, &u.id);
    tx.add_member(ns::USERS_OF_DOMAIN, &u.domain_id, &u.id);
    index_unique_ids(tx, &u);
    tx.put(cf::USERS, u.id.clone().into_bytes(), &u)?;
    Ok(Ok(Applied::User(u)))
}

/// Applies the named fields over the user as stored now; a change that shows moves the
/// user's update time to the patch's.
pub fn patch(tx: &mut Tx<'_>, p: UserPatch) -> Result<ApplyResult, Fatal> {
    let Some(mut u) = tx.user(&p.id)? else {
        return Ok(Err(not_found("user", &p.id)));
    };
    let before = u.clone();
    if let Some(name) = p.name {
        u.name = name;
    }
    let cut = Cutoff::at(tx, p.now)?;
    if let Some(enabled) = p.enabled {
        if !enabled && u.enabled {
            cut.apply(&mut u);
        }
        u.enabled = enabled;
    }
    if let Some(d) = p.default_project_id {
        u.default_project_id = d;
    }
    if let Some(o) = p.options {
        u.options = o;
    }
    if let Some(f) = p.federated {
        u.federated = f;
    }
    if let Some(h) = p.password_hash {
        u.password_hash = h;
        cut.apply(&mut u);
    }
    if let Some(set) = p.extra {
        u.extra = merge_objects(&u.extra, &set);
        if u.extra.len() > MAX_EXTRA_BYTES {
            return Ok(Err(ApplyError::Invalid(format!(
                "Invalid input for field 'extra': the user's attributes outside its schema would take {} bytes \
                 serialized, more than the {MAX_EXTRA_BYTES} allowed.",
                u.extra.len()
            ))));
        }
    }
    let outcome = update(tx, u)?;
    if let Ok(Applied::User(after)) = &outcome {
        user_updated::record(tx, &before, after, p.now)?;
    }
    Ok(outcome)
}

/// `base` with `set`'s keys written over it (both JSON objects; anything else counts as empty).
fn merge_objects(base: &str, set: &str) -> String {
    type Obj = serde_json::Map<String, serde_json::Value>;
    let mut m: Obj = serde_json::from_str(base).unwrap_or_default();
    let set: Obj = serde_json::from_str(set).unwrap_or_default();
    m.extend(set);
    serde_json::Value::Object(m).to_string()
}

/// `domain_id` and `created_at` are immutable; the rest is replaced. The update time is the
/// callers' to record: this command carries no time (and no current proposer sends it alone).
pub fn update(tx: &mut Tx<'_>, mut u: User) -> Result<ApplyResult, Fatal> {
    let Some(old) = tx.user(&u.id)? else {
        return Ok(Err(not_found("user", &u.id)));
    };
    u.domain_id = old.domain_id.clone();
    u.created_at = old.created_at;
    u.tokens_valid_after = u.tokens_valid_after.max(old.tokens_valid_after);
    let renamed = u.name.to_lowercase() != old.name.to_lowercase();
    if renamed && tx.id_by_name(ns::USER_NAME, &u.domain_id, &u.name)?.is_some() {
        return Ok(Err(conflict(&u.name)));
    }
    if let Some(pid) = &u.default_project_id {
        if u.default_project_id != old.default_project_id && tx.project(pid)?.is_none() {
            return Ok(Err(not_found("project", pid)));
        }
    }
    tx.delete_name(ns::USER_NAME, &old.domain_id, &old.name);
    tx.put_name(ns::USER_NAME, &u.domain_id, &u.name, &u.id);
    unindex_unique_ids(tx, &old);
    index_unique_ids(tx, &u);
    tx.put(cf::USERS, u.id.clone().into_bytes(), &u)?;
    Ok(Ok(Applied::User(u)))
}

pub fn delete(tx: &mut Tx<'_>, id: &str, _now: i64) -> Result<ApplyResult, Fatal> {
    let Some(u) = tx.user(id)? else {
        return Ok(Err(not_found("user", id)));
    };
    remove_user(tx, &u)?;
    Ok(Ok(Applied::Done))
}

/// Sets a new password hash, but only over the hash the service verified the original
/// password against; tokens issued before `now` stop validating.
pub fn change_password(
    tx: &mut Tx<'_>,
    user_id: &str,
    expected_hash: &str,
    new_hash: String,
    now: i64,
) -> Result<ApplyResult, Fatal> {
    let Some(mut u) = tx.user(user_id)? else {
        return Ok(Err(not_found("user", user_id)));
    };
    let Some(current) = &u.password_hash else {
        return Ok(Err(ApplyError::Conflict(format!("User {user_id} is not a local user and has no password."))));
    };
    if !idnode_keys::constant_time_eq(current.as_bytes(), expected_hash.as_bytes()) {
        return Ok(Err(ApplyError::Conflict("The password was changed concurrently; retry.".into())));
    }
    u.password_hash = Some(new_hash);
    Cutoff::at(tx, now)?.apply(&mut u);
    tx.put(cf::USERS, u.id.clone().into_bytes(), &u)?;
    Ok(Ok(Applied::Done))
}

fn index_unique_ids(tx: &mut Tx<'_>, u: &User) {
    for uid in u.unique_ids() {
        tx.add_member(ns::USER_UNIQUE_ID, uid, &u.id);
    }
}

fn unindex_unique_ids(tx: &mut Tx<'_>, u: &User) {
    for uid in u.unique_ids() {
        tx.remove_member(ns::USER_UNIQUE_ID, uid, &u.id);
    }
}

/// Removes a user with its name index entries, group memberships, role assignments and
/// credentials.
pub fn remove_user(tx: &mut Tx<'_>, u: &User) -> Result<(), Fatal> {
    assignment::remove_for_actor(tx, ActorKind::User, &u.id)?;
    group::remove_memberships_of_user(tx, &u.id)?;
    credential::remove_for_user(tx, &u.id)?;
    unindex_unique_ids(tx, u);
    tx.delete_name(ns::USER_NAME, &u.domain_id, &u.name);
    tx.remove_member(ns::USERS_OF_DOMAIN, &u.domain_id, &u.id);
    tx.delete(cf::USERS, u.id.clone().into_bytes());
    tx.delete(cf::PASSWORDS, u.id.clone().into_bytes());
    tx.delete(cf::PASSWORDS, keys::totp_step(&u.id));
    tx.delete(cf::PASSWORDS, keys::user_updated(&u.id));
    // What a `local` mapping rule last synced it into (it has no memberships left).
    tx.delete(cf::SHADOW, super::super::shadow::keys::synced_groups(&u.id));
    // The user's application credentials and their access rules go with it.
    super::doc::remove_children(tx, DocKind::ApplicationCredential, &u.id)?;
    super::doc::remove_children(tx, DocKind::AccessRule, &u.id)?;
    super::doc::remove_trusts_of(tx, &u.id)?;
    scim_ownership::forget(tx, super::super::scim::Kind::User, &u.id)?;
    super::passkeys::remove_for_user(tx, &u.id)?;
    super::restrictions::forget_user(tx, &u.id)?;
    Ok(())
}
