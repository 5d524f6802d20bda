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
use crate::providers::k8s::K8s;
use crate::providers::registry::Registry;
use crate::providers::spiffe::Spiffe;
use crate::providers::token_review::review;
use crate::providers::verify::verify_svid;
use crate::providers::verify::Claims;
use crate::state::providers::{ClusterIssuer, TrustDomain};
use crate::token::Tokens;

fn jwt(body: &WorkloadLoginBody) -> ApiResult<&str> {
    let t = body.jwt.trim();
    if t.is_empty() || t.len() > MAX_JWT {
        return Err(ApiError::bad_request(format!("Invalid input for field 'jwt': 1 to {MAX_JWT} bytes.")));
    }
    Ok(t)
}

/// A kind of workload provider (its registry), and how it vouches for a presented JWT: the
/// claims the rules see, and who the workload is.
trait Workload: Registry {
    /// What the internal error says when a record of the kind holds another kind.
    const OTHER_KIND: &'static str;
    async fn verify(node: &Tokens, mapped: &MappedAuth, c: &Self::Config, jwt: &str) -> ApiResult<(Claims, String)>;
}

impl Workload for K8s {
    const OTHER_KIND: &'static str = "a cluster issuer record holds another kind";

    /// The cluster's TokenReview API vouches for the token.
    async fn verify(_: &Tokens, mapped: &MappedAuth, c: &ClusterIssuer, jwt: &str) -> ApiResult<(Claims, String)> {
        let who = review(&mapped.outbound, c, jwt).await.map_err(refused)?;
        Ok((who.claims(), who.username.clone()))
    }
}

impl Workload for Spiffe {
    const OTHER_KIND: &'static str = "a trust domain record holds another kind";

    /// Verified offline against the trust domain's bundle, for the configured audience.
    async fn verify(node: &Tokens, _: &MappedAuth, c: &TrustDomain, jwt: &str) -> ApiResult<(Claims, String)> {
        let audience = &node.cfg.shadow_registry.spiffe_audience;
        let claims = verify_svid(c, jwt, audience, crate::clock::now_secs()).map_err(refused)?;
        let workload = subject(&claims)?;
        Ok((claims, workload))
    }
}

/// A workload login: the JWT's size, the usable provider and its configuration, a ruleset
/// that names the provider (checked before anything is asked of a cluster or verified), the
/// kind's verification, then the login through the rulesets.
async fn workload_login<W: Workload>(
    node: &Tokens,
    mapped: &MappedAuth,
    id: &str,
    q: &HashMap<String, String>,
    body: WorkloadLoginBody,
) -> ApiResult<Response> {
    let token = jwt(&body)?;
    let provider = usable_provider(node, W::KIND, id)?;
    let Some(c) = W::unwrap(provider.config.clone()) else {
        return Err(ApiError::internal(W::OTHER_KIND));
    };
    super::rulesets::for_provider(node, &provider)?;
    let (claims, workload) = W::verify(node, mapped, &c, token).await?;
    let ext = External { provider, claims, workload, rule_name: body.rule_name };
    login(node, mapped, ext, body.scope.as_ref(), query_flag(q.get("nocatalog"))).await
}

/// A kind's documented handler over [`workload_login`].
macro_rules! workload_handler {
    ($name:ident, $W:ty, $param:literal, path = $path:literal, tag = $tag:literal, operation_id = $op:literal,
     description = $desc:literal, id = $id_desc:literal) => {
        #[utoipa::path(post, path = $path, tag = $tag, operation_id = $op, description = $desc,
    security(()),
    params(($param = String, Path, description = $id_desc),
           ("nocatalog" = Option<bool>, Query, description = "Present (any value but 0/false/no/off): leave the catalog out.")),
    request_body(content = WorkloadLoginBody, content_type = "application/json"),
    responses((status = 200, description = "The token; its id is in X-Subject-Token.", body = crate::auth::schemas::TokenEnvelope, headers(("X-Subject-Token" = String, description = "The new token."))),
              E::BadRequest, E::Unauthorized, E::Forbidden, E::NotFound, E::Conflict, E::TooManyRequests, E::Internal, E::Unavailable))]
        pub async fn $name(
            State(node): State<Arc<Tokens>>,
            State(mapped): State<Arc<MappedAuth>>,
            Path(id): Path<String>,
            Query(q): Query<HashMap<String, String>>,
            JsonBody(body): JsonBody<WorkloadLoginBody>,
        ) -> ApiResult<Response> {
            workload_login::<$W>(&node, &mapped, &id, &q, body).await
        }
    };
}

workload_handler!(k8s_login, K8s, "instance_id",
    path = "/v4/k8s_auth/instances/{instance_id}/auth", tag = "k8s_auth", operation_id = "k8s_auth_login",
    description = "Exchanges a Kubernetes service-account token for a Keystone token: the cluster's TokenReview API vouches for it, then the instance's mapping rulesets decide. 401: the cluster does not authenticate the token or no rule matches; 503: the cluster cannot be reached.",
    id = "The cluster issuer's id.");

workload_handler!(spiffe_login, Spiffe, "trust_domain_id",
    path = "/v4/spiffe/trust_domains/{trust_domain_id}/auth", tag = "spiffe", operation_id = "spiffe_login",
    description = "Exchanges a SPIFFE JWT-SVID (audience `[keystone] spiffe_jwt_audience`, default `idnode`) for a Keystone token: verified offline against the trust domain's bundle, then its mapping rulesets decide. 401: the SVID does not verify or no rule matches.",
    id = "The trust domain's id.");
