//! A user's OAuth2 sessions, the live refresh-token families the account page lists: when
//! one was last used, and ending them. A session is live while its family is neither revoked
//! nor past its absolute end, judged at the command's own time so every replica agrees.

use super::super::cf;
use super::super::command::{not_found, Applied, ApplyResult};
use super::super::oauth2::{keys, Client, OAuth2Applied, RefreshFamily};
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::super::read::OAuth2Reads;
use super::fatal::Fatal;
use super::passkeys::SELF_SERVICE_VERSION;

/// Records `at` (the refresh command's time, never this member's clock) as the family's last
/// use. Only from cluster version 15: a member of an older release writes nothing here, and
/// replicas must hold the same state.
pub(super) fn record_use(tx: &mut Tx<'_>, family_id: &str, at: i64) -> Result<(), Fatal> {
    let version = idnode_raft::applied_cluster_version(tx.engine, tx.batch).map_err(Fatal::Codec)?;
    if version >= SELF_SERVICE_VERSION {
        tx.put(cf::OAUTH2, keys::family_last_used(family_id), &at)?;
    }
    Ok(())
}

/// Revokes the named live family of `user_id`, or every live one with `None`.
pub(super) fn revoke_sessions(
    tx: &mut Tx<'_>,
    user_id: &str,
    family_id: Option<&str>,
    at: i64,
) -> Result<ApplyResult, Fatal> {
    match family_id {
        Some(id) => {
            let family = tx.get::<RefreshFamily>(cf::OAUTH2, &keys::family(id))?;
            let Some(f) = family.filter(|f| f.user_id == user_id && f.live(at)) else {
                return Ok(Err(not_found("session", id)));
            };
            // The list shows no session of a deleted client; neither is one found here.
            if tx.get::<Client>(cf::OAUTH2, &keys::client(&f.domain_id, &f.client_id))?.is_none() {
                return Ok(Err(not_found("session", id)));
            }
            revoke_family(tx, f, at)?;
        }
        None => {
            for f in tx.oauth2_user_families(user_id)? {
                if f.live(at) {
                    revoke_family(tx, f, at)?;
                }
            }
        }
    }
    Ok(Ok(Applied::OAuth2(OAuth2Applied::Done)))
}

pub(super) fn revoke_family(tx: &mut Tx<'_>, mut f: RefreshFamily, at: i64) -> Result<(), Fatal> {
    if f.revoked_at.is_none() {
        f.revoked_at = Some(at);
        tx.put(cf::OAUTH2, keys::family(&f.id), &f)?;
    }
    Ok(())
}
