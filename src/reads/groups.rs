//! The groups a user is in now: permanent memberships, and the expiring ones a federated
//! login granted (`state::model::ExpiringMembership`) that are not over yet. Whether one is
//! over is judged here, by the reading node's clock, never in apply: Keystone too stops
//! counting a membership at its `expires`, whatever any job has removed.

use idnode_storage::Result;

use crate::state::read::IdentityReads;
use crate::state::Reader;

/// Each group of the user once, with when its membership ends (`None`: permanent; a group
/// held both ways is permanent), in the order the memberships are stored.
pub fn of_user(r: &impl Reader, user_id: &str, now: i64) -> Result<Vec<(String, Option<i64>)>> {
    let mut out: Vec<(String, Option<i64>)> = r.group_ids_of_user(user_id)?.into_iter().map(|g| (g, None)).collect();
    for m in r.expiring_memberships_of_user(user_id)? {
        if m.expires_at > now && !out.iter().any(|(g, _)| *g == m.group_id) {
            out.push((m.group_id, Some(m.expires_at)));
        }
    }
    Ok(out)
}

/// The ids of the groups the user is in now.
pub fn ids_of_user(r: &impl Reader, user_id: &str, now: i64) -> Result<Vec<String>> {
    Ok(of_user(r, user_id, now)?.into_iter().map(|(g, _)| g).collect())
}

/// Whether the user is in the group now (permanently, or by a membership not yet over).
pub fn is_member(r: &impl Reader, group_id: &str, user_id: &str, now: i64) -> Result<bool> {
    if r.is_member(group_id, user_id)? {
        return Ok(true);
    }
    Ok(r.expiring_memberships_of_user(user_id)?.iter().any(|m| m.group_id == group_id && m.expires_at > now))
}
