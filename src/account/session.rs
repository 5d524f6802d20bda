//! The account page's sign-in: the user's own API token, sealed into an `HttpOnly`,
//! `SameSite=Strict` cookie limited to the domain's account path (`Secure`, `__Secure-`
//! prefixed, over https). Sealed with a key of the replicated token key ring, so any member
//! opens what any member sealed, and the browser can neither read the token nor change the
//! session. The session names its domain and carries a CSRF value every form posts back.
//!
//! Before sign-in, a separate cookie holds the sign-in forms' CSRF value (double submit), so a
//! page of another site cannot sign a browser into someone else's account.

use axum::http::{header, HeaderMap};
use idnode_keys::constant_time_eq;
use serde::{Deserialize, Serialize};

use crate::context::Core;
use crate::http::ApiError;
use crate::token::{sealed, Tokens};
use crate::web::{cookie, PageError};

const PURPOSE: sealed::Purpose =
    sealed::Purpose { label: "idnode account session v1", ad: b"idnode-account-session-v1", max_len: 16 * 1024 };

/// The longest a session lasts, whatever its token's lifetime.
pub const MAX_LIFETIME_S: i64 = 8 * 3600;
/// The sign-in forms' CSRF cookie lasts this long.
const LOGIN_LIFETIME_S: i64 = 3600;

/// A signed-in browser.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    pub domain_id: String,
    pub user_id: String,
    pub user_name: String,
    /// The user's unscoped API token: every action of the page is an API call with it.
    pub token: String,
    /// Posted back by every form of the session, compared in constant time.
    pub csrf: String,
    /// Unix seconds: the token's expiry, at most [`MAX_LIFETIME_S`] after sign-in.
    pub exp: i64,
}

/// Where the account page of `domain_id` lives (its cookies' path).
pub fn base(domain_id: &str) -> String {
    format!("/v4/account/{domain_id}")
}

fn secure(node: &Core) -> bool {
    node.cfg.public_base().starts_with("https://")
}

fn session_cookie(node: &Core) -> String {
    cookie::name("idnode_account", secure(node))
}

fn login_cookie(node: &Core) -> String {
    cookie::name("idnode_account_login", secure(node))
}

fn ring(node: &Tokens) -> Result<std::sync::Arc<idnode_keys::TokenKeyRing>, PageError> {
    node.token_ring().map_err(|_| ApiError::unavailable("The cluster is not bootstrapped yet.").into())
}

/// The request's session for `domain_id`, if it has a valid, unexpired one of that domain.
pub fn open(node: &Tokens, domain_id: &str, headers: &HeaderMap) -> Option<Session> {
    let raw = cookie::get(headers, &session_cookie(node))?;
    let ring = ring(node).ok()?;
    let s: Session = sealed::open(&ring, &PURPOSE, &raw)?;
    (s.domain_id == domain_id && crate::clock::now_secs() < s.exp).then_some(s)
}

/// The `Set-Cookie` value that signs the browser in with `s`.
pub fn start(node: &Tokens, s: &Session) -> Result<String, PageError> {
    let sealed = sealed::seal(&*ring(node)?, &PURPOSE, s)
        .ok_or_else(|| PageError::from(ApiError::internal("token key ring has no primary key")))?;
    let max_age = s.exp - crate::clock::now_secs();
    Ok(cookie::set(&session_cookie(node), &sealed, &base(&s.domain_id), max_age, secure(node)))
}

/// The `Set-Cookie` value that signs the browser out.
pub fn end(node: &Core, domain_id: &str) -> String {
    cookie::set(&session_cookie(node), "", &base(domain_id), 0, secure(node))
}

/// The sign-in forms' CSRF value: the request's cookie when it has a well-formed one (a
/// second tab keeps the first working), else a fresh one; with its `Set-Cookie`.
pub fn login_csrf(node: &Core, domain_id: &str, headers: &HeaderMap) -> (String, String) {
    let value = cookie::get(headers, &login_cookie(node))
        .filter(|v| v.len() == 43 && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
        .unwrap_or_else(|| idnode_keys::random_token(32));
    let set = cookie::set(&login_cookie(node), &value, &base(domain_id), LOGIN_LIFETIME_S, secure(node));
    (value, set)
}

/// A sign-in form's post: its CSRF field equals the cookie.
pub fn login_posted(node: &Core, headers: &HeaderMap, field: Option<&str>) -> Result<(), PageError> {
    match field {
        Some(f) if cookie::matches(headers, &login_cookie(node), f) => Ok(()),
        _ => Err(PageError::forbidden(
            "The request could not be verified (missing or mismatched cookie). Enable cookies and try again.",
        )),
    }
}

/// A signed-in form's post: same origin, and its CSRF field is the session's.
pub fn posted(node: &Core, s: &Session, headers: &HeaderMap, field: Option<&str>) -> Result<(), PageError> {
    same_origin(node, headers)?;
    match field {
        Some(f) if !s.csrf.is_empty() && constant_time_eq(f.as_bytes(), s.csrf.as_bytes()) => Ok(()),
        _ => Err(PageError::forbidden("The form is not valid for this session. Reload the page and try again.")),
    }
}

/// A post must come from a page of this service: the browser's `Sec-Fetch-Site` says it is
/// not cross-site, and its `Origin`, when sent, is the service's public origin or the origin
/// of the host the request went to.
///
/// The pages are served with `Referrer-Policy: no-referrer`, under which Chromium sends
/// `Origin: null` with a form's post even to its own origin: an opaque origin is accepted
/// exactly when the browser's `Sec-Fetch-Site` says `same-origin` (a sandboxed frame or a
/// page of another site sends `null` too, but never with `same-origin`).
pub fn same_origin(node: &Core, headers: &HeaderMap) -> Result<(), PageError> {
    let refuse = || Err(PageError::forbidden("The form was posted from another site."));
    let site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    if let Some(site) = site {
        if site != "same-origin" && site != "none" {
            return refuse();
        }
    }
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return Ok(());
    };
    if origin == "null" {
        return if site == Some("same-origin") { Ok(()) } else { refuse() };
    }
    let public = crate::web::page::origin_of(&node.cfg.public_base());
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let host_of = |o: &str| o.split_once("://").map(|(_, h)| h.to_string());
    let ok = public.as_deref() == Some(origin) || (host.is_some() && host_of(origin).as_deref() == host);
    if ok {
        Ok(())
    } else {
        refuse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use idnode_keys::TokenKeyRing;

    #[test]
    fn a_session_is_sealed_and_bound_to_its_purpose() {
        let ring = TokenKeyRing::generate(0);
        let s = Session {
            domain_id: "d".into(),
            user_id: "u".into(),
            user_name: "ada".into(),
            token: "secret-token".into(),
            csrf: "c".into(),
            exp: 10,
        };
        let sealed = sealed::seal(&ring, &PURPOSE, &s).unwrap();
        assert!(!sealed.contains("secret-token"));
        assert_eq!(sealed::open::<Session>(&ring, &PURPOSE, &sealed), Some(s));
        let other =
            sealed::Purpose { label: "idnode oauth2 page state v1", ad: b"idnode-oauth2-page-v1", max_len: 16384 };
        assert_eq!(sealed::open::<Session>(&ring, &other, &sealed), None, "another purpose's key");
    }
}
