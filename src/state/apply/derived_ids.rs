//! The migration of users created under the first derivation of user ids (see
//! `state::derived_ids`): each command looks at the next users in id order (at most
//! `MAX_BATCH`), from where the previous one stopped, and writes their aliases. Idempotent: a
//! repeated or raced command only continues (or, once done, does nothing), and aliases are
//! written with the same value every time.

use std::collections::BTreeMap;

use idnode_storage::decode;

use super::super::cf;
use super::super::command::{Applied, ApplyResult};
use super::super::derived_ids::{aliases_for, keys, progress, Progress, MAX_BATCH};
use super::super::model::User;
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::fatal::Fatal;

/// At most `limit` users with ids after `after`, this batch's own writes included (a replica
/// that groups entries into batches differently reads the same users).
fn users_after(tx: &Tx<'_>, after: Option<&str>, limit: usize) -> Result<Vec<User>, Fatal> {
    let start: Vec<u8> = match after {
        Some(a) => {
            let mut k = a.as_bytes().to_vec();
            k.push(0);
            k
        }
        None => Vec::new(),
    };
    let pending: Vec<(Vec<u8>, Option<Vec<u8>>)> = tx
        .batch
        .pending_with_prefix(cf::USERS, b"")
        .filter(|(k, _)| *k >= start.as_slice())
        .map(|(k, v)| (k.to_vec(), v.map(<[u8]>::to_vec)))
        .collect();
    let deleted = pending.iter().filter(|(_, v)| v.is_none()).count();
    let mut merged: BTreeMap<Vec<u8>, Vec<u8>> =
        tx.engine.read().scan_range(cf::USERS, &start, None, limit + deleted)?.into_iter().collect();
    for (k, v) in pending {
        match v {
            Some(v) => merged.insert(k, v),
            None => merged.remove(&k),
        };
    }
    merged.into_values().take(limit).map(|v| decode(&v)).collect()
}

pub fn migrate(tx: &mut Tx<'_>, batch: u32) -> Result<ApplyResult, Fatal> {
    let mut at = progress(tx)?;
    if at.done {
        return Ok(Ok(Applied::Done));
    }
    let limit = batch.clamp(1, MAX_BATCH) as usize;
    let users = users_after(tx, at.after.as_deref(), limit)?;
    for u in &users {
        for alias in aliases_for(tx, u)? {
            // An alias never points away from a user that holds the id itself.
            if tx.user(&alias)?.is_none() {
                tx.put(cf::SCIM, keys::alias(&alias), &u.id)?;
            }
        }
    }
    at = Progress { after: users.last().map(|u| u.id.clone()).or(at.after), done: users.len() < limit };
    tx.put(cf::SCIM, keys::PROGRESS.to_vec(), &at)?;
    Ok(Ok(Applied::Done))
}

#[cfg(test)]
#[path = "derived_ids_tests.rs"]
mod tests;
