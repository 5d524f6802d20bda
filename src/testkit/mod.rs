//! In-process test node: a bootstrapped one-node cluster in a temp dir and its API router,
//! driven with `tower::ServiceExt::oneshot` (no sockets). Reusable by any handler test.
//! `cluster` holds the same for several nodes talking raft over loopback; `fixtures` the model
//! values of tests that write state directly; `scim_setup` the bodies that set up a SCIM realm;
//! `listings` what every replica must list alike.

pub mod cluster;
pub mod fixtures;
pub mod listings;
pub mod openfga;
pub mod scim_setup;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Method, Request, StatusCode};
use axum::Router;
use serde_json::{json, Value};
use tower::ServiceExt;

use crate::config::{Config, Settings};
use crate::serve::node::Node;

/// The request methods by their bare names, for tests made of many requests.
pub mod methods {
    use axum::http::Method;

    pub const GET: Method = Method::GET;
    pub const POST: Method = Method::POST;
    pub const PUT: Method = Method::PUT;
    pub const PATCH: Method = Method::PATCH;
    pub const DELETE: Method = Method::DELETE;
    pub const HEAD: Method = Method::HEAD;
}

pub struct TestNode {
    pub node: Arc<Node>,
    pub router: Router,
    /// A token scoped to the admin project (system administrator).
    pub admin: String,
    _dir: tempfile::TempDir,
}

/// A response: status and JSON body (`Value::Null` when empty or not JSON).
pub struct Reply {
    pub status: StatusCode,
    pub body: Value,
    /// The body as text (for bodies that are not JSON).
    pub text: String,
    pub headers: axum::http::HeaderMap,
}

impl TestNode {
    pub async fn start() -> TestNode {
        Self::start_with(&[]).await
    }

    /// Like [`TestNode::start`], with extra `(section, key, value)` settings.
    pub async fn start_with(settings: &[(&str, &str, &str)]) -> TestNode {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut s = Settings::default();
        s.set("idnode", "data_dir", &dir.path().display().to_string());
        s.set("idnode", "admin_password", "secret");
        s.set("idnode", "listen", "127.0.0.1:5000");
        s.set("idnode", "peer_listen", "127.0.0.1:1");
        s.set("identity", "password_hash_memory_kib", "64");
        s.set("identity", "password_hash_iterations", "1");
        for (section, key, value) in settings {
            s.set(section, key, value);
        }
        let cfg = Config::from_settings(&s).expect("config");
        let node = crate::serve::startup::open(cfg).await.expect("open node");
        node.raft.initialize(node.cfg.members()).await.expect("initialize raft");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            match crate::identity::bootstrap::run(&node).await {
                Ok(_) => break,
                Err(e) if tokio::time::Instant::now() < deadline => {
                    tracing::debug!("bootstrap not yet possible: {}", e.message);
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(e) => panic!("bootstrap failed: {}", e.message),
            }
        }
        crate::identity::bootstrap::seed_store(&node).await.expect("bootstrap grants in the OpenFGA store");
        let router = crate::serve::router::api(node.clone());
        let mut t = TestNode { node, router, admin: String::new(), _dir: dir };
        t.admin = t.token("admin", "secret", json!({"project": {"name": "admin", "domain": {"id": "default"}}})).await;
        t
    }

    /// One request from a fixed client address; `path` may end in `#TOKEN` to send TOKEN as
    /// X-Subject-Token.
    pub async fn call(&self, method: Method, path: &str, token: Option<&str>, body: Option<Value>) -> Reply {
        send(&self.router, method, path, token, body).await
    }

    /// As the admin.
    pub async fn admin(&self, method: Method, path: &str, body: Option<Value>) -> Reply {
        self.call(method, path, Some(&self.admin), body).await
    }

    /// Issues a token for a Default-domain user with `scope` ("unscoped" or an object).
    pub async fn token(&self, user: &str, password: &str, scope: Value) -> String {
        let r = self.try_token(user, password, scope).await;
        assert_eq!(r.status, StatusCode::OK, "token for {user}: {}", r.body);
        r.headers.get("x-subject-token").and_then(|v| v.to_str().ok()).expect("subject token").to_string()
    }

