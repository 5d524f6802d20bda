//! Errors of the OAuth2 endpoints, rendered as RFC 6749 §5.2 bodies
//! (`{"error", "error_description"}`), never Keystone's envelope and never a 500 body that
//! leaks internals. Userinfo's errors also carry RFC 6750's `WWW-Authenticate`.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use crate::http::ApiError;

#[derive(Debug)]
pub struct OAuthError {
    pub status: StatusCode,
    pub error: &'static str,
    pub description: String,
    pub www_authenticate: Option<String>,
    pub retry_after: Option<u64>,
}

pub type OAuthResult<T> = Result<T, OAuthError>;

impl OAuthError {
    pub fn new(status: StatusCode, error: &'static str, description: impl Into<String>) -> Self {
        OAuthError { status, error, description: description.into(), www_authenticate: None, retry_after: None }
    }
    pub fn invalid_request(d: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", d)
    }
    /// 401 with a `Basic` challenge (RFC 6749 §5.2: the client tried HTTP Basic or may).
    pub fn invalid_client(d: impl Into<String>) -> Self {
        let mut e = Self::new(StatusCode::UNAUTHORIZED, "invalid_client", d);
        e.www_authenticate = Some("Basic realm=\"oauth2\"".into());
        e
    }
    pub fn invalid_grant(d: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_grant", d)
    }
    pub fn invalid_scope(d: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_scope", d)
    }
    pub fn unauthorized_client(d: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "unauthorized_client", d)
    }
    pub fn unsupported_grant_type(d: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "unsupported_grant_type", d)
    }
    pub fn invalid_target(d: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_target", d)
    }
    pub fn not_found(d: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "invalid_request", d)
    }
    pub fn rate_limited(retry_after: u64) -> Self {
        let mut e = Self::new(StatusCode::TOO_MANY_REQUESTS, "invalid_request", "Too many requests; retry later.");
        e.retry_after = Some(retry_after);
        e
    }
    /// RFC 6750 §3: 401 `invalid_token` for a bad bearer token.
    pub fn invalid_token(d: impl Into<String>) -> Self {
        let mut e = Self::new(StatusCode::UNAUTHORIZED, "invalid_token", d);
        e.www_authenticate = Some("Bearer error=\"invalid_token\"".into());
        e
    }
}

/// No cache may keep the answer: it carries or describes a credential (RFC 6749 §5.1).
fn no_store(h: &mut HeaderMap) {
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

/// A JSON answer with `Cache-Control: no-store`.
pub fn json_no_store(v: Value) -> Response {
    let mut resp = axum::Json(v).into_response();
    no_store(resp.headers_mut());
    resp
}

/// [`json_no_store`], and `Pragma: no-cache` for HTTP/1.0 caches (the token and device
/// authorization responses, RFC 6749 §5.1, RFC 8628 §3.2).
pub fn json_no_cache(v: Value) -> Response {
    let mut resp = json_no_store(v);
    resp.headers_mut().insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    resp
}

impl IntoResponse for OAuthError {
    fn into_response(self) -> Response {
        let body =
            super::schemas::OAuthErrorBody { error: self.error.to_string(), error_description: self.description };
        let mut resp = (self.status, axum::Json(body)).into_response();
        let h = resp.headers_mut();
        no_store(h);
        if let Some(v) = self.www_authenticate.and_then(|v| HeaderValue::from_str(&v).ok()) {
            h.insert(header::WWW_AUTHENTICATE, v);
        }
        if let Some(v) = self.retry_after.and_then(|s| HeaderValue::from_str(&s.to_string()).ok()) {
            h.insert(header::RETRY_AFTER, v);
        }
        resp
    }
}

/// Failures below the OAuth2 layer (storage, consensus): 503 stays 503 (retry elsewhere),
/// the rest is a `server_error` without internals (the cause is logged by `ApiError`).
impl From<ApiError> for OAuthError {
    fn from(e: ApiError) -> Self {
        let mut out = match e.status {
            StatusCode::SERVICE_UNAVAILABLE => {
                OAuthError::new(StatusCode::SERVICE_UNAVAILABLE, "temporarily_unavailable", e.message)
            }
            StatusCode::NOT_FOUND => OAuthError::not_found(e.message),
            s if s.is_client_error() => OAuthError::invalid_request(e.message),
            _ => OAuthError::new(StatusCode::INTERNAL_SERVER_ERROR, "server_error", e.message),
        };
        out.retry_after = e.retry_after;
        out
    }
}

impl From<idnode_storage::StorageError> for OAuthError {
    fn from(e: idnode_storage::StorageError) -> Self {
        ApiError::internal(e).into()
    }
}
