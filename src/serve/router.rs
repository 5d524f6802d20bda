//! The public API router: every route the node serves, in one place.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Router};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::discovery;
use super::openapi::{self, ApiDoc, SpecJson};
use crate::http::access::Route;
use crate::http::client_ip;
use crate::http::metrics::labels;
use crate::http::ratelimit::Class;
use crate::http::ApiError;
use crate::serve::node::{AppState, Node};
use crate::{
    appcred, assignment, auth, catalog, credential, federation, identity, oauth1, oauth2, providers, resource, trust,
};

/// The public API: the described operations, the description itself and Swagger UI.
pub fn api(node: Arc<Node>) -> Router {
    let (router, doc) = described().split_for_parts();
    // Startup: the document is built from static annotations and always serializes.
    let json = doc.to_json().expect("the OpenAPI document serializes");
    let api = router
        .merge(openapi::swagger_ui())
        .layer(Extension(SpecJson(Arc::new(json))))
        .layer(middleware::from_fn_with_state(node.clone(), limit))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(node.clone(), observe))
        .with_state(AppState(node));
    // The account pages act through this very router (`web::api`). The extension wraps the
    // router from outside, so the router does not hold itself.
    api.clone().layer(Extension(crate::web::api::InProcess(api)))
}

/// Every operation the public API serves, each registered from its handler's
/// `#[utoipa::path]` annotation (path and methods included): the router and the OpenAPI
/// description are two views of these declarations. Add routes here only through `routes!`.
pub fn described() -> OpenApiRouter<AppState> {
    use assignment::{grants, implied, inherited, role_assignments, roles};
    use catalog::{endpoint_groups as epf, endpoint_policy, endpoints, policies, regions, services};
    use credential::{credentials, ec2, s3tokens, sigtokens};
    use federation::{identity_providers as idps, mappings, protocols, service_providers as sps};
    use identity::{groups, password, users};
    use resource::{domain_config as dcfg, domains, projects, tags};
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(openapi::spec))
        .routes(routes!(discovery::root))
        .routes(routes!(discovery::v3))
        .routes(routes!(discovery::v3_slash))
        .routes(routes!(discovery::v4))
        .routes(routes!(discovery::v4_slash))
        .routes(routes!(auth::tokens::validate, auth::tokens::issue, auth::tokens::revoke, auth::tokens::check))
        .routes(routes!(
            auth::tokens::v4_validate,
            auth::tokens::v4_issue,
            auth::tokens::v4_revoke,
            auth::tokens::v4_check
        ))
        .routes(routes!(auth::projects::auth_projects))
        .routes(routes!(auth::projects::auth_catalog))
        .routes(routes!(auth::projects::auth_domains))
        .routes(routes!(auth::projects::auth_system))
        .routes(routes!(auth::revoke_events::list))
        .routes(routes!(domains::list, domains::create))
        .routes(routes!(domains::get, domains::update, domains::delete))
        .routes(routes!(dcfg::replace, dcfg::get, dcfg::update, dcfg::delete))
        .routes(routes!(dcfg::group_get, dcfg::group_update, dcfg::group_delete))
        .routes(routes!(dcfg::option_get, dcfg::option_update, dcfg::option_delete))
        .routes(routes!(dcfg::default_get))
        .routes(routes!(dcfg::default_group))
        .routes(routes!(dcfg::default_option))
        .routes(routes!(projects::list, projects::create))
        .routes(routes!(projects::get, projects::update, projects::delete))
        .routes(routes!(projects::list_for_user))
        .routes(routes!(tags::list, tags::replace, tags::clear))
        .routes(routes!(tags::check, tags::add, tags::delete))
        .routes(routes!(users::list, users::create))
        .routes(routes!(users::get, users::update, users::delete))
        .routes(routes!(groups::groups_of_user))
        .routes(routes!(password::change))
        .routes(routes!(appcred::credentials::list, appcred::credentials::create))
        .routes(routes!(appcred::credentials::get, appcred::credentials::delete))
        .routes(routes!(appcred::access_rules::list))
        .routes(routes!(appcred::access_rules::get, appcred::access_rules::delete))
        .routes(routes!(groups::list, groups::create))
        .routes(routes!(groups::get, groups::update, groups::delete))
        .routes(routes!(groups::list_users))
        .routes(routes!(groups::add_user, groups::check_user, groups::remove_user))
        .routes(routes!(roles::list, roles::create))
        .routes(routes!(roles::get, roles::update, roles::delete))
        .routes(routes!(implied::list_for_prior))
        .routes(routes!(implied::get, implied::check, implied::create, implied::delete))
        .routes(routes!(implied::list_all))
        .routes(routes!(role_assignments::list))
        .merge(grants::routes())
        .merge(inherited::routes())
        .routes(routes!(regions::list, regions::create))
        .routes(routes!(regions::get, regions::put, regions::update, regions::delete))
        .routes(routes!(services::list, services::create))
        .routes(routes!(services::get, services::update, services::delete))
        .routes(routes!(endpoints::list, endpoints::create))
        .routes(routes!(endpoints::get, endpoints::update, endpoints::delete))
        .routes(routes!(epf::list, epf::create))
        .routes(routes!(epf::get, epf::update, epf::delete))
        .routes(routes!(epf::group_endpoints_list))
        .routes(routes!(epf::group_projects_list))
        .routes(routes!(epf::group_project_get, epf::group_project_add, epf::group_project_remove))
        .routes(routes!(epf::project_groups_list))
        .routes(routes!(epf::project_endpoints_list))
        .routes(routes!(epf::endpoint_projects_list))
        .routes(routes!(epf::project_endpoint_check, epf::project_endpoint_add, epf::project_endpoint_remove))
        .routes(routes!(policies::list, policies::create))
        .routes(routes!(policies::get, policies::update, policies::delete))
        .routes(routes!(
            endpoint_policy::endpoint_check,
            endpoint_policy::endpoint_put,
            endpoint_policy::endpoint_delete
        ))
        .routes(routes!(endpoint_policy::service_check, endpoint_policy::service_put, endpoint_policy::service_delete))
        .routes(routes!(endpoint_policy::region_check, endpoint_policy::region_put, endpoint_policy::region_delete))
        .routes(routes!(endpoint_policy::endpoints_list))
        .routes(routes!(endpoint_policy::policy_for_endpoint))
        .routes(routes!(idps::list))
        .routes(routes!(idps::get, idps::create, idps::update, idps::delete))
        .routes(routes!(protocols::list))
        .routes(routes!(protocols::get, protocols::create, protocols::update, protocols::delete))
        .routes(routes!(mappings::list))
        .routes(routes!(mappings::get, mappings::create, mappings::update, mappings::delete))
        .routes(routes!(sps::list))
        .routes(routes!(sps::get, sps::create, sps::update, sps::delete))
        .routes(routes!(oauth1::consumers::list, oauth1::consumers::create))
        .routes(routes!(oauth1::consumers::get, oauth1::consumers::update, oauth1::consumers::delete))
        .routes(routes!(trust::trusts::list, trust::trusts::create))
        .routes(routes!(trust::trusts::list_slash))
        .routes(routes!(trust::trusts::get, trust::trusts::delete))
        .routes(routes!(trust::trusts::roles_list))
        .routes(routes!(trust::trusts::role_get))
        .routes(routes!(oauth1::request_tokens::create))
        .routes(routes!(oauth1::request_tokens::authorize))
        .routes(routes!(oauth1::exchange::create))
        .routes(routes!(oauth1::access_tokens::list))
        .routes(routes!(oauth1::access_tokens::get, oauth1::access_tokens::delete))
        .routes(routes!(oauth1::access_tokens::roles))
        .routes(routes!(oauth1::access_tokens::role))
        .routes(routes!(credentials::list, credentials::create))
        .routes(routes!(credentials::get, credentials::update, credentials::delete))
        .routes(routes!(ec2::list, ec2::create))
        .routes(routes!(ec2::get, ec2::delete))
        // The spec's path, and Keystone's, where existing clients send signed requests.
        .routes(routes!(sigtokens::issue))
        .routes(routes!(sigtokens::issue_ec2tokens))
        .routes(routes!(s3tokens::validate))
        .merge(oauth2::routes())
        .merge(providers::routes())
        .merge(crate::mapping::api::routes())
        .merge(crate::mapped_auth::routes())
        .merge(crate::api_keys::routes())
        .merge(crate::scim::routes())
        .merge(crate::passkey::routes())
        .merge(crate::restrictions::routes())
        .merge(crate::limits::routes())
        .merge(crate::account::routes())
}

