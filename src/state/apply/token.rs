//! Token revocation events.

use super::super::command::{Applied, ApplyResult};
use super::super::model::Revocation;
use super::super::{cf, keys, Reader, Tx};
use super::Fatal;

/// How many expired revocations one command drops at most (bounded work per command).
const PRUNE_PER_COMMAND: usize = 64;

/// Records the audit ids as revoked until `keep_until` (the token's expiry plus the window in
/// which `allow_expired` still validates it), and drops a few entries whose time is over,
/// found through the expiry-ordered index (no scan, no decryption of live entries).
pub fn revoke(tx: &mut Tx<'_>, audit_ids: Vec<String>, keep_until: i64, now: i64) -> Result<ApplyResult, Fatal> {
    for id in audit_ids {
        if let Some(old) = tx.get::<Revocation>(cf::REVOCATIONS, id.as_bytes())? {
            tx.delete(cf::REVOCATIONS, keys::revocation_expiry(old.expires_at, &id));
        }
        tx.put(cf::REVOCATIONS, id.clone().into_bytes(), &Revocation { expires_at: keep_until, revoked_at: now })?;
        tx.batch.put(cf::REVOCATIONS, keys::revocation_expiry(keep_until, &id), &[]);
    }
    let due =
        tx.scan_before(cf::REVOCATIONS, keys::REVOCATION_EXPIRY, &keys::revocation_expiry(now, ""), PRUNE_PER_COMMAND)?;
    for (key, _) in due {
        if let Some(id) = key.get(keys::REVOCATION_EXPIRY.len() + 8..) {
            tx.delete(cf::REVOCATIONS, id.to_vec());
        }
        tx.delete(cf::REVOCATIONS, key);
    }
    Ok(Ok(Applied::Done))
}
