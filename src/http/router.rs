//! The public API router: every route the node serves, in one place.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post, put};
use axum::Router;

use super::metrics::labels;
use super::{discovery, ApiError};
use crate::node::Node;
use crate::{assignment, auth, catalog, credential, identity, resource};

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
        .route("/v3/auth/domains", get(auth::auth_domains))
        .route("/v3/auth/system", get(auth::auth_system))
        .route("/v3/users/{id}/groups", get(identity::groups::groups_of_user))
        .route("/v3/users/{id}/password", axum::routing::post(identity::password::change))
        .route("/v3/groups", get(identity::groups::list).post(identity::groups::create))
        .route(
            "/v3/groups/{id}",
            get(identity::groups::get).patch(identity::groups::update).delete(identity::groups::delete),
        )
        .route("/v3/groups/{id}/users", get(identity::groups::list_users))
        .route(
            "/v3/groups/{id}/users/{user_id}",
            put(identity::groups::add_user).head(identity::groups::check_user).delete(identity::groups::remove_user),
        )
        .route("/v3/roles", get(assignment::roles::list).post(assignment::roles::create))
        .route(
            "/v3/roles/{id}",
            get(assignment::roles::get).patch(assignment::roles::update).delete(assignment::roles::delete),
        )
        .route("/v3/roles/{id}/implies", get(assignment::implied::list_for_prior))
        .route(
            "/v3/roles/{id}/implies/{implied_id}",
            get(assignment::implied::get)
                .head(assignment::implied::check)
                .put(assignment::implied::create)
                .delete(assignment::implied::delete),
        )
        .route("/v3/role_inferences", get(assignment::implied::list_all))
        .route("/v3/role_assignments", get(assignment::role_assignments::list))
        .merge(grant_routes())
        .route("/v3/regions", get(catalog::regions::list).post(catalog::regions::create))
        .route(
            "/v3/regions/{id}",
            get(catalog::regions::get)
                .put(catalog::regions::put)
                .patch(catalog::regions::update)
                .delete(catalog::regions::delete),
        )
        .route("/v3/services", get(catalog::services::list).post(catalog::services::create))
        .route(
            "/v3/services/{id}",
            get(catalog::services::get).patch(catalog::services::update).delete(catalog::services::delete),
        )
        .route("/v3/endpoints", get(catalog::endpoints::list).post(catalog::endpoints::create))
        .route(
            "/v3/endpoints/{id}",
            get(catalog::endpoints::get).patch(catalog::endpoints::update).delete(catalog::endpoints::delete),
        )
        .route("/v3/credentials", get(credential::credentials::list).post(credential::credentials::create))
        .route(
            "/v3/credentials/{id}",
            get(credential::credentials::get)
                .patch(credential::credentials::update)
                .delete(credential::credentials::delete),
        )
        .route("/v3/users/{id}/credentials/OS-EC2", get(credential::ec2::list).post(credential::ec2::create))
        .route("/v3/users/{id}/credentials/OS-EC2/{access}", get(credential::ec2::get).delete(credential::ec2::delete))
        // The spec's path, and Keystone's, where existing clients send signed requests.
        .route("/v3/sigtokens", post(credential::sigtokens::issue))
        .route("/v3/ec2tokens", post(credential::sigtokens::issue))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(node.clone(), observe))
        .with_state(node)
}

/// `/v3/{projects|domains}/{id}/{users|groups}/{actor_id}/roles[/{role_id}]` and
/// `/v3/system/{users|groups}/{actor_id}/roles[/{role_id}]`.
fn grant_routes() -> Router<Arc<Node>> {
    use assignment::grants;
    let mut r = Router::new();
    for target in ["/v3/projects/{id}", "/v3/domains/{id}", "/v3/system"] {
        for actor in ["users", "groups"] {
            let base = format!("{target}/{actor}/{{actor_id}}/roles");
            r = r
                .route(&base, get(grants::list))
                .route(&format!("{base}/{{role_id}}"), put(grants::create).head(grants::check).delete(grants::revoke));
        }
    }
    r
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
