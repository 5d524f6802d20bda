//! The pending request of a browser flow (authorize or device), carried from page to page
//! sealed in a hidden form field instead of a server-side session: a login on one node and
//! the consent post on another both work, and nothing is stored for abandoned flows.
//!
//! Sealed with a key derived from a key of the replicated token key ring (the primary seals;
//! any ring key opens, by the id in front), so every node opens what any node sealed and a
//! browser can neither read nor change it. The state names its domain, expires after ten
//! minutes, and after login carries the user and the time of that login, so a consent post
//! is bound to a login that really happened.
//!
//! CSRF: every form post must also carry a cookie (double submit) equal to the value sealed
//! in the state; the cookie is `HttpOnly`, `SameSite=Strict`, limited to the domain's
//! provider path, and `Secure` (with the `__Secure-` prefix) when the issuer is https.

use axum::http::HeaderMap;
use idnode_keys::TokenKeyRing;
use serde::{Deserialize, Serialize};

use super::html::PageError;
use crate::context::Core;
use crate::http::ApiError;
use crate::token::{sealed, Tokens};

/// Key derivation label and associated data of every sealed page state.
const PURPOSE: sealed::Purpose =
    sealed::Purpose { label: "idnode oauth2 page state v1", ad: b"idnode-oauth2-page-v1", max_len: MAX_SEALED };
/// Seconds a page state stays usable.
pub const LIFETIME_S: i64 = 600;
/// Sealed states longer than this are refused unread.
const MAX_SEALED: usize = 16 * 1024;

/// An authorization request that passed validation (`/authorize`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuthRequest {
    pub client_id: String,
    pub redirect_uri: String,
    pub scopes: Vec<String>,
    pub state: Option<String>,
    pub code_challenge: Option<String>,
    pub nonce: Option<String>,
    /// `prompt=consent`.
    pub force_consent: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Flow {
    Authorize(AuthRequest),
    /// A device grant by its normalized user code.
    Device {
        user_code: String,
    },
}

/// The user a login on the pages proved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Login {
    pub user_id: String,
    pub auth_time: i64,
    /// The user's `tokens_valid_after` when the password or passkey was checked: a change
    /// after it ends the sign-in (`cutoff::sign_in_cut_off`).
    pub cutoff_us: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageState {
    pub domain_id: String,
    /// Unix seconds after which the state is refused.
    pub exp: i64,
    /// The double-submit CSRF value (also in the cookie).
    pub csrf: String,
    pub flow: Flow,
    pub login: Option<Login>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum OpenError {
    /// Not sealed by a key of the ring, altered, or not a state.
    Invalid,
    Expired,
}

/// Seals `st` with the ring's primary key.
pub fn seal_with(ring: &TokenKeyRing, st: &PageState) -> Option<String> {
    sealed::seal(ring, &PURPOSE, st)
}

/// Opens a state sealed by any key of the ring and not expired at `now`.
pub fn open_with(ring: &TokenKeyRing, sealed: &str, now: i64) -> Result<PageState, OpenError> {
    let st: PageState = sealed::open(ring, &PURPOSE, sealed).ok_or(OpenError::Invalid)?;
    if now >= st.exp {
        return Err(OpenError::Expired);
    }
    Ok(st)
}

fn ring(node: &Tokens) -> Result<std::sync::Arc<TokenKeyRing>, PageError> {
    node.token_ring().map_err(|_| ApiError::unavailable("The cluster is not bootstrapped yet.").into())
}

/// Seals a state on this node.
pub fn seal(node: &Tokens, st: &PageState) -> Result<String, PageError> {
    seal_with(ring(node)?.as_ref(), st).ok_or_else(|| ApiError::internal("token key ring has no primary key").into())
}

/// Opens the state a form posted, for `domain_id`, and checks the post's CSRF cookie.
pub fn open(node: &Tokens, domain_id: &str, sealed: Option<&str>, headers: &HeaderMap) -> Result<PageState, PageError> {
    let sealed = sealed.ok_or_else(|| PageError::bad_request("The form is incomplete; start again."))?;
    let st = open_with(ring(node)?.as_ref(), sealed, crate::clock::now_secs()).map_err(|e| match e {
        OpenError::Expired => PageError::bad_request("This page has expired; start again from the application."),
        OpenError::Invalid => PageError::bad_request("The form is not valid; start again from the application."),
    })?;
    if st.domain_id != domain_id {
        return Err(PageError::bad_request("The form is not valid; start again from the application."));
    }
    if !csrf_matches(headers, cookie_name(node), &st.csrf) {
        return Err(PageError::bad_request(
            "The request could not be verified (missing or mismatched cookie). Enable cookies and start again.",
        ));
    }
    Ok(st)
}

/// A new page state for `flow` (no login yet), expiring in [`LIFETIME_S`].
pub fn fresh(domain_id: &str, csrf: String, flow: Flow) -> PageState {
    PageState { domain_id: domain_id.to_string(), exp: crate::clock::now_secs() + LIFETIME_S, csrf, flow, login: None }
}

/// The CSRF cookie's name: `__Secure-` prefixed (and `Secure`) when the issuer is https.
pub fn cookie_name(node: &Core) -> &'static str {
    if secure(node) {
        "__Secure-idnode_oauth2_csrf"
    } else {
        "idnode_oauth2_csrf"
    }
}

