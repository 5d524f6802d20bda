//! `POST /v4/oauth2/{domain_id}/introspect` (RFC 7662): a confidential client of the same
//! domain asks whether a token is live. Anything not live — unknown, malformed, expired,
//! revoked, spent, of another domain — is exactly `{"active": false}`.

use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{json, Value};

use super::cutoff;
use super::error::{json_no_store, OAuthError, OAuthResult};
use super::form::OAuthForm;
use super::keys::{self, DomainKeys};
use super::provider::DomainEndpoint;
use super::secrets::{keyed_hash, same_hash, REFRESH};
use super::{client_auth, tokens};
use crate::clock::now_secs;
use crate::context::Core;
use crate::http::metrics::labels;
use crate::state::oauth2::RefreshFamily;
use crate::state::read::OAuth2Reads;
use crate::state::Reader;

/// The claims of an access token of `domain_id` that is live now: signed by one of the
/// domain's keys, unexpired, its id not revoked, its refresh family (if any) live, its user
/// (if any) and client existing and enabled.
pub fn live_access_claims(node: &Core, keys: &DomainKeys, domain_id: &str, token: &str) -> OAuthResult<Option<Value>> {
    let Some(claims) = keys.verify(token) else { return Ok(None) };
    if claims.get("token_use").and_then(Value::as_str) != Some("access") {
        return Ok(None);
    }
    let iss_ok =
        claims.get("iss").and_then(Value::as_str).is_some_and(|i| i.ends_with(&format!("/v4/oauth2/{domain_id}")));
    let (Some(jti), Some(client_id), Some(sub)) = (
        claims.get("jti").and_then(Value::as_str),
        claims.get("client_id").and_then(Value::as_str),
        claims.get("sub").and_then(Value::as_str),
    ) else {
        return Ok(None);
    };
    if !iss_ok {
        return Ok(None);
    }
    let read = node.engine.read();
    // A token exchanged from another dies with it: its ancestors' ids are checked too.
    let exp = claims.get("exp").and_then(Value::as_i64).unwrap_or(i64::MAX);
    for id in std::iter::once(jti).chain(tokens::ancestors(&claims).iter().filter_map(Value::as_str)) {
        if crate::state::oauth2::jti_revoked(&read, domain_id, id, exp)? {
            return Ok(None);
        }
    }
    let at = now_secs();
    if let Some(sid) = claims.get("sid").and_then(Value::as_str) {
        if !read.oauth2_family(sid)?.is_some_and(|f| f.live(at)) {
            return Ok(None);
        }
    }
    let client_ok = read.oauth2_client(domain_id, client_id)?.is_some_and(|c| c.enabled);
    // The subject is a user of the domain, or a client principal (client_credentials, and
    // tokens exchanged from one, whose `client_id` is the exchanging client).
    let subject_ok = match read.oauth2_client(domain_id, sub)? {
        Some(c) => c.enabled,
        None => read.user(sub)?.is_some_and(|u| {
            u.enabled && u.domain_id == domain_id && !cutoff::token_cut_off(&u, &claims, node.raft.cluster_version())
        }),
    };
    let domain_ok = read.domain(domain_id)?.is_some_and(|d| d.enabled);
    Ok((client_ok && subject_ok && domain_ok).then_some(claims))
}

/// The live refresh family a presented refresh token is the current token of.
pub fn live_refresh_family(node: &Core, domain_id: &str, token: &str) -> OAuthResult<Option<RefreshFamily>> {
    let Some((family_id, secret)) = tokens::split_refresh(token) else { return Ok(None) };
    let read = node.engine.read();
    let Some(f) = read.oauth2_family(family_id)? else {
        return Ok(None);
    };
    let hash = keyed_hash(node, REFRESH, secret)?;
    let user_ok = read.user(&f.user_id)?.is_some_and(|u| {
        u.enabled && u.domain_id == domain_id && !cutoff::family_cut_off(&u, &f, node.raft.cluster_version())
    });
    Ok((f.domain_id == domain_id && user_ok && f.live(now_secs()) && same_hash(&f.current, &hash)).then_some(f))
}

#[utoipa::path(post, path = "/v4/oauth2/{domain_id}/introspect", operation_id = "oauth2_introspect", tag = "oauth2",
    params(("domain_id" = String, Path, description = "The domain.")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "token, token_type_hint (access_token | refresh_token); a confidential client of the domain authenticates."),
    responses((status = 200, description = "`{\"active\": false}` for anything not live; else the token's claims (RFC 7662).", body = Object),
              (status = 400, description = "invalid_request: no token.", body = super::schemas::OAuthErrorBody),
              (status = 401, description = "invalid_client (public clients included).", body = super::schemas::OAuthErrorBody),
              (status = 429, description = "Rate limited (per source and per client).", body = super::schemas::OAuthErrorBody)))]
pub async fn introspect(
    DomainEndpoint(node, provider, domain_id): DomainEndpoint,
    headers: HeaderMap,
    form: OAuthForm,
) -> OAuthResult<Response> {
    let keys = keys::for_domain(&node, &provider, &domain_id).await?;
    let client = client_auth::authenticate(&node, &domain_id, &headers, &form.single)?;
    if !client.confidential {
        return Err(OAuthError::invalid_client("Introspection needs a confidential client."));
    }
    provider.limit_client(&client.client_id)?;
    let token = form.require("token")?;
    // Every write an answer here depends on is acknowledged only once the watermark passed
    // it (keys, clients, refresh rotations, revocations all count as revoking), so a follower
    // in contact answers from its own state.
    node.ensure_fresh_local().await?;
    let refresh_first = form.get("token_type_hint") == Some("refresh_token");
    let mut found = None;
    for kind in if refresh_first { ["refresh", "access"] } else { ["access", "refresh"] } {
        found = match kind {
            "access" => live_access_claims(&node, &keys, &domain_id, token)?.map(|c| access_view(&c)),
            _ => live_refresh_family(&node, &domain_id, token)?.map(|f| refresh_view(&f)),
        };
        if found.is_some() {
            break;
        }
    }
    let result = if found.is_some() { "active" } else { "inactive" };
    node.settle().await?;
    provider.metrics.introspections.get_or_create(&labels(&[("result", result)])).inc();
    Ok(json_no_store(found.unwrap_or_else(|| json!({"active": false}))))
}

fn access_view(c: &Value) -> Value {
    let mut out = json!({"active": true, "token_type": "Bearer"});
    for key in [
        "scope",
        "client_id",
        "sub",
        "exp",
        "iat",
        "nbf",
        "aud",
        "iss",
        "jti",
        "token_use",
        "platform_context",
        "delegation_context",
        "act",
    ] {
        if let Some(v) = c.get(key) {
            out[key] = v.clone();
        }
    }
    out
}

fn refresh_view(f: &RefreshFamily) -> Value {
    json!({
        "active": true,
        "scope": f.scopes.join(" "),
        "client_id": f.client_id,
        "sub": f.user_id,
        "exp": f.expires_at,
        "iat": f.created_at,
        "token_use": "refresh",
    })
}