    /// Issues a token for the user with this id (any domain); `scope` may be null (unscoped).
    pub async fn token_for_id(&self, user_id: &str, password: &str, scope: Value) -> String {
        let mut auth = json!({"identity": {"methods": ["password"],
            "password": {"user": {"id": user_id, "password": password}}}});
        if !scope.is_null() {
            auth["scope"] = scope;
        }
        let r = self.call(Method::POST, "/v3/auth/tokens", None, Some(json!({ "auth": auth }))).await;
        assert_eq!(r.status, StatusCode::OK, "token for {user_id}: {}", r.body);
        r.headers.get("x-subject-token").and_then(|v| v.to_str().ok()).expect("subject token").to_string()
    }

    pub async fn try_token(&self, user: &str, password: &str, scope: Value) -> Reply {
        let body = json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {"name": user, "domain": {"id": "default"}, "password": password}}},
            "scope": scope,
        }});
        self.call(Method::POST, "/v3/auth/tokens", None, Some(body)).await
    }

    /// Deletes `path` as the admin (204); the same delete then answers 404.
    pub async fn delete_then_gone(&self, path: &str) {
        assert_eq!(self.admin(Method::DELETE, path, None).await.status, StatusCode::NO_CONTENT, "DELETE {path}");
        assert_eq!(self.admin(Method::DELETE, path, None).await.status, StatusCode::NOT_FOUND, "DELETE {path} again");
    }

    /// An OIDC provider `provider_id` of `domain` (none: a global one) at `https://idp.example`;
    /// answers its id.
    pub async fn identity_provider(&self, domain: Option<&str>, provider_id: &str) -> String {
        let fields = json!({"domain_id": domain, "provider_id": provider_id, "issuer": "https://idp.example",
                            "client_id": "c", "jwks_uri": "https://idp.example/jwks"});
        self.create("/v4/federation/identity_providers", "identity_provider", fields).await
    }

    /// Creates an entity as the admin and returns its id (`kind` is the envelope key).
    pub async fn create(&self, path: &str, kind: &str, fields: Value) -> String {
        let r = self.admin(Method::POST, path, Some(json!({ kind: fields }))).await;
        assert_eq!(r.status, StatusCode::CREATED, "create {kind}: {}", r.body);
        r.body[kind]["id"].as_str().expect("id").to_string()
    }
}

/// One request to `router` from a fixed client address; `path` may end in `#TOKEN` to send
/// TOKEN as X-Subject-Token.
pub async fn send(router: &Router, method: Method, path: &str, token: Option<&str>, body: Option<Value>) -> Reply {
    let (path, subject) = match path.split_once('#') {
        Some((p, s)) => (p, Some(s)),
        None => (path, None),
    };
    let mut headers = Vec::new();
    if let Some(t) = token {
        headers.push(("x-auth-token", t));
    }
    if let Some(s) = subject {
        headers.push(("x-subject-token", s));
    }
    send_with_headers(router, method, path, &headers, body).await
}

/// One request with exactly these headers (and a JSON content type when there is a body).
pub async fn send_with_headers(
    router: &Router,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> Reply {
    send_content(router, method, path, headers, body.map(|b| ("application/json", b.to_string()))).await
}

/// One request with exactly these headers and, if any, a body of this `(content type, text)`.
pub async fn send_content(
    router: &Router,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    content: Option<(&str, String)>,
) -> Reply {
    let mut req = Request::builder().method(method).uri(path);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let mut req = match content {
        Some((content_type, text)) => req.header("content-type", content_type).body(Body::from(text)),
        None => req.body(Body::empty()),
    }
    .expect("request");
    req.extensions_mut().insert(ConnectInfo(SocketAddr::from(([192, 0, 2, 1], 40000))));
    let resp = router.clone().oneshot(req).await.expect("infallible");
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 24).await.expect("body");
    Reply {
        status,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        text: String::from_utf8_lossy(&bytes).into_owned(),
        headers,
    }
}