fn secure(node: &Core) -> bool {
    node.cfg.public_base().starts_with("https://")
}

pub use crate::web::cookie::{get as cookie, matches as csrf_matches};

/// The CSRF value for a new page: the request's own cookie when it has a well-formed one
/// (a second tab keeps the first one's working), else a fresh one.
pub fn csrf_for(node: &Core, headers: &HeaderMap) -> String {
    cookie(headers, cookie_name(node))
        .filter(|v| v.len() == 43 && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
        .unwrap_or_else(|| idnode_keys::random_token(32))
}

/// The `Set-Cookie` value that hands `csrf` to the browser for the domain's provider paths;
/// it outlives the login page's state and the consent page's after it.
pub fn set_cookie(node: &Core, domain_id: &str, csrf: &str) -> String {
    let secure = if secure(node) { "; Secure" } else { "" };
    format!(
        "{}={csrf}; Path={}; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        cookie_name(node),
        super::issuer::base_path(node, domain_id),
        2 * LIFETIME_S
    )
}

#[cfg(test)]
mod tests {
    use axum::http::{header, HeaderValue};
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;

    use super::*;

    fn state(exp: i64) -> PageState {
        PageState {
            domain_id: "d".into(),
            exp,
            csrf: "c".repeat(43),
            flow: Flow::Device { user_code: "ABCDEFGH".into() },
            login: Some(Login { user_id: "u".into(), auth_time: 5, cutoff_us: 7 }),
        }
    }

    #[test]
    fn sealed_state_round_trips_and_refuses_tampering_expiry_and_foreign_keys() {
        let mut ring = TokenKeyRing::generate(0);
        let st = state(1000);
        let sealed = seal_with(&ring, &st).unwrap();
        assert!(!sealed.contains("ABCDEFGH"), "the state is encrypted");
        assert_eq!(open_with(&ring, &sealed, 999).unwrap(), st);
        assert_eq!(open_with(&ring, &sealed, 1000), Err(OpenError::Expired));

        let mut raw = URL_SAFE_NO_PAD.decode(&sealed).unwrap();
        let last = raw.len() - 1;
        raw[last] ^= 1;
        assert_eq!(open_with(&ring, &URL_SAFE_NO_PAD.encode(&raw), 0), Err(OpenError::Invalid), "tampered");
        assert_eq!(open_with(&ring, "!!not base64", 0), Err(OpenError::Invalid));
        assert_eq!(open_with(&ring, "", 0), Err(OpenError::Invalid));
        assert_eq!(open_with(&TokenKeyRing::generate(0), &sealed, 0), Err(OpenError::Invalid), "another ring");

        // After a rotation the old primary (now secondary) still opens what it sealed.
        ring.rotate(idnode_keys::random_bytes(), 1, 1);
        assert_eq!(open_with(&ring, &sealed, 0).unwrap(), st);
        let newer = seal_with(&ring, &st).unwrap();
        assert_ne!(newer[..6], sealed[..6], "sealed under the new primary's id");
        assert_eq!(open_with(&ring, &newer, 0).unwrap(), st);
    }

    #[test]
    fn csrf_cookie_must_match_the_sealed_value() {
        let mut h = HeaderMap::new();
        assert!(!csrf_matches(&h, "n", "abc"), "no cookie");
        h.insert(header::COOKIE, HeaderValue::from_static("other=1; n=abd"));
        assert!(!csrf_matches(&h, "n", "abc"), "mismatch");
        assert!(!csrf_matches(&h, "n", ""), "an empty expectation never matches");
        h.insert(header::COOKIE, HeaderValue::from_static("other=1; n=abc"));
        assert!(csrf_matches(&h, "n", "abc"));
        assert!(!csrf_matches(&h, "m", "abc"), "another cookie's name");
    }
}
