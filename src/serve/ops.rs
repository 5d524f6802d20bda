//! The ops listener: `/health` (liveness: fails only on fatal states), `/ready` (serving
//! traffic is safe) and `/metrics` (Prometheus text). A policy set that failed to load fails
//! both probes (the previous set keeps serving) until a reload succeeds.
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
use serde_json::json;

use crate::policy::PolicyStore;
use crate::serve::node::Node;
use crate::state::Reader;

/// What the probes say about a policy set that did not compile.
const POLICY_FAILED: &str = "the policy set failed to compile; the previous set is still in force; see the node's log";
/// What they say about a stopped consensus core (its error names storage paths).
const CONSENSUS_STOPPED: &str = "the consensus core stopped on a fatal error; see the node's log";

/// The probes and metrics, open to anyone who reaches the listener; operator calls
/// (backups) behind the cluster credential.
pub fn router(node: Arc<Node>) -> Router {
    let operator = node.raft.backup_router().merge(crate::rotation::routes::router(node.tokens.clone()));
    Router::new()
        .route("/health", get(health))
        .route("/ready", get(ready))
        .route("/metrics", get(metrics))
        .with_state(node)
        .merge(operator)
}

/// Component states as the spec names them: database, policy engine, distributed storage.
/// A node is ready once consensus is healthy and the cluster has been bootstrapped (before
/// that no one can authenticate).
fn components(node: &Node) -> (serde_json::Value, bool, bool) {
    let r = node.raft.readiness();
    let bootstrap = node.engine.read().bootstrap_info();
    let db_ok = bootstrap.is_ok();
    let bootstrapped = matches!(bootstrap, Ok(Some(_)));
    // Raft words a fatal stop as "raft stopped: <error>"; the error is replaced, not shown.
    let mut reasons: Vec<String> = r.reasons.iter().filter(|why| !why.starts_with("raft stopped")).cloned().collect();
    if r.fatal {
        reasons.insert(0, CONSENSUS_STOPPED.to_string());
    }
    if !bootstrapped {
        reasons.push("the cluster is not bootstrapped yet".to_string());
    }
    let consensus = match (r.fatal, r.ok && bootstrapped) {
        (true, _) => "error",
        (false, true) => "ok",
        (false, false) => "warn",
    };
    let (policy, policy_ok) = policy_component(crate::policy::global());
    let body = json!({
        "database": {"status": if db_ok { "ok" } else { "error" }},
        "policy": policy,
        "consensus": {"status": consensus, "reasons": reasons},
    });
    let healthy = db_ok && policy_ok && !r.fatal;
    let ready = healthy && r.ok && bootstrapped;
    (body, healthy, ready)
}

/// The policy component and whether it is healthy. How many operator files are in force is
/// shown (a probe can confirm an override directory was loaded); which ones, only in the log.
fn policy_component(store: &PolicyStore) -> (serde_json::Value, bool) {
    let operator_files = store.files().iter().filter(|f| !f.starts_with("bundled:")).count();
    match store.status() {
        Ok(()) => (json!({"status": "ok", "operator_files": operator_files}), true),
        Err(_) => (json!({"status": "error", "reason": POLICY_FAILED}), false),
    }
}

async fn health(State(node): State<Arc<Node>>) -> Response {
    let (c, healthy, _) = components(&node);
    let status = if healthy { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, Json(json!({"status": if healthy { "ok" } else { "error" }, "components": c}))).into_response()
}

async fn ready(State(node): State<Arc<Node>>) -> Response {
    let (mut c, _, mut ready) = components(&node);
    if let Some(fga) = &node.fga {
        // Scoped tokens take their roles from the store: without it the node cannot serve.
        let seeded = fga.seeded.load(std::sync::atomic::Ordering::Relaxed);
        let store = match (fga.client.probe().await, seeded) {
            (Ok(()), true) => json!({"status": "ok"}),
            (Ok(()), false) => {
                ready = false;
                json!({"status": "warn", "reasons": ["the bootstrap grants are not in the store yet"]})
            }
            (Err(e), _) => {
                ready = false;
                json!({"status": "warn", "reasons": [e.to_string()]})
            }
        };
        c["assignment_store"] = store;
    }
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, Json(json!({"status": if ready { "ready" } else { "not ready" }, "components": c}))).into_response()
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

    #[test]
    fn a_bad_policy_directory_is_named_without_paths_or_policy_text() {
        let dir = tempfile::tempdir().unwrap();
        let secret_rule = "list_widgets_for_team_falcon";
        std::fs::write(dir.path().join("falcon.rego"), format!("package identity\n\n{secret_rule} := if {{\n"))
            .unwrap();
        let store = PolicyStore::bundled();
        assert_eq!(policy_component(&store), (json!({"status": "ok", "operator_files": 0}), true));
        let detail = store.configure(Some(dir.path().to_path_buf())).unwrap_err();
        assert!(detail.contains("falcon.rego"), "the store itself keeps the detail for the log: {detail}");

        let (component, ok) = policy_component(&store);
        assert!(!ok);
        assert_eq!(component["status"], "error");
        assert_eq!(component["reason"], POLICY_FAILED);
        let text = component.to_string();
        let dir_text = dir.path().display().to_string();
        for leak in [dir_text.as_str(), "falcon", "rego", "package identity", secret_rule, "bundled:"] {
            assert!(!text.contains(leak), "{leak:?} in {text}");
        }
    }
}
