//! Passkeys' invariants: a ceremony finishes once, before it expires, as what it was begun
//! for and for the user it was begun for; a credential id belongs to one passkey of one user;
//! a login needs the user enabled and the passkey still registered, and its signature
//! counter moves forward (a counter that goes back or stands still is a cloned
//! authenticator); backup eligibility never changes after registration; a user without a
//! password keeps at least one passkey.

use super::super::cf;
use super::super::command::{not_found, Applied, ApplyError, ApplyResult};
use super::super::passkeys::{
    keys, Ceremony, LoginProof, PasskeyApplied, PasskeyCommand, Purpose, StoredPasskey, CLONED, LAST_PASSKEY,
    MAX_DESCRIPTION,
};
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::fatal::Fatal;

/// The cluster version of the account page's operations (issue 55): passkey renames and
/// session revocations, a refresh's recorded time, and the refusal to remove a passkey-only
/// account's last passkey. The last two change what existing commands write, so apply reads
/// the replicated version before doing them: every replica switches at the same index.
pub const SELF_SERVICE_VERSION: u32 = 15;

/// Expired ceremonies dropped per start at most (bounded work).
const PRUNE_PER_COMMAND: usize = 16;

fn refused(m: &str) -> Result<ApplyResult, Fatal> {
    Ok(Err(ApplyError::Invalid(m.to_string())))
}

fn done(a: PasskeyApplied) -> Result<ApplyResult, Fatal> {
    Ok(Ok(Applied::Passkeys(a)))
}

pub fn apply(tx: &mut Tx<'_>, cmd: PasskeyCommand) -> Result<ApplyResult, Fatal> {
    match cmd {
        PasskeyCommand::Start { challenge, ceremony, at } => {
            if tx.get_raw(cf::PASSKEYS, &keys::ceremony(&challenge))?.is_some() {
                return Ok(Err(ApplyError::Conflict("The challenge is in use.".into())));
            }
            prune(tx, at)?;
            tx.put(cf::PASSKEYS, keys::expiry(ceremony.expires_at, &challenge), &())?;
            tx.put(cf::PASSKEYS, keys::ceremony(&challenge), &ceremony)?;
            done(PasskeyApplied::Done)
        }
        PasskeyCommand::Register { challenge, passkey, at } => {
            if let Err(why) = spend(tx, &challenge, &passkey.user_id, Purpose::Register, at)? {
                return refused(why);
            }
            if tx.user(&passkey.user_id)?.is_none() {
                return Ok(Err(not_found("user", &passkey.user_id)));
            }
            if tx.get_raw(cf::PASSKEYS, &keys::credential(&passkey.credential_id))?.is_some() {
                return Ok(Err(ApplyError::Conflict("This credential is registered already.".into())));
            }
            let owner = format!("{}/{}", passkey.user_id, passkey.id);
            tx.put(cf::PASSKEYS, keys::credential(&passkey.credential_id), &owner)?;
            tx.put(cf::PASSKEYS, keys::passkey(&passkey.user_id, &passkey.id), &*passkey)?;
            done(PasskeyApplied::Passkey(passkey))
        }
        PasskeyCommand::Login { challenge, user_id, proof, at } => login(tx, &challenge, &user_id, proof, at),
        PasskeyCommand::Delete { user_id, passkey_id } => delete(tx, &user_id, &passkey_id),
        PasskeyCommand::Rename { user_id, passkey_id, description } => rename(tx, &user_id, &passkey_id, description),
    }
}

fn delete(tx: &mut Tx<'_>, user_id: &str, passkey_id: &str) -> Result<ApplyResult, Fatal> {
    let key = keys::passkey(user_id, passkey_id);
    let Some(p) = tx.get::<StoredPasskey>(cf::PASSKEYS, &key)? else {
        return Ok(Err(not_found("passkey", passkey_id)));
    };
    // Decided here, in log order, so two removals racing on two members cannot both pass.
    // Gated: a member of an older release removes it, and replicas must agree.
    let version = idnode_raft::applied_cluster_version(tx.engine, tx.batch).map_err(Fatal::Codec)?;
    if version >= SELF_SERVICE_VERSION && is_last_way_in(tx, user_id)? {
        return Ok(Err(ApplyError::Conflict(LAST_PASSKEY.into())));
    }
    tx.delete(cf::PASSKEYS, keys::credential(&p.credential_id));
    tx.delete(cf::PASSKEYS, key);
    done(PasskeyApplied::Done)
}

