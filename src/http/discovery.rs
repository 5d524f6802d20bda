//! Version discovery: `/`, `/v3`, `/v4`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::node::Node;

fn version(base: &str, id: &str, path: &str, status: &str) -> Value {
    json!({
        "id": id,
        "status": status,
        "updated": "2024-10-01T00:00:00Z",
        "links": [{"rel": "self", "href": format!("{base}/{path}/")}],
        "media-types": [{"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}],
    })
}

/// 200 with both versions; with `keystone_compat_status`, 300 Multiple Choices as Python
/// Keystone answers.
pub async fn root(State(node): State<Arc<Node>>) -> Response {
    let base = node.cfg.public_base();
    let body = json!({"versions": {"values": [version(&base, "v3.14", "v3", "stable"), version(&base, "v4.0", "v4", "experimental")]}});
    if node.cfg.keystone_compat_status {
        let mut r = (StatusCode::MULTIPLE_CHOICES, Json(body)).into_response();
        if let Ok(v) = format!("{base}/v3/").parse() {
            r.headers_mut().insert(header::LOCATION, v);
        }
        r
    } else {
        (StatusCode::OK, Json(body)).into_response()
    }
}

pub async fn v3(State(node): State<Arc<Node>>) -> Json<Value> {
    Json(json!({"version": version(&node.cfg.public_base(), "v3.14", "v3", "stable")}))
}

pub async fn v4(State(node): State<Arc<Node>>) -> Json<Value> {
    Json(json!({"version": version(&node.cfg.public_base(), "v4.0", "v4", "experimental")}))
}
