//! `GET|POST /v4/oauth2/{domain_id}/userinfo` (OIDC Core §5.3) with RFC 6750's errors: no
//! token -> 401 `Bearer`; a bad, expired, revoked or foreign token, a platform token, a
//! disabled user or client -> 401 `Bearer error="invalid_token"`; no `openid` -> 403
//! `insufficient_scope`.

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{json, Value};

use super::error::{json_no_store, OAuthError, OAuthResult};
use super::introspect::live_access_claims;
use super::keys;
use super::provider::{DomainEndpoint, Provider};
use super::tokens::{render_template, user_email};
use crate::context::Core;
use crate::state::read::{IdentityReads, OAuth2Reads};
use crate::state::Reader;

fn no_token() -> OAuthError {
    let mut e = OAuthError::new(StatusCode::UNAUTHORIZED, "invalid_request", "A bearer access token is required.");
    e.www_authenticate = Some("Bearer".into());
    e
}

async fn userinfo(node: &Core, provider: &Provider, domain_id: &str, headers: &HeaderMap) -> OAuthResult<Response> {
    let token = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(no_token)?;
    let keys = keys::for_domain(node, provider, domain_id).await?;
    node.ensure_fresh().await?;
    let bad = || OAuthError::invalid_token("The access token is invalid, expired or revoked.");
    let claims = live_access_claims(node, &keys, domain_id, token)?.ok_or_else(bad)?;
    if claims.get("platform_context").is_some() {
        return Err(OAuthError::invalid_token("Platform access tokens are not accepted here."));
    }
    let scopes: Vec<&str> = claims.get("scope").and_then(Value::as_str).unwrap_or("").split(' ').collect();
    if !scopes.contains(&"openid") {
        let mut e = OAuthError::new(StatusCode::FORBIDDEN, "insufficient_scope", "The token lacks the openid scope.");
        e.www_authenticate = Some("Bearer error=\"insufficient_scope\", scope=\"openid\"".into());
        return Err(e);
    }
    let sub = claims.get("sub").and_then(Value::as_str).ok_or_else(bad)?;
    let client_id = claims.get("client_id").and_then(Value::as_str).ok_or_else(bad)?;
    let read = node.engine.read();
    let user = read.user(sub)?.filter(|u| u.enabled).ok_or_else(bad)?;
    let client = read.oauth2_client(domain_id, client_id)?.filter(|c| c.enabled).ok_or_else(bad)?;
    let mut out = json!({"sub": user.id});
    if scopes.contains(&"profile") {
        out["name"] = json!(user.name);
        out["preferred_username"] = json!(user.name);
        // When the user's information last changed (unix seconds, OIDC Core §5.1).
        out["updated_at"] = json!(read.user_updated_at(&user)?.div_euclid(1_000_000));
    }
    if scopes.contains(&"email") {
        if let Some(email) = user_email(&user) {
            let extra: Value = serde_json::from_str(&user.extra).unwrap_or_default();
            out["email"] = json!(email);
            out["email_verified"] = json!(extra.get("email_verified").and_then(Value::as_bool).unwrap_or(false));
        }
    }
    for (claim, template) in &client.claims_template {
        out[claim] = json!(render_template(template, &user));
    }
    Ok(json_no_store(out))
}

/// The endpoint under both methods OIDC Core §5.3.1 allows, each its own operation.
macro_rules! userinfo_operations {
    ($($name:ident = $method:ident, $operation_id:literal;)*) => {$(
        #[utoipa::path($method, path = "/v4/oauth2/{domain_id}/userinfo", operation_id = $operation_id, tag = "oauth2",
    params(("domain_id" = String, Path, description = "The domain.")),
    responses((status = 200, description = "The user's claims for the token's scopes.", body = Object),
              (status = 401, description = "No token (`WWW-Authenticate: Bearer`) or `invalid_token`.", body = super::schemas::OAuthErrorBody),
              (status = 403, description = "`insufficient_scope`: no openid.", body = super::schemas::OAuthErrorBody),
              (status = 429, description = "Rate limited.", body = super::schemas::OAuthErrorBody)),
    security(("bearer" = [])))]
        pub async fn $name(
            DomainEndpoint(node, provider, domain_id): DomainEndpoint,
            headers: HeaderMap,
        ) -> OAuthResult<Response> {
            userinfo(&node, &provider, &domain_id, &headers).await
        }
    )*};
}

userinfo_operations! {
    get = get, "oauth2_userinfo_get";
    post = post, "oauth2_userinfo_post";
}
