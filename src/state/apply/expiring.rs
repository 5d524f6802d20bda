//! Expiring group memberships (`model::ExpiringMembership`): what a federated login through a
//! ruleset with an `authorization_ttl` grants instead of permanent memberships. Apply has no
//! clock: whether one still counts is the reader's question (`reads::groups`); apply only
//! writes them as the login says, and drops those past the login's own `at`.

use super::super::cf;
use super::super::keys;
use super::super::model::ExpiringMembership;
use super::super::read::tx::Tx;
use super::super::read::IdentityReads;
use super::fatal::Fatal;

fn put(tx: &mut Tx<'_>, m: &ExpiringMembership) -> Result<(), Fatal> {
    tx.put(cf::GROUPS, keys::expiring_of_user(&m.user_id, &m.group_id), m)?;
    tx.put(cf::GROUPS, keys::expiring_of_group(&m.group_id, &m.user_id), m)
}

fn remove(tx: &mut Tx<'_>, m: &ExpiringMembership) {
    tx.delete(cf::GROUPS, keys::expiring_of_user(&m.user_id, &m.group_id));
    tx.delete(cf::GROUPS, keys::expiring_of_group(&m.group_id, &m.user_id));
}

/// Records the login of `user_id` through `idp_id` at `at`: every group of `wanted` (which
/// exist) is the user's until `expires_at`; the user's other memberships through that
/// provider end (the provider no longer vouches for them, as Keystone's
/// `cleanup_stale_group_memberships`), and any already past `at` are dropped.
pub fn login(
    tx: &mut Tx<'_>,
    user_id: &str,
    wanted: &[String],
    idp_id: &str,
    at: i64,
    expires_at: i64,
) -> Result<(), Fatal> {
    for old in tx.expiring_memberships_of_user(user_id)? {
        let stale = old.idp_id == idp_id && !wanted.contains(&old.group_id);
        if stale || old.expires_at <= at {
            remove(tx, &old);
        }
    }
    for gid in wanted {
        let m = ExpiringMembership {
            group_id: gid.clone(),
            user_id: user_id.to_string(),
            idp_id: idp_id.to_string(),
            last_verified: at,
            expires_at,
        };
        put(tx, &m)?;
    }
    Ok(())
}

/// Stores a membership moved in from another service (`Command::Import`) as it was there.
pub fn import(tx: &mut Tx<'_>, m: &ExpiringMembership) -> Result<(), Fatal> {
    put(tx, m)
}

/// Drops every expiring membership of a user (the user is going away, or a permanent sync
/// took over its groups).
pub fn remove_of_user(tx: &mut Tx<'_>, user_id: &str) -> Result<(), Fatal> {
    for m in tx.expiring_memberships_of_user(user_id)? {
        remove(tx, &m);
    }
    Ok(())
}

/// Drops every expiring membership of a group (the group is going away).
pub fn remove_of_group(tx: &mut Tx<'_>, group_id: &str) -> Result<(), Fatal> {
    for m in tx.expiring_members_of_group(group_id)? {
        remove(tx, &m);
    }
    Ok(())
}

#[cfg(test)]
#[path = "expiring_tests.rs"]
mod tests;
