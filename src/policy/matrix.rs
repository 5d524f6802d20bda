//! The authorization matrix: every served operation, called through the real router by each
//! of Keystone's personas, answers exactly the expected status. Adding an operation is one
//! line in `CASES`.
//!
//! Personas (columns, in this order): anonymous (no token), reader and member (project-scoped
//! on project pA of domain A), the manager of domain A (domain-scoped), the cloud admin
//! (scoped to the admin project, which counts as system scope) and the admin of domain B
//! (admin, hence manager, on domain B; domain-scoped).
//!
//! Path and body placeholders: `{dA}` `{dB}` `{pA}` `{pB}` fixtures; `{uM}` the member user
//! (domain A); `{self}` the caller's user id; `{self_token}` the caller's token (anonymous:
//! the member's); `{member_token}`; `{uniq}` a fresh name; `{scratch_project_A}`,
//! `{scratch_user_A}`, `{scratch_domain}` (disabled), `{scratch_token}`: created by the admin
//! just before the call, so allowed deletions do not disturb later rows.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Method, Request, StatusCode};
use serde_json::{json, Value};
use tower::ServiceExt;

use crate::config::{Config, Settings};
use crate::node::Node;
use crate::state::keys::{self, ns};
use crate::state::model::{ActorKind, Assignment, Target};
use crate::state::{cf, Reader, Tx};

const PERSONAS: [&str; 6] = ["anonymous", "reader", "member", "manager A", "admin", "admin B"];
const PASSWORD: &str = "correct horse battery";

/// Method, path (may carry `?query`), body, expected status per persona.
type Case = (Method, &'static str, Option<&'static str>, [u16; 6]);

