//! The `totp` authentication method (Keystone's): the passcode of any of the user's `totp`
//! credentials, for the current 30-second step or one of `[totp] included_previous_windows`
//! before it. Unlike Keystone, a passcode works once: the step a user proved is replicated
//! (`Command::UseTotpStep`), so a captured code cannot be presented again on any node, nor
//! an older one of the same user. Failures count towards the account lockout as password
//! failures do, so guessing the six digits is bounded per account and (the route's rate
//! limit) per source.

use serde_json::Value;

use super::methods::{domain_enabled, fail, find_user, UNKNOWN_USER};
use super::proven::Proven;
use super::totp_code;
use crate::clock::now_micros;
use crate::http::error::{ApiError, ApiResult};
use crate::state::keys::ns;
use crate::state::{Command, Reader};
use crate::token::{Method, Tokens};

/// The credential type whose blob is a base32 TOTP secret.
pub const CREDENTIAL_TYPE: &str = "totp";

pub async fn authenticate(node: &Tokens, body: Option<&Value>) -> ApiResult<Proven> {
    let user =
        body.and_then(|b| b.get("user")).ok_or_else(|| ApiError::bad_request("'user' is a required property."))?;
    let given = user
        .get("passcode")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::bad_request("'passcode' is a required property."))?;
    let found = find_user(node, user)?.filter(|u| u.enabled);
    let keys = match &found {
        Some(u) => keys_of(node, &u.id)?,
        None => Vec::new(),
    };
    let now_s = u64::try_from(now_micros() / 1_000_000).unwrap_or_default();
    let step = totp_code::matching_step(&keys, given, now_s, node.cfg.totp_included_previous_windows);
    let locked = node.locked(found.as_ref().map_or("", |u| u.id.as_str()), found.as_ref())?;
    match (found, step) {
        (Some(u), Some(step)) if !locked && domain_enabled(node, &u)? => {
            // Check and record are one replicated step: of two requests with the same code,
            // whichever applies second is refused.
            match node.propose(Command::UseTotpStep { user_id: u.id.clone(), step }).await {
                Ok(_) => Ok(Proven::of(u, Method::Totp as u8, None)),
                Err(e) if e.status.is_server_error() => Err(e),
                Err(_) => {
                    tracing::info!(user_id = %u.id, "authentication refused: a TOTP passcode was presented again");
                    Err(fail(node, "totp"))
                }
            }
        }
        (Some(u), _) if locked => {
            tracing::info!(user_id = %u.id, "authentication refused: the account is locked");
            Err(fail(node, "totp"))
        }
        (Some(u), _) => {
            node.note_auth_failure(&u.id).await;
            Err(fail(node, "totp"))
        }
        (None, _) => {
            node.note_auth_failure(UNKNOWN_USER).await;
            Err(fail(node, "totp"))
        }
    }
}

/// The keys of the user's `totp` credentials that decode (others match nothing).
fn keys_of(node: &Tokens, user_id: &str) -> ApiResult<Vec<Vec<u8>>> {
    let view = node.engine.read();
    let mut keys = Vec::new();
    for id in view.member_ids(ns::CREDENTIALS_OF_USER, user_id)? {
        if let Some(c) = view.credential(&id)?.filter(|c| c.cred_type == CREDENTIAL_TYPE) {
            keys.extend(totp_code::secret(&c.blob));
        }
    }
    Ok(keys)
}
