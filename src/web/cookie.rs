//! Cookies of the pages: read one from a request, write one with the attributes every page
//! cookie carries (`HttpOnly`, `SameSite=Strict`, a path, and `Secure` with the `__Secure-`
//! prefix when the service is reached over https), and compare secrets in constant time.

use axum::http::{header, HeaderMap};
use idnode_keys::constant_time_eq;

/// The value of cookie `name` in the request, if any.
pub fn get(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim().to_string())
}

/// Whether cookie `name` equals `expected` (constant time; an empty expectation never does).
pub fn matches(headers: &HeaderMap, name: &str, expected: &str) -> bool {
    match get(headers, name) {
        Some(v) => !expected.is_empty() && constant_time_eq(v.as_bytes(), expected.as_bytes()),
        None => false,
    }
}

/// A cookie's name: `__Secure-` prefixed when `secure`.
pub fn name(base: &str, secure: bool) -> String {
    if secure {
        format!("__Secure-{base}")
    } else {
        base.to_string()
    }
}

/// The `Set-Cookie` value; `max_age` 0 removes the cookie.
pub fn set(name: &str, value: &str, path: &str, max_age: i64, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{name}={value}; Path={path}; HttpOnly; SameSite=Strict; Max-Age={}{secure}", max_age.max(0))
}
