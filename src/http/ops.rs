//! The ops listener: `/health` (liveness: fails only on fatal states), `/ready` (serving
//! traffic is safe) and `/metrics` (Prometheus text). A policy set that failed to load fails
//! both probes (the previous set keeps serving) until a reload succeeds.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use crate::node::Node;
use crate::state::Reader;

pub fn router(node: Arc<Node>) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/ready", get(ready))
        .route("/metrics", get(metrics))
        .with_state(node)
}

/// Component states as the spec names them: database, policy engine, distributed storage.
/// A node is ready once consensus is healthy and the cluster has been bootstrapped (before
/// that no one can authenticate).
fn components(node: &Node) -> (serde_json::Value, bool, bool) {
    let r = node.raft.readiness();
    let bootstrap = node.engine.read().bootstrap_info();
    let db_ok = bootstrap.is_ok();
    let bootstrapped = matches!(bootstrap, Ok(Some(_)));
    let mut reasons = r.reasons.clone();
    if !bootstrapped {
        reasons.push("the cluster is not bootstrapped yet".to_string());
    }
    let consensus = match (r.fatal, r.ok && bootstrapped) {
        (true, _) => "error",
        (false, true) => "ok",
        (false, false) => "warn",
    };
    let store = crate::policy::global();
    let policy = store.status();
    let body = json!({
        "database": {"status": if db_ok { "ok" } else { "error" }},
        "policy": match &policy {
            Ok(()) => json!({"status": "ok", "files": store.files()}),
            Err(message) => json!({"status": "error", "message": message, "files": store.files()}),
        },
        "consensus": {"status": consensus, "reasons": reasons},
    });
    let healthy = db_ok && policy.is_ok() && !r.fatal;
    let ready = healthy && r.ok && bootstrapped;
    (body, healthy, ready)
}

async fn health(State(node): State<Arc<Node>>) -> Response {
    let (c, healthy, _) = components(&node);
    let status = if healthy { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, Json(json!({"status": if healthy { "ok" } else { "error" }, "components": c}))).into_response()
}

async fn ready(State(node): State<Arc<Node>>) -> Response {
    let (c, _, ready) = components(&node);
    let status = if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, Json(json!({"status": if ready { "ready" } else { "not ready" }, "components": c}))).into_response()
}

async fn metrics(State(node): State<Arc<Node>>) -> Response {
    let mut out = String::new();
    match prometheus_client::encoding::text::encode(&mut out, &node.registry) {
        Ok(()) => ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], out)
            .into_response(),
        Err(e) => crate::http::ApiError::internal(e).into_response(),
    }
}
