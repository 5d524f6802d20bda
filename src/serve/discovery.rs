//! Version discovery: `/`, `/v3`, `/v4`.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use utoipa::ToSchema;

use crate::context::Core;

/// One API version, as Keystone describes it.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only
pub struct Version {
    #[schema(example = "v3.14")]
    id: String,
    /// `stable` or `experimental`.
    status: String,
    updated: String,
    links: Vec<VersionLink>,
    #[schema(rename = "media-types")]
    media_types: Vec<MediaType>,
    /// The build serving it (an idnode extension; Keystone's clients ignore it).
    build: BuildInfo,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct BuildInfo {
    #[schema(example = "0.2.0")]
    version: String,
    /// The git commit the binary was built from, or `unknown`.
    commit: String,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct VersionLink {
    rel: String,
    href: String,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct MediaType {
    base: String,
    #[schema(rename = "type")]
    media_type: String,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Versions {
    versions: VersionValues,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct VersionValues {
    values: Vec<Version>,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct SingleVersion {
    version: Version,
}

fn version(base: &str, id: &str, path: &str, status: &str) -> Value {
    json!({
        "id": id,
        "status": status,
        "updated": "2024-10-01T00:00:00Z",
        "links": [{"rel": "self", "href": format!("{base}/{path}/")}],
        "media-types": [{"base": "application/json", "type": "application/vnd.openstack.identity-v3+json"}],
        "build": {"version": crate::build_info::VERSION, "commit": crate::build_info::COMMIT},
    })
}

/// 200 with both versions; with `keystone_compat_status`, 300 Multiple Choices as Python
/// Keystone answers.
#[utoipa::path(get, path = "/", tag = "discovery",
    security(()),
    responses((status = 200, description = "Both API versions.", body = Versions),
              (status = 300, description = "Both API versions, with `Location: <base>/v3/`, when `keystone_compat_status` is set.", body = Versions)))]
pub async fn root(State(node): State<Arc<Core>>) -> Response {
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

#[utoipa::path(get, path = "/v3", tag = "discovery",
    security(()),
    responses((status = 200, description = "The v3 API version.", body = SingleVersion)))]
pub async fn v3(State(node): State<Arc<Core>>) -> Json<Value> {
    Json(json!({"version": version(&node.cfg.public_base(), "v3.14", "v3", "stable")}))
}

#[utoipa::path(get, path = "/v3/", tag = "discovery",
    security(()),
    responses((status = 200, description = "The v3 API version.", body = SingleVersion)))]
pub async fn v3_slash(node: State<Arc<Core>>) -> Json<Value> {
    v3(node).await
}

#[utoipa::path(get, path = "/v4", tag = "discovery",
    security(()),
    responses((status = 200, description = "The v4 API version.", body = SingleVersion)))]
pub async fn v4(State(node): State<Arc<Core>>) -> Json<Value> {
    Json(json!({"version": version(&node.cfg.public_base(), "v4.0", "v4", "experimental")}))
}

#[utoipa::path(get, path = "/v4/", tag = "discovery",
    security(()),
    responses((status = 200, description = "The v4 API version.", body = SingleVersion)))]
pub async fn v4_slash(node: State<Arc<Core>>) -> Json<Value> {
    v4(node).await
}
