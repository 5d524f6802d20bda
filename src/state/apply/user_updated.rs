//! When a user's information last changed: OIDC's `updated_at` ("Time the End-User's
//! information was last updated") and SCIM's `meta.lastModified`. The user record has no such
//! field and cannot grow one (postcard, unversioned), so the time lives under its own key
//! (`keys::user_updated`), goes with the user, and reads as the creation time while absent.
//!
//! What counts: every field of the user record a user update sets (name, enabled, default
//! project, options, extra attributes such as the e-mail, federated identities). Credentials
//! do not (a password, its expiry and history, lockouts, TOTP steps, the token cut-off): they
//! are not the user's information, and a rehash at login must not move it.

use serde_json::Value;

use super::super::cf;
use super::super::keys;
use super::super::model::User;
use super::super::read::tx::Tx;
use super::super::read::IdentityReads;
use super::fatal::Fatal;

/// The cluster version from which apply records the time. A member of an older release
/// writes nothing, and replicas must hold the same state.
pub const USER_UPDATED_VERSION: u32 = 16;

/// Whether `new` shows anything `old` did not (the JSON attributes compared as values: a
/// merge may write the same object in another order).
fn shows_change(old: &User, new: &User) -> bool {
    let json = |s: &str| serde_json::from_str::<Value>(s).unwrap_or_else(|_| Value::String(s.to_string()));
    old.name != new.name
        || old.enabled != new.enabled
        || old.default_project_id != new.default_project_id
        || old.federated != new.federated
        || json(&old.extra) != json(&new.extra)
        || json(&old.options) != json(&new.options)
}

/// Records `at` (unix micros, the command's own time, never this member's clock) as the time
/// `new`'s information changed, when it shows a change from `old`. Never moves back: a
/// command stamped by a member whose clock runs behind keeps the later time.
pub(super) fn record(tx: &mut Tx<'_>, old: &User, new: &User, at: i64) -> Result<(), Fatal> {
    if !shows_change(old, new) {
        return Ok(());
    }
    let version = idnode_raft::applied_cluster_version(tx.engine, tx.batch).map_err(Fatal::Codec)?;
    if version >= USER_UPDATED_VERSION {
        let since = tx.user_updated_at(new)?.max(at);
        tx.put(cf::PASSWORDS, keys::user_updated(&new.id), &since)?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "user_updated_tests.rs"]
mod tests;
