//! `POST /v4/federation/identity_providers/{idp_id}/jwt`: an external OIDC provider's JWT,
//! presented as `Authorization: Bearer`, becomes a Keystone token through the provider's
//! mapping rulesets. The JWT is verified against the provider's `jwks_uri` (keys cached,
//! refetched on an unknown `kid`), with its `iss`, `aud` (must contain the provider's
//! `client_id`), `exp` and `nbf` (`providers::verify`).

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap};
use axum::response::Response;

use super::login::{login, External};
use super::refusal::refused;
use super::schemas::JwtLoginBody;
use super::state::MappedAuth;
use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::query_flag;
use crate::http::openapi::errors as E;
use crate::providers::registry::find;
use crate::providers::verify::{check_times, verify_oidc_jwt, Claims};
use crate::state::providers::{OidcProvider, Provider, ProviderConfig, ProviderKind};
use crate::token::Tokens;

/// Longest JWT accepted (bytes); larger ones are refused unread.
pub const MAX_JWT: usize = 16 * 1024;

/// The provider, when its domain (if any) is enabled.
pub fn usable_provider(node: &Core, kind: ProviderKind, id: &str) -> ApiResult<Provider> {
    let p = find(node, kind, id)?;
    if let Some(d) = &p.domain_id {
        use crate::state::Reader;
        if !node.engine.read().domain(d)?.is_some_and(|d| d.enabled) {
            return Err(ApiError::unauthorized("The provider's domain is disabled."));
        }
    }
    Ok(p)
}

/// The stable identity of a verified token: its non-empty `sub`.
pub fn subject(claims: &Claims) -> ApiResult<String> {
    claims
        .get("sub")
        .and_then(serde_json::Value::as_str)
        .filter(|s| !s.is_empty() && s.len() <= 1024)
        .map(str::to_string)
        .ok_or_else(|| ApiError::unauthorized("The presented token has no usable subject (sub)."))
}

/// The claims of an IdP's JWT: from the cache of verified tokens, else verified now (and
/// remembered). The time checks run again on a cached token.
pub async fn verified_claims(
    mapped: &MappedAuth,
    provider_id: &str,
    idp: &OidcProvider,
    jwt: &str,
) -> ApiResult<Claims> {
    let now = crate::clock::now_secs();
    if let Some(claims) = mapped.verified.get(provider_id, idp, jwt) {
        check_times(&claims, now).map_err(refused)?;
        return Ok((*claims).clone());
    }
    let claims = verify_oidc_jwt(idp, jwt, now, &mapped.jwks).await.map_err(refused)?;
    mapped.verified.put(provider_id, idp, jwt, std::sync::Arc::new(claims.clone()), now);
    Ok(claims)
}

fn bearer(headers: &HeaderMap) -> ApiResult<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
        .filter(|t| !t.is_empty() && t.len() <= MAX_JWT)
        .ok_or_else(|| ApiError::unauthorized("An identity provider's JWT is required as 'Authorization: Bearer'."))
}

#[utoipa::path(post, path = "/v4/federation/identity_providers/{idp_id}/jwt", tag = "identity_providers", operation_id = "federation_jwt_login", description = "Exchanges an external OIDC provider's JWT (`Authorization: Bearer`) for a Keystone token through the provider's mapping rulesets. 401: the JWT does not verify or no rule matches; 403/404 with `detail`: the mapping refuses.",
    security(()),
    params(("idp_id" = String, Path, description = "The identity provider's id."),
           ("nocatalog" = Option<bool>, Query, description = "Present (any value but 0/false/no/off): leave the catalog out."),
           ("Authorization" = String, Header, description = "`Bearer <the IdP's JWT>`")),
    request_body(content = Option<JwtLoginBody>, content_type = "application/json"),
    responses((status = 200, description = "The token; its id is in X-Subject-Token.", body = crate::auth::schemas::TokenEnvelope, headers(("X-Subject-Token" = String, description = "The new token."))),
              E::BadRequest, E::Unauthorized, E::Forbidden, E::NotFound, E::Conflict, E::TooManyRequests, E::Internal, E::Unavailable))]
pub async fn jwt_login(
    State(node): State<Arc<Tokens>>,
    State(mapped): State<Arc<MappedAuth>>,
    Path(idp_id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let body: JwtLoginBody = if body.iter().all(u8::is_ascii_whitespace) {
        JwtLoginBody::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| ApiError::bad_request(format!("Invalid request body: {e}")))?
    };
    let jwt = bearer(&headers)?;
    let provider = usable_provider(&node, ProviderKind::Oidc, &idp_id)?;
    let ProviderConfig::Oidc(idp) = &provider.config else {
        return Err(ApiError::internal("an OIDC provider record holds another kind"));
    };
    // A provider no ruleset names is refused before its keys are fetched.
    super::rulesets::for_provider(&node, &provider)?;
    let claims = verified_claims(&mapped, &provider.id, idp, jwt).await?;
    let workload = subject(&claims)?;
    let scope = body.auth.and_then(|a| a.scope);
    let ext = External { provider, claims, workload, rule_name: None };
    login(&node, &mapped, ext, scope.as_ref(), query_flag(q.get("nocatalog"))).await
}
