//! The public API called in-process, as the browser's signed-in user: a page that acts (the
//! account page) sends the very request a client would send, through the same router, so the
//! operation's policy, guard rails, validation, rate limits and lockout apply exactly as they
//! do to any client. There is no second authorization path.
//!
//! The router assembly hands the finished API router to the pages as a request extension
//! ([`InProcess`]); the pages' requests to it carry the browser's peer address and proxy
//! headers, so limits count the real source.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, HeaderMap, HeaderName, Method, Request, StatusCode};
use axum::Router;
use serde_json::Value;
use tower::ServiceExt;

/// The API's answers larger than this are not read (the pages read small documents).
const MAX_ANSWER: usize = 4 << 20;

/// The finished public API router, for the pages' in-process calls.
#[derive(Clone)]
pub struct InProcess(pub Router);

/// Who the browser is, as the API must see it on the pages' calls.
#[derive(Clone, Debug, Default)]
pub struct Caller {
    pub peer: Option<SocketAddr>,
    /// `Forwarded`, `X-Forwarded-For`, `X-Real-IP` and `Host` as the browser's request had
    /// them (the API trusts forwarded headers only from its configured proxies).
    pub headers: Vec<(HeaderName, axum::http::HeaderValue)>,
}

impl Caller {
    pub fn of(headers: &HeaderMap, peer: Option<SocketAddr>) -> Caller {
        let names = [
            header::FORWARDED,
            HeaderName::from_static("x-forwarded-for"),
            HeaderName::from_static("x-real-ip"),
            header::HOST,
        ];
        let headers =
            names.iter().flat_map(|n| headers.get_all(n).iter().map(move |v| (n.clone(), v.clone()))).collect();
        Caller { peer, headers }
    }
}

/// The API's answer.
#[derive(Debug)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Reply {
    pub fn ok(&self) -> bool {
        self.status.is_success()
    }

    /// Keystone's error message (`error.message`), or the status's reason.
    pub fn message(&self) -> String {
        self.body
            .pointer("/error/message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| self.status.canonical_reason().unwrap_or("Error").to_string())
    }

    pub fn subject_token(&self) -> Option<String> {
        self.headers.get("x-subject-token").and_then(|v| v.to_str().ok()).map(str::to_string)
    }
}

impl InProcess {
    /// `method path` with `body` (JSON) and the user's `token`, as `caller`.
    pub async fn call(
        &self,
        caller: &Caller,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<&Value>,
    ) -> Reply {
        self.send(caller, method, path, token, &[], body).await
    }

    /// [`Self::call`] with extra request headers (`X-Subject-Token`).
    pub async fn send(
        &self,
        caller: &Caller,
        method: Method,
        path: &str,
        token: Option<&str>,
        extra: &[(&'static str, &str)],
        body: Option<&Value>,
    ) -> Reply {
        let mut b = Request::builder().method(method).uri(path).header(header::ACCEPT, "application/json");
        for (n, v) in &caller.headers {
            b = b.header(n, v);
        }
        if let Some(t) = token {
            b = b.header("x-auth-token", t);
        }
        for (n, v) in extra {
            b = b.header(*n, *v);
        }
        let bytes = match body {
            Some(v) => {
                b = b.header(header::CONTENT_TYPE, "application/json");
                serde_json::to_vec(v).unwrap_or_default()
            }
            None => Vec::new(),
        };
        let mut req = match b.body(Body::from(bytes)) {
            Ok(r) => r,
            Err(e) => return failed(&format!("the request could not be built: {e}")),
        };
        if let Some(peer) = caller.peer {
            req.extensions_mut().insert(ConnectInfo(peer));
        }
        let resp = match self.0.clone().oneshot(req).await {
            Ok(r) => r,
            Err(never) => match never {},
        };
        let (parts, body) = resp.into_parts();
        let body = match axum::body::to_bytes(body, MAX_ANSWER).await {
            Ok(b) if b.is_empty() => Value::Null,
            Ok(b) => serde_json::from_slice(&b).unwrap_or(Value::Null),
            Err(e) => return failed(&format!("the answer could not be read: {e}")),
        };
        Reply { status: parts.status, headers: parts.headers, body }
    }
}

fn failed(why: &str) -> Reply {
    tracing::error!(why, "an in-process API call failed");
    Reply {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        headers: HeaderMap::new(),
        body: serde_json::json!({"error": {"code": 500, "message": "An unexpected error prevented the server from fulfilling your request.", "title": "Internal Server Error"}}),
    }
}
