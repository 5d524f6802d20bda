//! The ops listener: `/health` (liveness: fails only on fatal states), `/ready` (serving
//! traffic is safe) and `/metrics` (Prometheus text).
//!
//! Both probes answer one body (api-shapes §14): `status` is the worst component status
//! (`skipped` < `ok` < `warn` < `error`) and `components.{database,policy,raft}` each carry
//! `status` and `message`. `/health` is 503 only on `error`, `/ready` on `warn` or `error`.
//! A policy set that failed to load is a `warn` (the previous set keeps serving), so a bad
//! edit takes the node out of the load balancer but never gets it restarted.
//!
//! The probes name the failing component and a short generic reason, never file paths,
//! policy source or error text: the ops listener is often reachable by more people than the
//! node's log, and a compile error quotes paths and Rego. The detail is in the log, written
//! once where the failure happened (the policy store logs each failed load).

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::policy::PolicyStore;
use crate::serve::node::Node;
use crate::state::Reader;

/// What the probes say about a policy set that did not compile.
const POLICY_FAILED: &str = "the policy set failed to compile; the previous set is still in force; see the node's log";
/// What they say when no set ever compiled (not even the bundled one): everything is denied.
const POLICY_NONE: &str = "no policy set compiled; every request is denied; see the node's log";
/// What they say about a stopped consensus core (its error names storage paths).
const CONSENSUS_STOPPED: &str = "the consensus core stopped on a fatal error; see the node's log";
/// What they say about an unreadable database (the error names storage paths).
const DATABASE_FAILED: &str = "the database could not be read; see the node's log";
/// What they say before the cluster has been bootstrapped (no one can authenticate yet).
const NOT_BOOTSTRAPPED: &str = "the cluster is not bootstrapped yet";

/// The probes and metrics, open to anyone who reaches the listener; operator calls
/// (backups, keys, imports, the `idnode cluster` routes) behind the cluster credential.
pub fn router(node: Arc<Node>) -> Router {
    let operator = node
        .raft
        .backup_router()
        .merge(crate::rotation::routes::router(node.tokens.clone()))
        .merge(crate::import::routes::router(node.tokens.core.clone()))
        .merge(node.raft.cluster_ops_router());
    // Open: operator tools ask it to learn which member they sign for.
    let member_id = node.raft.member_id_router();
    Router::new()
        .route("/health", get(health))
        .route("/ready", get(ready))
        .route("/metrics", get(metrics))
        .with_state(node)
        .merge(operator)
        .merge(member_id)
}

/// A component status, ordered so the worst one is the greatest (api-shapes §14).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
enum Level {
    /// The component is not in use on this node (it never makes the node worse than `ok`).
    Skipped,
    Ok,
    Warn,
    Error,
}

/// One component of the body: its status and a short generic message (null when `ok`).
#[derive(Clone, Debug, PartialEq, Serialize)]
struct Component {
    status: Level,
    message: Option<String>,
}

impl Component {
    fn new(status: Level, message: Option<&str>) -> Component {
        Component { status, message: message.map(str::to_string) }
    }
}

/// Which probe is answering: they share the body and differ only in the status code.
#[derive(Clone, Copy, Debug)]
enum Probe {
    Health,
    Ready,
}