#[rustfmt::skip]
const CASES: &[Case] = &[
    // Domains                                                         anon reader member mgrA admin admB
    (Method::GET, "/v3/domains", None,                                  [401, 403, 403, 403, 200, 403]),
    (Method::GET, "/v3/domains/{dA}", None,                             [401, 200, 200, 200, 200, 403]),
    (Method::GET, "/v3/domains/{dB}", None,                             [401, 403, 403, 403, 200, 200]),
    (Method::POST, "/v3/domains", Some(r#"{"domain": {"name": "{uniq}"}}"#), [401, 403, 403, 403, 201, 403]),
    (Method::PATCH, "/v3/domains/{dA}", Some(r#"{"domain": {"description": "x"}}"#), [401, 403, 403, 403, 200, 403]),
    (Method::DELETE, "/v3/domains/{scratch_domain}", None,              [401, 403, 403, 403, 204, 403]),
    // Projects
    (Method::GET, "/v3/projects", None,                                 [401, 403, 403, 200, 200, 200]),
    (Method::GET, "/v3/projects?domain_id={dA}", None,                  [401, 403, 403, 200, 200, 403]),
    (Method::GET, "/v3/projects/{pA}", None,                            [401, 200, 200, 200, 200, 403]),
    (Method::GET, "/v3/projects/{pB}", None,                            [401, 403, 403, 403, 200, 200]),
    (Method::POST, "/v3/projects", Some(r#"{"project": {"name": "{uniq}", "domain_id": "{dA}"}}"#), [401, 403, 403, 201, 201, 403]),
    (Method::POST, "/v3/projects", Some(r#"{"project": {"name": "{uniq}", "domain_id": "{dB}"}}"#), [401, 403, 403, 403, 201, 201]),
    (Method::PATCH, "/v3/projects/{pA}", Some(r#"{"project": {"description": "x"}}"#), [401, 403, 403, 200, 200, 403]),
    (Method::DELETE, "/v3/projects/{scratch_project_A}", None,          [401, 403, 403, 204, 204, 403]),
    // Users
    (Method::GET, "/v3/users", None,                                    [401, 403, 403, 200, 200, 200]),
    (Method::GET, "/v3/users?domain_id={dB}", None,                     [401, 403, 403, 403, 200, 200]),
    (Method::GET, "/v3/users/{self}", None,                             [401, 200, 200, 200, 200, 200]),
    (Method::GET, "/v3/users/{uM}", None,                               [401, 403, 200, 200, 200, 403]),
    (Method::POST, "/v3/users", Some(r#"{"user": {"name": "{uniq}", "domain_id": "{dA}", "password": "long enough pw"}}"#), [401, 403, 403, 201, 201, 403]),
    (Method::PATCH, "/v3/users/{scratch_user_A}", Some(r#"{"user": {"description": "x"}}"#), [401, 403, 403, 200, 200, 403]),
    (Method::DELETE, "/v3/users/{scratch_user_A}", None,                [401, 403, 403, 204, 204, 403]),
    // Tokens: validation needs the subject's owner, a reader of the system or a service;
    // revocation needs only the subject token itself.
    (Method::GET, "/v3/auth/tokens#{self_token}", None,                 [401, 200, 200, 200, 200, 200]),
    (Method::GET, "/v3/auth/tokens#{member_token}", None,               [401, 403, 200, 403, 200, 403]),
    (Method::HEAD, "/v3/auth/tokens#{member_token}", None,              [401, 403, 200, 403, 200, 403]),
    (Method::DELETE, "/v3/auth/tokens#{scratch_token}", None,           [204, 204, 204, 204, 204, 204]),
    (Method::GET, "/v3/auth/projects", None,                            [401, 200, 200, 200, 200, 200]),
    (Method::GET, "/v3/auth/catalog", None,                             [401, 200, 200, 200, 200, 200]),
];

/// A one-node cluster in this process, driven through the API router without sockets.
pub struct TestNode {
    _dir: tempfile::TempDir,
    pub node: Arc<Node>,
}

impl TestNode {
    pub async fn start(settings: &[(&str, &str, &str)]) -> TestNode {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Settings::default();
        s.set("idnode", "data_dir", dir.path().to_str().unwrap());
        s.set("idnode", "admin_password", PASSWORD);
        s.set("identity", "password_hash_memory_kib", "1024");
        s.set("identity", "password_hash_iterations", "1");
        s.set("raft", "heartbeat_ms", "50");
        s.set("raft", "election_timeout_min_ms", "150");
        s.set("raft", "election_timeout_max_ms", "300");
        for (section, key, value) in settings {
            s.set(section, key, value);
        }
        let node = crate::node::open(Config::from_settings(&s).unwrap()).await.unwrap();
        node.raft.initialize(node.cfg.members()).await.unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while let Err(e) = crate::identity::bootstrap::run(&node).await {
            assert!(std::time::Instant::now() < deadline, "bootstrap: {}", e.message);
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        TestNode { _dir: dir, node }
    }

    /// One request; `path` may end in `#TOKEN` to send it as X-Subject-Token.
    pub async fn call(&self, method: Method, path: &str, token: Option<&str>, body: Option<&Value>) -> Reply {
        let (path, subject) = match path.split_once('#') {
            Some((p, s)) => (p, Some(s)),
            None => (path, None),
        };
        let mut req = Request::builder().method(method).uri(path);
        if let Some(t) = token {
            req = req.header("x-auth-token", t);
        }
        if let Some(s) = subject {
            req = req.header("x-subject-token", s);
        }
        let body = match body {
            Some(b) => {
                req = req.header("content-type", "application/json");
                Body::from(b.to_string())
            }
            None => Body::empty(),
        };
        let mut req = req.body(body).unwrap();
        req.extensions_mut().insert(ConnectInfo(SocketAddr::from(([192, 0, 2, 1], 40000))));
        let resp = crate::http::router::api(self.node.clone()).oneshot(req).await.unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Reply { status, headers, body }
    }

    pub async fn token(&self, user_id: &str, scope: Value) -> String {
        let mut auth = json!({"identity": {"methods": ["password"],
            "password": {"user": {"id": user_id, "password": PASSWORD}}}});
        if !scope.is_null() {
            auth["scope"] = scope;
        }
        let r = self.call(Method::POST, "/v3/auth/tokens", None, Some(&json!({ "auth": auth }))).await;
        assert_eq!(r.status, StatusCode::OK, "token for {user_id}: {}", r.body);
        r.headers["x-subject-token"].to_str().unwrap().to_string()
    }

    async fn create(&self, admin: &str, path: &str, kind: &str, body: Value) -> String {
        let r = self.call(Method::POST, path, Some(admin), Some(&json!({ kind: body }))).await;
        assert_eq!(r.status, StatusCode::CREATED, "creating {kind}: {}", r.body);
        r.body[kind]["id"].as_str().unwrap().to_string()
    }

    /// Grants a role directly in storage: the grant API lives on another branch. Tokens
    /// issued afterwards see it.
    fn grant(&self, user_id: &str, target: Target, role: &str) {
        let role_id = self.node.engine.read().id_by_name(ns::ROLE_NAME, "", role).unwrap().unwrap();
        let a = Assignment { actor_kind: ActorKind::User, actor_id: user_id.into(), target, role_id, inherited: false };
        let mut batch = self.node.engine.batch();
        let mut tx = Tx { engine: &self.node.engine, batch: &mut batch };
        for k in keys::assignment_keys(&a) {
            tx.put(cf::ASSIGNMENTS, k, &a).unwrap();
        }
        self.node.engine.write(batch, true).unwrap();
    }
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: Value,
}

fn fill(template: &str, vars: &HashMap<&str, String>) -> String {
    vars.iter().fold(template.to_string(), |t, (k, v)| t.replace(&format!("{{{k}}}"), v))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_matrix() {
    let t = TestNode::start(&[("auth", "rate_limit_per_second", "0")]).await;
    let info = t.node.engine.read().bootstrap_info().unwrap().unwrap();
    let admin_token = t.token(&info.admin_user_id, json!({"project": {"id": info.admin_project_id}})).await;
    let admin = admin_token.as_str();

    let d_a = t.create(admin, "/v3/domains", "domain", json!({"name": "dom-a"})).await;
    let d_b = t.create(admin, "/v3/domains", "domain", json!({"name": "dom-b"})).await;
    let p_a = t.create(admin, "/v3/projects", "project", json!({"name": "pa", "domain_id": d_a})).await;
    let p_b = t.create(admin, "/v3/projects", "project", json!({"name": "pb", "domain_id": d_b})).await;
    let user = |name: &str, domain: &str| json!({"name": name, "domain_id": domain, "password": PASSWORD});
    let u_r = t.create(admin, "/v3/users", "user", user("reader", &d_a)).await;
    let u_m = t.create(admin, "/v3/users", "user", user("member", &d_a)).await;
    let u_dm = t.create(admin, "/v3/users", "user", user("manager", &d_a)).await;
    let u_ob = t.create(admin, "/v3/users", "user", user("admin-b", &d_b)).await;
    t.grant(&u_r, Target::Project(p_a.clone()), "reader");
    t.grant(&u_m, Target::Project(p_a.clone()), "member");
    t.grant(&u_dm, Target::Domain(d_a.clone()), "manager");
    t.grant(&u_ob, Target::Domain(d_b.clone()), "admin");

    let on_pa = json!({"project": {"id": p_a}});
    let tokens = [
        None,
        Some(t.token(&u_r, on_pa.clone()).await),
        Some(t.token(&u_m, on_pa.clone()).await),
        Some(t.token(&u_dm, json!({"domain": {"id": d_a}})).await),
        Some(admin_token.clone()),
        Some(t.token(&u_ob, json!({"domain": {"id": d_b}})).await),
    ];
    let users = [&u_m, &u_r, &u_m, &u_dm, &info.admin_user_id, &u_ob];
    let member_token = tokens[2].clone().unwrap();

    let mut failures = Vec::new();
    let mut n = 0;
    for (method, path, body, expected) in CASES {
        for (i, persona) in PERSONAS.iter().enumerate() {
            n += 1;
            let mut vars: HashMap<&str, String> = HashMap::from([
                ("dA", d_a.clone()),
                ("dB", d_b.clone()),
                ("pA", p_a.clone()),
                ("pB", p_b.clone()),
                ("uM", u_m.clone()),
                ("self", users[i].clone()),
                ("self_token", tokens[i].clone().unwrap_or_else(|| member_token.clone())),
                ("member_token", member_token.clone()),
                ("uniq", format!("case-{n}")),
            ]);
            let text = format!("{path} {}", body.unwrap_or(""));
            if text.contains("{scratch_project_A}") {
                let id = t.create(admin, "/v3/projects", "project", json!({"name": format!("s{n}"), "domain_id": d_a}));
                vars.insert("scratch_project_A", id.await);
            }
            if text.contains("{scratch_user_A}") {
                let id = t.create(admin, "/v3/users", "user", json!({"name": format!("s{n}"), "domain_id": d_a}));
                vars.insert("scratch_user_A", id.await);
            }
            if text.contains("{scratch_domain}") {
                let id = t.create(admin, "/v3/domains", "domain", json!({"name": format!("s{n}"), "enabled": false}));
                vars.insert("scratch_domain", id.await);
            }
            if text.contains("{scratch_token}") {
                vars.insert("scratch_token", t.token(&u_m, on_pa.clone()).await);
            }
            let body: Option<Value> = body.map(|b| serde_json::from_str(&fill(b, &vars)).unwrap());
            let r = t.call(method.clone(), &fill(path, &vars), tokens[i].as_deref(), body.as_ref()).await;
            if r.status.as_u16() != expected[i] {
                failures
                    .push(format!("{method} {path} as {persona}: {} (expected {}) {}", r.status, expected[i], r.body));
            }
        }
    }
    assert!(failures.is_empty(), "{} of {n} calls answered unexpectedly:\n{}", failures.len(), failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_issue_is_rate_limited_per_source() {
    let t = TestNode::start(&[("auth", "rate_limit_per_second", "1"), ("auth", "rate_limit_burst", "2")]).await;
    let bad = json!({"auth": {"identity": {"methods": ["password"],
        "password": {"user": {"id": "nobody", "password": "x"}}}}});
    for _ in 0..2 {
        let r = t.call(Method::POST, "/v3/auth/tokens", None, Some(&bad)).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    }
    let r = t.call(Method::POST, "/v4/auth/tokens", None, Some(&bad)).await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{}", r.body);
    assert_eq!(r.body["error"]["code"], 429);
    assert_eq!(r.body["error"]["title"], "Too Many Requests");
    let retry: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=2).contains(&retry), "{retry}");
    // Validation is not limited.
    let r = t.call(Method::GET, "/v3/auth/tokens#x", None, None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    let mut metrics = String::new();
    prometheus_client::encoding::text::encode(&mut metrics, &t.node.registry).unwrap();
    assert!(metrics.contains("idnode_rate_limited_total{route=\"/v4/auth/tokens\"} 1"), "{metrics}");
    for family in ["idnode_policy_decisions counter", "idnode_policy_evaluation_seconds histogram"] {
        assert!(metrics.contains(&format!("# TYPE {family}")), "{family} is registered");
    }
}