/// Whether removing one of the user's passkeys would leave no way to sign in: it is the only
/// one, and the user has no password (`password_hash` is `None`).
fn is_last_way_in(tx: &Tx<'_>, user_id: &str) -> Result<bool, Fatal> {
    let has_password = tx.user(user_id)?.is_some_and(|u| u.password_hash.is_some());
    if has_password {
        return Ok(false);
    }
    Ok(tx.scan::<StoredPasskey>(cf::PASSKEYS, &keys::of_user(user_id))?.len() <= 1)
}

fn rename(tx: &mut Tx<'_>, user_id: &str, passkey_id: &str, description: String) -> Result<ApplyResult, Fatal> {
    let length = description.chars().count();
    if description.trim() != description || length == 0 || length > MAX_DESCRIPTION {
        return refused("A passkey's description is 1 to 255 characters, trimmed.");
    }
    let key = keys::passkey(user_id, passkey_id);
    let Some(mut p) = tx.get::<StoredPasskey>(cf::PASSKEYS, &key)? else {
        return Ok(Err(not_found("passkey", passkey_id)));
    };
    p.description = Some(description);
    tx.put(cf::PASSKEYS, key, &p)?;
    done(PasskeyApplied::Passkey(Box::new(p)))
}

/// Spends the ceremony of `challenge` if it is pending, unexpired, of `user_id` and for
/// `purpose`; otherwise says why not (and writes nothing).
fn spend(
    tx: &mut Tx<'_>,
    challenge: &str,
    user_id: &str,
    purpose: Purpose,
    at: i64,
) -> Result<Result<Ceremony, &'static str>, Fatal> {
    let key = keys::ceremony(challenge);
    let Some(c) = tx.get::<Ceremony>(cf::PASSKEYS, &key)? else {
        return Ok(Err("The challenge is unknown, used or expired."));
    };
    if c.user_id != user_id || c.purpose != purpose || c.decoy || at >= c.expires_at {
        return Ok(Err("The challenge is unknown, used or expired."));
    }
    tx.delete(cf::PASSKEYS, keys::expiry(c.expires_at, challenge));
    tx.delete(cf::PASSKEYS, key);
    Ok(Ok(c))
}

fn login(tx: &mut Tx<'_>, challenge: &str, user_id: &str, proof: LoginProof, at: i64) -> Result<ApplyResult, Fatal> {
    if let Err(why) = spend(tx, challenge, user_id, Purpose::Login, at)? {
        return refused(why);
    }
    if !tx.user(user_id)?.is_some_and(|u| u.enabled) {
        return refused("The user is unknown or disabled.");
    }
    let key = keys::passkey(user_id, &proof.passkey_id);
    let Some(mut p) = tx.get::<StoredPasskey>(cf::PASSKEYS, &key)? else {
        return refused("The passkey is not registered.");
    };
    // WebAuthn §7.2 step 21: a counter that does not grow (when either side keeps one).
    if (proof.counter != 0 || p.counter != 0) && proof.counter <= p.counter {
        return refused(CLONED);
    }
    if proof.backup_eligible != p.backup_eligible {
        return refused("The authenticator's backup eligibility changed since registration.");
    }
    p.counter = proof.counter;
    p.backup_state = proof.backup_state;
    p.credential = proof.credential;
    p.last_used_at = Some(at);
    tx.put(cf::PASSKEYS, key, &p)?;
    done(PasskeyApplied::Passkey(Box::new(p)))
}

/// Removes every passkey of a user (the user is being deleted).
pub fn remove_for_user(tx: &mut Tx<'_>, user_id: &str) -> Result<(), Fatal> {
    for p in tx.scan::<StoredPasskey>(cf::PASSKEYS, &keys::of_user(user_id))? {
        tx.delete(cf::PASSKEYS, keys::credential(&p.credential_id));
        tx.delete(cf::PASSKEYS, keys::passkey(user_id, &p.id));
    }
    Ok(())
}

/// Drops ceremonies whose time is over, oldest first, through the expiry index.
fn prune(tx: &mut Tx<'_>, at: i64) -> Result<(), Fatal> {
    let due = tx.scan_before(cf::PASSKEYS, keys::EXPIRY_PREFIX, &keys::expiry(at, ""), PRUNE_PER_COMMAND)?;
    for (index_key, _) in due {
        if let Some(challenge) = index_key.get(keys::EXPIRY_PREFIX.len() + 8..) {
            let challenge = String::from_utf8_lossy(challenge).into_owned();
            tx.delete(cf::PASSKEYS, keys::ceremony(&challenge));
        }
        tx.delete(cf::PASSKEYS, index_key);
    }
    Ok(())
}

#[cfg(test)]
#[path = "passkeys_tests.rs"]
mod tests;
