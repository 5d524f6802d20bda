//! The unauthenticated documents of a domain's provider (OpenID discovery, the key set, the
//! revoked access-token ids) and the administration of its signing keys.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::error::{OAuthError, OAuthResult};
use super::issuer::issuer;
use super::provider::DomainEndpoint;
use super::{keys, revocations, scopes};
use crate::http::error::ApiResult;
use crate::http::openapi::errors as E;
use crate::policy::enforce;
use crate::state::Reader;
use crate::token::Caller;

fn cached(body: Value, max_age: u32) -> Response {
    let mut resp = Json(body).into_response();
    if let Ok(v) = HeaderValue::from_str(&format!("public, max-age={max_age}")) {
        resp.headers_mut().insert(header::CACHE_CONTROL, v);
    }
    resp
}

#[utoipa::path(get, path = "/v4/oauth2/{domain_id}/.well-known/openid-configuration", operation_id = "oauth2_discovery", tag = "oauth2",
    params(("domain_id" = String, Path, description = "The domain whose provider it is.")),
    responses((status = 200, description = "OpenID Provider metadata (RFC 8414 / OpenID Discovery).", body = Object),
              (status = 404, description = "No such (enabled) domain.", body = super::schemas::OAuthErrorBody)))]
pub async fn openid_configuration(DomainEndpoint(node, provider, domain_id): DomainEndpoint) -> OAuthResult<Response> {
    keys::for_domain(&node, &provider, &domain_id).await?;
    let iss = issuer(&node, &domain_id);
    Ok(cached(
        json!({
            "issuer": iss,
            "authorization_endpoint": format!("{iss}/authorize"),
            "token_endpoint": format!("{iss}/token"),
            "jwks_uri": format!("{iss}/jwks"),
            "revocation_endpoint": format!("{iss}/revoke"),
            "introspection_endpoint": format!("{iss}/introspect"),
            "userinfo_endpoint": format!("{iss}/userinfo"),
            "device_authorization_endpoint": format!("{iss}/device_authorization"),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
            "grant_types_supported": scopes::GRANT_TYPES,
            "scopes_supported": scopes::KNOWN,
            "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
            "revocation_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
            "introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "code_challenge_methods_supported": ["S256"],
            "claims_supported": ["sub", "iss", "aud", "exp", "iat", "auth_time", "nonce", "amr", "name",
                                 "preferred_username", "updated_at", "email", "email_verified"],
            "prompt_values_supported": ["consent", "login"],
        }),
        300,
    ))
}

#[utoipa::path(get, path = "/v4/oauth2/{domain_id}/jwks", operation_id = "oauth2_jwks", tag = "oauth2",
    params(("domain_id" = String, Path, description = "The domain.")),
    responses((status = 200, description = "The JWK Set: staged, primary and retired keys still published.", body = Object),
              (status = 404, description = "No such (enabled) domain.", body = super::schemas::OAuthErrorBody)))]
pub async fn jwks(DomainEndpoint(node, provider, domain_id): DomainEndpoint) -> OAuthResult<Response> {
    let keys = keys::for_domain(&node, &provider, &domain_id).await?;
    Ok(cached(keys.jwks(), 300))
}

#[utoipa::path(get, path = "/v4/oauth2/{domain_id}/jwks/revocation", operation_id = "oauth2_revoked_jtis", tag = "oauth2",
    params(("domain_id" = String, Path, description = "The domain.")),
    responses((status = 200, description = "Ids of revoked access tokens not yet expired (`revoked_jtis`); cache 60 s.", body = Object),
              (status = 404, description = "No such (enabled) domain.", body = super::schemas::OAuthErrorBody)))]
pub async fn revoked_jtis(DomainEndpoint(node, provider, domain_id): DomainEndpoint) -> OAuthResult<Response> {
    if !node.engine.read().domain(&domain_id)?.is_some_and(|d| d.enabled) {
        return Err(OAuthError::not_found(format!("Could not find domain: {domain_id}.")));
    }
    let list = revocations::current(&node, &provider, &domain_id)?;
    Ok(revocations::response(&list, 60))
}

fn key_view(set: &crate::state::oauth2::SigningKeys) -> Value {
    let keys: Vec<Value> = set
        .keys
        .iter()
        .map(|k| {
            json!({"kid": k.kid, "state": format!("{:?}", k.state).to_lowercase(), "alg": "ES256",
                   "created_at": k.created_at, "retire_at": k.retire_at})
        })
        .collect();
    json!({"oauth2_keys": {"domain_id": set.domain_id, "epoch": set.epoch, "keys": keys}})
}

#[utoipa::path(get, path = "/v4/oauth2/{domain_id}/keys", operation_id = "oauth2_keys_list", tag = "oauth2",
    params(("domain_id" = String, Path, description = "The domain.")),
    responses((status = 200, description = "The signing keys' ids, states and times (never key material).", body = Object), E::Read))]
pub async fn list_keys(
    Caller(ctx): Caller,
    DomainEndpoint(node, provider, domain_id): DomainEndpoint,
) -> ApiResult<Json<Value>> {
    may_manage_keys("list", &ctx, &domain_id)?;
    let keys = keys::for_domain(&node, &provider, &domain_id).await.map_err(to_api)?;
    Ok(Json(key_view(&keys.set)))
}

#[utoipa::path(post, path = "/v4/oauth2/{domain_id}/keys/rotate", operation_id = "oauth2_keys_rotate", tag = "oauth2",
    params(("domain_id" = String, Path, description = "The domain.")),
    responses((status = 200, description = "The key set after the rotation: the staged key signs, the old primary stays published until its tokens expire, a new key is staged.", body = Object),
              E::Unauthorized, E::Forbidden, E::NotFound, E::Conflict, E::Internal, E::Unavailable))]
pub async fn rotate_keys(
    Caller(ctx): Caller,
    DomainEndpoint(node, provider, domain_id): DomainEndpoint,
) -> ApiResult<Json<Value>> {
    may_manage_keys("rotate", &ctx, &domain_id)?;
    let set = keys::rotate(&node, &provider, &domain_id).await.map_err(to_api)?;
    provider.metrics.key_rotations.inc();
    Ok(Json(key_view(&set)))
}

/// The policy check of the signing key administration (`identity/oauth2_key/{action}`).
fn may_manage_keys(action: &str, ctx: &crate::token::ValidToken, domain_id: &str) -> ApiResult<()> {
    enforce(&format!("identity/oauth2_key/{action}"), ctx, &json!({"domain_id": domain_id}))
}

/// An OAuth error met on an administrative (Keystone-bodied) route.
fn to_api(e: OAuthError) -> crate::http::ApiError {
    let mut out = crate::http::ApiError::new(e.status, e.description);
    out.retry_after = e.retry_after;
    out
}
