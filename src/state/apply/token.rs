//! Token revocation events.

use super::super::command::{Applied, ApplyResult};
use super::super::model::Revocation;
use super::super::{cf, Reader, Tx};
use super::Fatal;

/// Records the audit ids as revoked until the token would have expired anyway, and drops a
/// few entries that are past their expiry (bounded work per command).
pub fn revoke(tx: &mut Tx<'_>, audit_ids: Vec<String>, expires_at: i64, now: i64) -> Result<ApplyResult, Fatal> {
    for id in audit_ids {
        tx.put(cf::REVOCATIONS, id.into_bytes(), &Revocation { expires_at, revoked_at: now })?;
    }
    let stale: Vec<Vec<u8>> = tx
        .scan_raw(cf::REVOCATIONS, b"")?
        .into_iter()
        .filter_map(|(k, v)| {
            let r: Revocation = idnode_storage::decode(&v).ok()?;
            (r.expires_at < now).then_some(k)
        })
        .take(64)
        .collect();
    for k in stale {
        tx.delete(cf::REVOCATIONS, k);
    }
    Ok(Ok(Applied::Done))
}
