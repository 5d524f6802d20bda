//! `POST /v4/oauth2/{domain_id}/revoke` (RFC 7009): 200 with an empty body for every
//! authenticated, well-formed request; only tokens of the authenticated client are revoked.
//! An access token's id is listed in `/jwks/revocation` until its `exp` (and its refresh
//! family, `sid`, goes too); a refresh token revokes its family. The answer leaves once every
//! reachable node has applied the revocation.

use axum::http::{HeaderMap, StatusCode};
use serde_json::Value;

use super::error::OAuthResult;
use super::form::OAuthForm;
use super::keys::{self, DomainKeys};
use super::provider::DomainEndpoint;
use super::secrets::{keyed_hash, same_hash, REFRESH};
use super::{client_auth, tokens};
use crate::clock::now_secs;
use crate::context::Core;
use crate::state::oauth2::{Client, OAuth2Command};
use crate::state::read::OAuth2Reads;
use crate::state::Command;

#[utoipa::path(post, path = "/v4/oauth2/{domain_id}/revoke", operation_id = "oauth2_revoke", tag = "oauth2",
    params(("domain_id" = String, Path, description = "The domain.")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "token, token_type_hint (access_token | refresh_token); client authentication as for /token."),
    responses((status = 200, description = "Empty: the token, if it was one of the client's, is revoked on every node."),
              (status = 400, description = "invalid_request: no token.", body = super::schemas::OAuthErrorBody),
              (status = 401, description = "invalid_client.", body = super::schemas::OAuthErrorBody),
              (status = 429, description = "Rate limited.", body = super::schemas::OAuthErrorBody)))]
pub async fn revoke(
    DomainEndpoint(node, provider, domain_id): DomainEndpoint,
    headers: HeaderMap,
    form: OAuthForm,
) -> OAuthResult<StatusCode> {
    let keys = keys::for_domain(&node, &provider, &domain_id).await?;
    let client = client_auth::authenticate(&node, &domain_id, &headers, &form.single)?;
    let token = form.require("token")?;
    let cmd = match access_revocation(&keys, &client, token) {
        Some(cmd) => Some(cmd),
        None => refresh_revocation(&node, &client, token)?,
    };
    if let Some(cmd) = cmd {
        let (index, _) = node.propose_at(Command::OAuth2(cmd)).await?;
        node.wait_cluster_applied(index).await;
    }
    Ok(StatusCode::OK)
}

/// An access token of this client (signed by the domain, expired or not: an expired one
/// needs nothing, so it is skipped).
fn access_revocation(keys: &DomainKeys, client: &Client, token: &str) -> Option<OAuth2Command> {
    let claims = keys.verify(token)?;
    let text = |key: &str| claims.get(key).and_then(Value::as_str).map(str::to_string);
    if text("client_id")? != client.client_id || text("token_use")? != "access" {
        return None;
    }
    Some(OAuth2Command::RevokeJti {
        domain_id: client.domain_id.clone(),
        jti: text("jti")?,
        exp: claims.get("exp").and_then(Value::as_i64)?,
        family_id: text("sid"),
        at: now_secs(),
    })
}

/// A refresh token (current or spent) of one of this client's families.
fn refresh_revocation(node: &Core, client: &Client, token: &str) -> OAuthResult<Option<OAuth2Command>> {
    let Some((family_id, secret)) = tokens::split_refresh(token) else { return Ok(None) };
    let Some(f) = node.engine.read().oauth2_family(family_id)? else {
        return Ok(None);
    };
    let hash = keyed_hash(node, REFRESH, secret)?;
    let known = same_hash(&f.current, &hash) || f.spent.iter().any(|s| same_hash(s, &hash));
    if f.client_id != client.client_id || f.domain_id != client.domain_id || !known {
        return Ok(None);
    }
    Ok(Some(OAuth2Command::RevokeFamily { family_id: f.id, client_id: client.client_id.clone(), at: now_secs() }))
}
