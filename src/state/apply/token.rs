//! Token revocation events and the token key ring's rotation.

use idnode_keys::TokenKeyRing;

use super::super::cf;
use super::super::command::{Applied, ApplyError, ApplyResult};
use super::super::keys;
use super::super::model::Revocation;
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::fatal::Fatal;

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

/// The most keys an imported Keystone fernet repository may hold (Keystone's own
/// `max_active_keys` is 3 by default).
pub const MAX_KEYSTONE_FERNET_KEYS: usize = 32;

/// Stores (or, empty, forgets) an imported Keystone fernet key repository.
pub fn set_keystone_fernet_keys(tx: &mut Tx<'_>, keys: Vec<String>) -> Result<ApplyResult, Fatal> {
    if keys.is_empty() {
        tx.delete(cf::META, keys::META_KEYSTONE_FERNET.to_vec());
        return Ok(Ok(Applied::Done));
    }
    if keys.len() > MAX_KEYSTONE_FERNET_KEYS {
        return Ok(Err(ApplyError::Invalid(format!("at most {MAX_KEYSTONE_FERNET_KEYS} Keystone fernet keys"))));
    }
    if let Err(e) = idnode_keys::keystone_fernet::KeystoneFernetKeys::new(&keys) {
        return Ok(Err(ApplyError::Invalid(format!("a Keystone fernet key is not valid: {e}"))));
    }
    tx.put(cf::META, keys::META_KEYSTONE_FERNET.to_vec(), &keys)?;
    Ok(Ok(Applied::Done))
}

/// Stores (or, empty, forgets) Keystone's `[auth] methods`, whose order gives its tokens'
/// method bits. A mask has 64 bits at most.
pub fn set_keystone_auth_methods(tx: &mut Tx<'_>, methods: Vec<String>) -> Result<ApplyResult, Fatal> {
    if methods.is_empty() {
        tx.delete(cf::META, keys::META_KEYSTONE_AUTH_METHODS.to_vec());
        return Ok(Ok(Applied::Done));
    }
    if methods.len() > 64 || methods.iter().any(|m| m.is_empty() || m.len() > 255) {
        return Ok(Err(ApplyError::Invalid("Keystone's [auth] methods: at most 64 non-empty names".into())));
    }
    tx.put(cf::META, keys::META_KEYSTONE_AUTH_METHODS.to_vec(), &methods)?;
    Ok(Ok(Applied::Done))
}

/// Rotates the replicated token key ring (the staged key, known to every node since the last
/// rotation, starts issuing). The new secret was drawn by the proposing node.
pub fn rotate_keys(tx: &mut Tx<'_>, new_staged: [u8; 32], now: i64, max_secondary: u32) -> Result<ApplyResult, Fatal> {
    let Some(mut ring) = tx.get::<TokenKeyRing>(cf::META, keys::META_TOKEN_KEYS)? else {
        return Ok(Err(ApplyError::Invalid("the cluster has no token keys yet (not bootstrapped)".into())));
    };
    ring.rotate(new_staged, now, max_secondary as usize);
    tx.put(cf::META, keys::META_TOKEN_KEYS.to_vec(), &ring)?;
    rotate_out_keystone_keys(tx, &ring, max_secondary as usize)?;
    Ok(Ok(Applied::Done))
}

/// The cluster version from which a rotation also rotates out imported Keystone keys (an
/// older binary would keep them: replicas would differ).
pub const KEYSTONE_KEYS_ROTATE_VERSION: u32 = 12;

/// Imported Keystone fernet keys rotate like ours: the repository counts as one secondary,
/// older than every key of the ring, so it goes with the rotation that leaves the ring's own
/// secondaries filling `max_secondary` (with Keystone's default three keys, the first rotation
/// after the cut-over, as Keystone's own next rotation would have ended those tokens).
fn rotate_out_keystone_keys(tx: &mut Tx<'_>, ring: &TokenKeyRing, max_secondary: usize) -> Result<(), Fatal> {
    let version = idnode_raft::applied_cluster_version(tx.engine, tx.batch).map_err(Fatal::Codec)?;
    let ours = ring.keys.iter().filter(|k| k.state == idnode_keys::KeyState::Secondary).count();
    if version >= KEYSTONE_KEYS_ROTATE_VERSION && ours >= max_secondary {
        tx.delete(cf::META, keys::META_KEYSTONE_FERNET.to_vec());
    }
    Ok(())
}
