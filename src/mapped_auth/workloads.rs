//! Workload logins: a Kubernetes service-account token (`POST /v4/k8s_auth/instances/{id}/auth`,
//! verified by the cluster's TokenReview API over HTTPS with the instance's CA) and a SPIFFE
//! JWT-SVID (`POST /v4/spiffe/trust_domains/{id}/auth`, verified offline against the trust
//! domain's bundle, for the audience `[keystone] spiffe_jwt_audience`). Each becomes a
//! Keystone token through the provider's mapping rulesets.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::response::Response;

use super::login::{login, External};
use super::oidc::{subject, usable_provider, MAX_JWT};
use super::refusal::refused;
use super::schemas::WorkloadLoginBody;
use super::state::MappedAuth;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::query_flag;
use crate::http::openapi::errors as E;
use crate::http::JsonBody;
use crate::providers::token_review::review;
use crate::providers::verify::verify_svid;
use crate::state::providers::{ProviderConfig, ProviderKind};
use crate::token::Tokens;

fn jwt(body: &WorkloadLoginBody) -> ApiResult<&str> {
    let t = body.jwt.trim();
    if t.is_empty() || t.len() > MAX_JWT {
        return Err(ApiError::bad_request(format!("Invalid input for field 'jwt': 1 to {MAX_JWT} bytes.")));
    }
    Ok(t)
}

#[utoipa::path(post, path = "/v4/k8s_auth/instances/{instance_id}/auth", tag = "k8s_auth", operation_id = "k8s_auth_login", description = "Exchanges a Kubernetes service-account token for a Keystone token: the cluster's TokenReview API vouches for it, then the instance's mapping rulesets decide. 401: the cluster does not authenticate the token or no rule matches; 503: the cluster cannot be reached.",
    security(()),
    params(("instance_id" = String, Path, description = "The cluster issuer's id."),
           ("nocatalog" = Option<bool>, Query, description = "Present (any value but 0/false/no/off): leave the catalog out.")),
    request_body(content = WorkloadLoginBody, content_type = "application/json"),
    responses((status = 200, description = "The token; its id is in X-Subject-Token.", body = crate::auth::schemas::TokenEnvelope, headers(("X-Subject-Token" = String, description = "The new token."))),
              E::BadRequest, E::Unauthorized, E::Forbidden, E::NotFound, E::Conflict, E::TooManyRequests, E::Internal, E::Unavailable))]
pub async fn k8s_login(
    State(node): State<Arc<Tokens>>,
    State(mapped): State<Arc<MappedAuth>>,
    Path(instance_id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    JsonBody(body): JsonBody<WorkloadLoginBody>,
) -> ApiResult<Response> {
    let token = jwt(&body)?;
    let provider = usable_provider(&node, ProviderKind::K8s, &instance_id)?;
    let ProviderConfig::K8s(cluster) = &provider.config else {
        return Err(ApiError::internal("a cluster issuer record holds another kind"));
    };
    // A provider no ruleset names is refused before its cluster is asked anything.
    super::rulesets::for_provider(&node, &provider)?;
    let who = review(&mapped.outbound, cluster, token).await.map_err(refused)?;
    let claims = who.claims();
    let ext = External { provider, claims, workload: who.username.clone(), rule_name: body.rule_name };
    login(&node, &mapped, ext, body.scope.as_ref(), query_flag(q.get("nocatalog"))).await
}

#[utoipa::path(post, path = "/v4/spiffe/trust_domains/{trust_domain_id}/auth", tag = "spiffe", operation_id = "spiffe_login", description = "Exchanges a SPIFFE JWT-SVID (audience `[keystone] spiffe_jwt_audience`, default `idnode`) for a Keystone token: verified offline against the trust domain's bundle, then its mapping rulesets decide. 401: the SVID does not verify or no rule matches.",
    security(()),
    params(("trust_domain_id" = String, Path, description = "The trust domain's id."),
           ("nocatalog" = Option<bool>, Query, description = "Present (any value but 0/false/no/off): leave the catalog out.")),
    request_body(content = WorkloadLoginBody, content_type = "application/json"),
    responses((status = 200, description = "The token; its id is in X-Subject-Token.", body = crate::auth::schemas::TokenEnvelope, headers(("X-Subject-Token" = String, description = "The new token."))),
              E::BadRequest, E::Unauthorized, E::Forbidden, E::NotFound, E::Conflict, E::TooManyRequests, E::Internal, E::Unavailable))]
pub async fn spiffe_login(
    State(node): State<Arc<Tokens>>,
    State(mapped): State<Arc<MappedAuth>>,
    Path(trust_domain_id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    JsonBody(body): JsonBody<WorkloadLoginBody>,
) -> ApiResult<Response> {
    let token = jwt(&body)?;
    let provider = usable_provider(&node, ProviderKind::Spiffe, &trust_domain_id)?;
    let ProviderConfig::Spiffe(td) = &provider.config else {
        return Err(ApiError::internal("a trust domain record holds another kind"));
    };
    super::rulesets::for_provider(&node, &provider)?;
    let audience = &node.cfg.shadow_registry.spiffe_audience;
    let claims = verify_svid(td, token, audience, crate::clock::now_secs()).map_err(refused)?;
    let workload = subject(&claims)?;
    let ext = External { provider, claims, workload, rule_name: body.rule_name };
    login(&node, &mapped, ext, body.scope.as_ref(), query_flag(q.get("nocatalog"))).await
}
