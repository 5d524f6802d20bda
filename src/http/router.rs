//! The public API router: every route the node serves, in one place.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use axum::Router;

use super::metrics::labels;
use super::{discovery, ApiError};
use crate::node::Node;
use crate::{auth, identity, resource};

pub fn api(node: Arc<Node>) -> Router {
    let tokens = || {
        get(auth::tokens::validate)
            .post(auth::tokens::issue)
            .delete(auth::tokens::revoke)
            .head(auth::tokens::check)
            .route_layer(middleware::from_fn_with_state(node.clone(), super::ratelimit::limit_token_issue))
    };
    Router::new()
        .route("/", get(discovery::root))
        .route("/v3", get(discovery::v3))
        .route("/v3/", get(discovery::v3))
        .route("/v4", get(discovery::v4))
        .route("/v4/", get(discovery::v4))
        .route("/v3/auth/tokens", tokens())
        .route("/v4/auth/tokens", tokens())
        .route("/v3/auth/projects", get(auth::auth_projects))
        .route("/v3/auth/catalog", get(auth::auth_catalog))
        .route("/v3/domains", get(resource::domains::list).post(resource::domains::create))
        .route(
            "/v3/domains/{id}",
            get(resource::domains::get).patch(resource::domains::update).delete(resource::domains::delete),
        )
        .route("/v3/projects", get(resource::projects::list).post(resource::projects::create))
        .route(
            "/v3/projects/{id}",
            get(resource::projects::get).patch(resource::projects::update).delete(resource::projects::delete),
        )
        .route("/v3/users", get(identity::users::list).post(identity::users::create))
        .route(
            "/v3/users/{id}",
            get(identity::users::get).patch(identity::users::update).delete(identity::users::delete),
        )
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(node.clone(), observe))
        .with_state(node)
}

async fn not_found() -> ApiError {
    ApiError::new(axum::http::StatusCode::NOT_FOUND, "The resource could not be found.")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(axum::http::StatusCode::METHOD_NOT_ALLOWED, "The method is not allowed for the requested URL.")
}

/// Request metrics and an access log line (path only: tokens never travel in URLs here).
async fn observe(State(node): State<Arc<Node>>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().to_string();
    let route =
        req.extensions().get::<MatchedPath>().map(|p| p.as_str().to_string()).unwrap_or_else(|| "unmatched".into());
    let resp = next.run(req).await;
    let status = resp.status().as_u16().to_string();
    let l = labels(&[("method", &method), ("route", &route), ("status", &status)]);
    node.metrics.http_requests.get_or_create(&l).inc();
    node.metrics
        .http_duration
        .get_or_create(&labels(&[("method", &method), ("route", &route)]))
        .observe(start.elapsed().as_secs_f64());
    tracing::debug!(%method, %route, %status, elapsed_us = start.elapsed().as_micros() as u64, "request");
    resp
}