/// The components in the order the body shows them.
#[derive(Debug, Default)]
struct Report(Vec<(&'static str, Component)>);

impl Report {
    fn push(&mut self, name: &'static str, component: Component) {
        self.0.push((name, component));
    }

    /// The worst component status; `skipped` when every component is skipped (or none is).
    fn status(&self) -> Level {
        self.0.iter().map(|(_, c)| c.status).max().unwrap_or(Level::Skipped)
    }

    /// `/health` fails only on `error` (a restart may help); `/ready` on `warn` too.
    fn code(&self, probe: Probe) -> StatusCode {
        let failing = match probe {
            Probe::Health => self.status() >= Level::Error,
            Probe::Ready => self.status() >= Level::Warn,
        };
        if failing {
            StatusCode::SERVICE_UNAVAILABLE
        } else {
            StatusCode::OK
        }
    }

    fn body(&self) -> Value {
        let components: Map<String, Value> = self
            .0
            .iter()
            .map(|(name, c)| (name.to_string(), json!({"status": c.status, "message": c.message})))
            .collect();
        json!({"status": self.status(), "components": components})
    }

    fn respond(&self, probe: Probe) -> Response {
        (self.code(probe), Json(self.body())).into_response()
    }
}

/// The database: `error` when the node cannot read its own state.
fn database_component<T, E>(bootstrap: &Result<Option<T>, E>) -> Component {
    match bootstrap {
        Ok(_) => Component::new(Level::Ok, None),
        Err(_) => Component::new(Level::Error, Some(DATABASE_FAILED)),
    }
}

/// Distributed storage: `error` when the consensus core stopped (which also fails
/// `/health`), `warn` with the reasons while the node cannot serve (no leader, no quorum,
/// apply lag, divergence, not bootstrapped), `ok` otherwise.
fn raft_component(r: &idnode_raft::Readiness, bootstrapped: bool) -> Component {
    // Raft words a fatal stop as "raft stopped: <error>"; the error is replaced, not shown.
    let mut reasons: Vec<&str> =
        r.reasons.iter().map(String::as_str).filter(|why| !why.starts_with("raft stopped")).collect();
    if r.fatal {
        reasons.insert(0, CONSENSUS_STOPPED);
    }
    if !bootstrapped {
        reasons.push(NOT_BOOTSTRAPPED);
    }
    let status = match (r.fatal, r.ok && bootstrapped) {
        (true, _) => Level::Error,
        (false, true) => Level::Ok,
        (false, false) => Level::Warn,
    };
    let message = (!reasons.is_empty()).then(|| reasons.join("; "));
    Component { status, message }
}

/// The policy engine: `warn` when the last load failed (the previous set is still in force);
/// never `error`, since restarting would not fix a bad file. How many operator files are in
/// force is shown (a probe can confirm an override directory was loaded); which ones, only in
/// the log.
fn policy_component(store: &PolicyStore) -> Component {
    let files = store.files();
    let operator_files = files.iter().filter(|f| !f.starts_with("bundled:")).count();
    match store.status() {
        Err(_) if files.is_empty() => Component::new(Level::Warn, Some(POLICY_NONE)),
        Err(_) => Component::new(Level::Warn, Some(POLICY_FAILED)),
        Ok(()) => Component::new(Level::Ok, Some(&format!("{operator_files} operator policy file(s) in force"))),
    }
}

/// The relationship store (only with the store driver): a node whose store does not answer,
/// or that has not yet seen the bootstrap grants in it, cannot give scoped tokens their roles.
/// `warn`: it takes the node out of the load balancer, a restart would not help.
fn assignment_store_component<E: std::fmt::Display>(probe: Result<(), E>, seeded: bool) -> Component {
    match (probe, seeded) {
        (Ok(()), true) => Component::new(Level::Ok, None),
        (Ok(()), false) => Component::new(Level::Warn, Some("the bootstrap grants are not in the store yet")),
        (Err(e), _) => Component { status: Level::Warn, message: Some(e.to_string()) },
    }
}

/// The components every probe reports: database, policy engine, distributed storage.
fn components(node: &Node) -> Report {
    let bootstrap = node.engine.read().bootstrap_info();
    let bootstrapped = matches!(bootstrap, Ok(Some(_)));
    let mut report = Report::default();
    report.push("database", database_component(&bootstrap));
    report.push("policy", policy_component(crate::policy::global()));
    report.push("raft", raft_component(&node.raft.readiness(), bootstrapped));
    report
}

/// Liveness: the shared body without the relationship store, whose probe goes over the
/// network with retries (a slow store must not make a liveness check time out) and which
/// is never `error` anyway.
async fn health(State(node): State<Arc<Node>>) -> Response {
    components(&node).respond(Probe::Health)
}

async fn ready(State(node): State<Arc<Node>>) -> Response {
    let mut report = components(&node);
    if let Some(fga) = &node.fga {
        let seeded = fga.seeded.load(std::sync::atomic::Ordering::Relaxed);
        report.push("assignment_store", assignment_store_component(fga.client.probe().await, seeded));
    }
    report.respond(Probe::Ready)
}

async fn metrics(State(node): State<Arc<Node>>) -> Response {
    match node.metrics_text() {
        Ok(out) => ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], out)
            .into_response(),
        Err(e) => crate::http::ApiError::internal(e).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt;

    fn ok() -> Component {
        Component::new(Level::Ok, None)
    }

    fn report(levels: &[(&'static str, Level)]) -> Report {
        let mut r = Report::default();
        for (name, level) in levels {
            r.push(name, Component::new(*level, Some("why")));
        }
        r
    }

    fn readiness(ok: bool, fatal: bool, reasons: &[&str]) -> idnode_raft::Readiness {
        idnode_raft::Readiness { ok, fatal, reasons: reasons.iter().map(|r| r.to_string()).collect() }
    }

    #[test]
    fn the_top_status_is_the_worst_component_with_skipped_lowest() {
        use Level::*;
        assert_eq!(Report::default().status(), Skipped);
        for (levels, worst) in [
            (vec![Skipped, Skipped], Skipped),
            (vec![Skipped, Ok, Ok], Ok),
            (vec![Ok, Skipped], Ok),
            (vec![Ok, Warn, Skipped], Warn),
            (vec![Warn, Ok, Error], Error),
            (vec![Error, Skipped], Error),
        ] {
            let named: Vec<(&'static str, Level)> =
                levels.iter().zip(["database", "policy", "raft"]).map(|(l, n)| (n, *l)).collect();
            assert_eq!(report(&named).status(), worst, "{levels:?}");
        }
    }

    #[test]
    fn health_fails_only_on_error_and_ready_on_warn_too() {
        let unavailable = StatusCode::SERVICE_UNAVAILABLE;
        for (level, health, ready) in [
            (Level::Skipped, StatusCode::OK, StatusCode::OK),
            (Level::Ok, StatusCode::OK, StatusCode::OK),
            (Level::Warn, StatusCode::OK, unavailable),
            (Level::Error, unavailable, unavailable),
        ] {
            let r = report(&[("database", Level::Ok), ("raft", level)]);
            assert_eq!(r.code(Probe::Health), health, "{level:?}");
            assert_eq!(r.code(Probe::Ready), ready, "{level:?}");
        }
    }

    #[test]
    fn the_body_names_every_component_with_status_and_message() {
        let mut r = Report::default();
        r.push("database", ok());
        r.push("policy", Component::new(Level::Warn, Some(POLICY_FAILED)));
        r.push("raft", Component::new(Level::Skipped, None));
        assert_eq!(
            r.body(),
            json!({
                "status": "warn",
                "components": {
                    "database": {"status": "ok", "message": null},
                    "policy": {"status": "warn", "message": POLICY_FAILED},
                    "raft": {"status": "skipped", "message": null},
                }
            })
        );
    }

    #[test]
    fn database_is_ok_or_an_error_without_the_storage_error() {
        assert_eq!(database_component::<(), String>(&Ok(None)), ok());
        assert_eq!(database_component::<(), String>(&Ok(Some(()))), ok());
        let failed = database_component::<(), String>(&Err("IO error: /var/lib/idnode/db/CURRENT".into()));
        assert_eq!(failed, Component::new(Level::Error, Some(DATABASE_FAILED)));
    }

    #[test]
    fn raft_is_ok_warn_with_reasons_or_error_without_the_fatal_detail() {
        assert_eq!(raft_component(&readiness(true, false, &[]), true), ok());

        let lagging = raft_component(&readiness(false, false, &["no leader known", "apply lag 2000 entries"]), true);
        assert_eq!(lagging, Component::new(Level::Warn, Some("no leader known; apply lag 2000 entries")));

        let fresh = raft_component(&readiness(true, false, &[]), false);
        assert_eq!(fresh, Component::new(Level::Warn, Some(NOT_BOOTSTRAPPED)));

        let stopped = raft_component(
            &readiness(false, true, &["raft stopped: storage error at /data/raft/log", "no leader known"]),
            true,
        );
        assert_eq!(stopped.status, Level::Error);
        assert_eq!(stopped.message.as_deref(), Some(format!("{CONSENSUS_STOPPED}; no leader known").as_str()));
    }

    #[test]
    fn a_bad_policy_directory_is_a_warning_named_without_paths_or_policy_text() {
        let dir = tempfile::tempdir().unwrap();
        let secret_rule = "list_widgets_for_team_falcon";
        let bad = dir.path().join("falcon.rego");
        std::fs::write(&bad, format!("package identity\n\n{secret_rule} := if {{\n")).unwrap();
        let store = PolicyStore::bundled();
        assert_eq!(policy_component(&store), Component::new(Level::Ok, Some("0 operator policy file(s) in force")));
        let detail = store.configure(Some(dir.path().to_path_buf())).unwrap_err();
        assert!(detail.contains("falcon.rego"), "the store itself keeps the detail for the log: {detail}");

        let component = policy_component(&store);
        assert_eq!(component, Component::new(Level::Warn, Some(POLICY_FAILED)));
        let text = serde_json::to_string(&component).unwrap();
        let dir_text = dir.path().display().to_string();
        for leak in [dir_text.as_str(), "falcon", "rego", "package identity", secret_rule, "bundled:"] {
            assert!(!text.contains(leak), "{leak:?} in {text}");
        }
        assert!(!store.files().is_empty(), "the bundled set is still in force");

        // A warning keeps the node alive but out of the load balancer.
        let mut r = Report::default();
        r.push("database", ok());
        r.push("policy", component);
        r.push("raft", ok());
        assert_eq!(r.status(), Level::Warn);
        assert_eq!(r.code(Probe::Health), StatusCode::OK);
        assert_eq!(r.code(Probe::Ready), StatusCode::SERVICE_UNAVAILABLE);

        // A fixed file and a reload clear it.
        std::fs::write(&bad, "package identity\n").unwrap();
        store.reload().unwrap();
        assert_eq!(policy_component(&store), Component::new(Level::Ok, Some("1 operator policy file(s) in force")));
    }

    #[test]
    fn the_assignment_store_warns_until_it_answers_and_holds_the_bootstrap_grants() {
        assert_eq!(assignment_store_component::<String>(Ok(()), true), ok());
        assert_eq!(
            assignment_store_component::<String>(Ok(()), false),
            Component::new(Level::Warn, Some("the bootstrap grants are not in the store yet"))
        );
        let down = assignment_store_component(Err("store unavailable: 503"), true);
        assert_eq!(down, Component::new(Level::Warn, Some("store unavailable: 503")));
    }

    #[tokio::test]
    async fn a_bootstrapped_node_answers_both_probes_with_the_shared_body() {
        let t = crate::testkit::TestNode::start().await;
        let ops = router(t.node.clone());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        for path in ["/ready", "/health"] {
            let (status, body) = loop {
                let resp = ops.clone().oneshot(Request::get(path).body(Body::empty()).unwrap()).await.unwrap();
                let status = resp.status();
                let body: Value =
                    serde_json::from_slice(&axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap()).unwrap();
                if status == StatusCode::OK || std::time::Instant::now() > deadline {
                    break (status, body);
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            };
            assert_eq!(status, StatusCode::OK, "{path}: {body}");
            assert_eq!(body["status"], "ok", "{path}: {body}");
            let components = body["components"].as_object().unwrap();
            let names: Vec<&str> = components.keys().map(String::as_str).collect();
            assert_eq!(names, ["database", "policy", "raft"], "{path}: {body}");
            for (name, c) in components {
                assert_eq!(c["status"], "ok", "{path} {name}: {body}");
                assert!(c.as_object().unwrap().contains_key("message"), "{path} {name}: {body}");
            }
        }
    }
}