/// Unknown paths and methods: SCIM's error envelope under `/SCIM/v2/`, Keystone's body
/// elsewhere.
fn fallback(uri: &axum::http::Uri, status: axum::http::StatusCode, message: &str) -> Response {
    if crate::scim::is_scim_path(uri.path()) {
        crate::scim::wire::ScimError::new(status, None, message).into_response()
    } else {
        ApiError::new(status, message).into_response()
    }
}

async fn not_found(uri: axum::http::Uri) -> Response {
    fallback(&uri, axum::http::StatusCode::NOT_FOUND, "The resource could not be found.")
}

async fn method_not_allowed(uri: axum::http::Uri) -> Response {
    fallback(&uri, axum::http::StatusCode::METHOD_NOT_ALLOWED, "The method is not allowed for the requested URL.")
}

/// Request metrics, and the route template left on the answer for the access line
/// (`http::access`, the layer outside this router).
async fn observe(State(node): State<Arc<Node>>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().to_string();
    let matched = Route::of(&req);
    let route = matched.0.to_string();
    let mut resp = next.run(req).await;
    resp.extensions_mut().insert(matched);
    let status = resp.status().as_u16().to_string();
    let l = labels(&[("method", &method), ("route", &route), ("status", &status)]);
    node.metrics.http_requests.get_or_create(&l).inc();
    node.metrics
        .http_duration
        .get_or_create(&labels(&[("method", &method), ("route", &route)]))
        .observe(start.elapsed().as_secs_f64());
    resp
}

/// Layer over the public API: requests of a limited class are counted against their source
/// before any work is done; 429 with `Retry-After` beyond the limit.
pub async fn limit(State(node): State<Arc<Node>>, req: Request, next: Next) -> Response {
    let route = req.extensions().get::<MatchedPath>().map(|p| p.as_str().to_string());
    let limited = route.as_deref().and_then(|r| Class::of(req.method(), r));
    let (Some(route), Some(class)) = (route, limited) else {
        return next.run(req).await;
    };
    let Some(limit) = node.rate_limits.class(class) else {
        return next.run(req).await;
    };
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
        .unwrap_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED));
    let source = client_ip::source(peer, req.headers(), &node.rate_limits.trusted_proxies);
    match limit.check(source) {
        Ok(()) => next.run(req).await,
        Err(retry_after) => {
            node.metrics.rate_limited.get_or_create(&labels(&[("route", &route)])).inc();
            if class == Class::OAuth2 {
                return crate::oauth2::error::OAuthError::rate_limited(retry_after).into_response();
            }
            let mut err = ApiError::new(StatusCode::TOO_MANY_REQUESTS, class.message());
            err.retry_after = Some(retry_after);
            err.into_response()
        }
    }
}
