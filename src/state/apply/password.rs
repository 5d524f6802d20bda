//! Password bookkeeping for `[security_compliance]`: history, the current password's age and
//! origin, and the failed-attempt streak that locks an account. The limits travel in the
//! commands, so every replica decides alike whatever its own configuration says.

use super::super::cf;
use super::super::command::{not_found, Applied, ApplyError, ApplyResult};
use super::super::keys;
use super::super::model::PasswordState;
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::fatal::Fatal;

fn state(tx: &Tx<'_>, user_id: &str) -> Result<PasswordState, Fatal> {
    Ok(tx.password_state(user_id)?.unwrap_or_default())
}

pub fn record(
    tx: &mut Tx<'_>,
    user_id: &str,
    hash: String,
    at: i64,
    self_service: bool,
    keep: u32,
    expires_at: Option<i64>,
) -> Result<ApplyResult, Fatal> {
    let Some(mut user) = tx.user(user_id)? else {
        return Ok(Err(not_found("user", user_id)));
    };
    let mut s = state(tx, user_id)?;
    s.history.push(hash);
    let keep = keep.max(1) as usize;
    if s.history.len() > keep {
        s.history.drain(..s.history.len() - keep);
    }
    s.set_at = at;
    s.self_service = self_service;
    s.failures = 0;
    s.last_failure_at = 0;
    tx.put(cf::PASSWORDS, user_id.as_bytes().to_vec(), &s)?;
    if user.password_expires_at != expires_at {
        user.password_expires_at = expires_at;
        tx.put(cf::USERS, user_id.as_bytes().to_vec(), &user)?;
    }
    // The user as it now is (a compound create or update answers with it).
    Ok(Ok(Applied::User(user)))
}

/// Replaces a user's password hash kept from Keystone by the argon2id one a login computed,
/// when it is still the stored one (`Command::RehashPassword`).
pub fn rehash(tx: &mut Tx<'_>, user_id: &str, old_hash: &str, new_hash: String) -> Result<ApplyResult, Fatal> {
    let Some(mut user) = tx.user(user_id)? else {
        return Ok(Ok(Applied::Done));
    };
    if user.password_hash.as_deref() != Some(old_hash) {
        return Ok(Ok(Applied::Done));
    }
    if let Some(mut s) = tx.password_state(user_id)? {
        if s.history.iter().any(|h| h == old_hash) {
            for h in s.history.iter_mut().filter(|h| h.as_str() == old_hash) {
                *h = new_hash.clone();
            }
            tx.put(cf::PASSWORDS, user_id.as_bytes().to_vec(), &s)?;
        }
    }
    user.password_hash = Some(new_hash);
    tx.put(cf::USERS, user_id.as_bytes().to_vec(), &user)?;
    Ok(Ok(Applied::Done))
}

pub fn failure(tx: &mut Tx<'_>, user_id: &str, at: i64, limit: u32, lockout_micros: i64) -> Result<ApplyResult, Fatal> {
    if tx.user(user_id)?.is_none() {
        return Ok(Err(not_found("user", user_id)));
    }
    let mut s = state(tx, user_id)?;
    let lock_over = limit > 0 && s.failures >= limit && s.last_failure_at.saturating_add(lockout_micros) <= at;
    s.failures = if lock_over { 1 } else { s.failures.saturating_add(1) };
    s.last_failure_at = at;
    tx.put(cf::PASSWORDS, user_id.as_bytes().to_vec(), &s)?;
    Ok(Ok(Applied::Done))
}

/// One use of a TOTP step: a step at or before the last one used is a replay.
pub fn use_totp_step(tx: &mut Tx<'_>, user_id: &str, step: u64) -> Result<ApplyResult, Fatal> {
    if tx.user(user_id)?.is_none() {
        return Ok(Err(not_found("user", user_id)));
    }
    if tx.totp_step(user_id)?.is_some_and(|last| step <= last) {
        return Ok(Err(ApplyError::Conflict("This TOTP passcode was already used.".into())));
    }
    tx.put(cf::PASSWORDS, keys::totp_step(user_id), &step)?;
    Ok(Ok(Applied::Done))
}

pub fn clear_failures(tx: &mut Tx<'_>, user_id: &str) -> Result<ApplyResult, Fatal> {
    if let Some(mut s) = tx.password_state(user_id)? {
        if s.failures > 0 {
            s.failures = 0;
            s.last_failure_at = 0;
            tx.put(cf::PASSWORDS, user_id.as_bytes().to_vec(), &s)?;
        }
    }
    Ok(Ok(Applied::Done))
}
