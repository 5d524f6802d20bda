//! The browser flow of an external OIDC provider (api-shapes §13.1):
//! `POST /v4/federation/identity_providers/{idp_id}/auth` `{redirect_uri, scope?}` answers
//! 201 `{auth_url}`, the provider's authorization URL (authorization code with PKCE S256 and a
//! nonce); the provider sends the browser back to `redirect_uri`, whose page posts what it got
//! to `POST /v4/federation/oidc/callback` `{state, code}`. The callback redeems the code at
//! the provider's token endpoint (client authentication per `token_endpoint_auth_method`:
//! `client_secret_basic`, the default, `client_secret_post` or `none`), verifies the ID token
//! like `/jwt` does plus its `nonce`, and logs in through the mappings (200 token).
//!
//! No server-side session: the pending login (provider, redirect URI, scope, nonce, PKCE
//! verifier, expiry) travels in `state`, sealed under the token key ring (`token::sealed`),
//! so the callback may land on any node. The provider's endpoints come from its discovery
//! document (`{issuer}/.well-known/openid-configuration`, whose `issuer` must be the
//! provider's), cached for [`DISCOVERY_TTL`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::login::{login, External};
use super::oidc::{refused, subject, usable_provider};
use super::schemas::{BrowserStart, BrowserStartBody, CallbackBody};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::query_flag;
use crate::http::openapi::errors as E;
use crate::http::JsonBody;
use crate::node::Node;
use crate::providers::jwks::read_capped;
use crate::providers::verify::{verify_oidc_jwt, VerifyError};
use crate::state::providers::{OidcProvider, ProviderConfig, ProviderKind};
use crate::token::sealed;

/// Seconds a started login may take to come back.
pub const FLOW_LIFETIME_S: i64 = 600;
pub const DISCOVERY_TTL: Duration = Duration::from_secs(3600);
const HTTP_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_RESPONSE: usize = 256 * 1024;
const PURPOSE: sealed::Purpose =
    sealed::Purpose { label: "idnode federation oidc state v1", ad: b"idnode-federation-oidc-v1", max_len: 8 * 1024 };

/// The pending login carried in `state`.
#[derive(Serialize, Deserialize)]
struct Pending {
    idp_id: String,
    redirect_uri: String,
    /// The requested scope as JSON text (postcard cannot carry a `serde_json::Value`).
    scope: Option<String>,
    nonce: String,
    verifier: String,
    exp: i64,
}

/// The endpoints of a provider's discovery document.
#[derive(Clone, Deserialize)]
pub struct Discovery {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
}

#[derive(Default)]
pub struct DiscoveryCache {
    docs: Mutex<HashMap<String, (Instant, Discovery)>>,
}

fn http() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .timeout(HTTP_TIMEOUT)
        .connect_timeout(HTTP_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("no HTTP client: {e}"))
}

fn unreachable(why: impl std::fmt::Display) -> ApiError {
    refused(VerifyError::KeySetUnavailable(why.to_string()))
}

/// An https URL (plain http only to a loopback host), as the provider's endpoints must be.
fn endpoint_ok(u: &str) -> bool {
    crate::oauth2::clients::valid_redirect_uri(u)
}

impl DiscoveryCache {
    async fn get(&self, issuer: &str) -> ApiResult<Discovery> {
        if let Some((at, d)) = self.docs.lock().unwrap_or_else(|p| p.into_inner()).get(issuer) {
            if at.elapsed() < DISCOVERY_TTL {
                return Ok(d.clone());
            }
        }
        let url = format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/'));
        let mut resp = http().map_err(unreachable)?.get(url).send().await.map_err(|e| unreachable(e.without_url()))?;
        if !resp.status().is_success() {
            return Err(unreachable(format!("discovery answered {}", resp.status())));
        }
        let body = read_capped(&mut resp, MAX_RESPONSE).await.map_err(unreachable)?;
        let d: Discovery =
            serde_json::from_slice(&body).map_err(|_| unreachable("the discovery document is not valid"))?;
        if d.issuer != issuer || !endpoint_ok(&d.authorization_endpoint) || !endpoint_ok(&d.token_endpoint) {
            return Err(unreachable("the discovery document names another issuer or an insecure endpoint"));
        }
        self.docs.lock().unwrap_or_else(|p| p.into_inner()).insert(issuer.to_string(), (Instant::now(), d.clone()));
        Ok(d)
    }
}

fn oidc(p: &crate::state::providers::Provider) -> ApiResult<&OidcProvider> {
    match &p.config {
        ProviderConfig::Oidc(idp) => Ok(idp),
        _ => Err(ApiError::internal("an OIDC provider record holds another kind")),
    }
}

#[utoipa::path(
    post,
    path = "/v4/federation/identity_providers/{idp_id}/auth",
    tag = "identity_providers",
    operation_id = "federation_browser_start",
    description = "Starts a browser login at an external OIDC provider: answers the provider's authorization URL (code flow with PKCE and a nonce; `state` carries the sealed pending login). `redirect_uri` must be one of the provider's `allowed_redirect_uris`.",
    security(()),
    params(("idp_id" = String, Path, description = "The identity provider's id.")),
    request_body(content = BrowserStartBody, content_type = "application/json"),
    responses(
        (status = 201, description = "Where to send the browser.", body = BrowserStart),
        E::BadRequest, E::Unauthorized, E::NotFound, E::Internal, E::Unavailable,
    )
)]
pub async fn start(
    State(node): State<Arc<Node>>,
    Path(idp_id): Path<String>,
    JsonBody(body): JsonBody<BrowserStartBody>,
) -> ApiResult<Response> {
    let provider = usable_provider(&node, ProviderKind::Oidc, &idp_id)?;
    let idp = oidc(&provider)?;
    if !idp.allowed_redirect_uris.contains(&body.redirect_uri) {
        return Err(ApiError::bad_request(
            "Invalid input for field 'redirect_uri': not one of the provider's allowed_redirect_uris.",
        ));
    }
    let d = node.mapped.discovery.get(&idp.issuer).await?;
    let verifier = idnode_keys::random_token(32);
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    let pending = Pending {
        idp_id: provider.id.clone(),
        redirect_uri: body.redirect_uri.clone(),
        scope: body.scope.as_ref().map(|s| s.to_string()),
        nonce: idnode_keys::random_token(16),
        verifier,
        exp: crate::oauth2::now() + FLOW_LIFETIME_S,
    };
    let ring = node.token_ring().map_err(|_| ApiError::unavailable("The cluster is not bootstrapped yet."))?;
    let state = sealed::seal(&ring, &PURPOSE, &pending).ok_or_else(|| ApiError::internal("no primary token key"))?;
    let mut scopes = idp.oidc_scopes.clone();
    if !scopes.iter().any(|s| s == "openid") {
        scopes.insert(0, "openid".into());
    }
    let mut url = url::Url::parse(&d.authorization_endpoint).map_err(ApiError::internal)?;
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &idp.client_id)
        .append_pair("redirect_uri", &body.redirect_uri)
        .append_pair("scope", &scopes.join(" "))
        .append_pair("state", &state)
        .append_pair("nonce", &pending.nonce)
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256");
    Ok((StatusCode::CREATED, Json(BrowserStart { auth_url: url.to_string() })).into_response())
}

#[derive(Deserialize)]
struct TokenAnswer {
    id_token: Option<String>,
}

/// Redeems the code at the provider's token endpoint; answers its ID token.
async fn redeem(idp: &OidcProvider, d: &Discovery, p: &Pending, code: &str) -> ApiResult<String> {
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", p.redirect_uri.as_str()),
        ("code_verifier", p.verifier.as_str()),
    ];
    let secret = idp.client_secret.as_ref().map(|s| s.0.as_str());
    let method = idp.token_endpoint_auth_method.as_deref().unwrap_or("client_secret_basic");
    let mut req = http().map_err(unreachable)?.post(&d.token_endpoint);
    match (method, secret) {
        ("client_secret_basic", Some(secret)) => {
            // RFC 6749 §2.3.1: both parts form-urlencoded before Basic encoding.
            let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            req = req.basic_auth(enc(&idp.client_id), Some(enc(secret)));
        }
        ("client_secret_post", Some(secret)) => {
            form.push(("client_id", idp.client_id.as_str()));
            form.push(("client_secret", secret));
        }
        _ => form.push(("client_id", idp.client_id.as_str())),
    }
    let mut resp = req.form(&form).send().await.map_err(|e| unreachable(e.without_url()))?;
    let status = resp.status();
    let body = read_capped(&mut resp, MAX_RESPONSE).await.map_err(unreachable)?;
    if status.is_client_error() {
        return Err(ApiError::unauthorized("The identity provider refused the authorization code."));
    }
    if !status.is_success() {
        return Err(unreachable(format!("the token endpoint answered {status}")));
    }
    let answer: TokenAnswer =
        serde_json::from_slice(&body).map_err(|_| unreachable("the token endpoint's answer is not valid"))?;
    answer.id_token.ok_or_else(|| ApiError::unauthorized("The identity provider issued no ID token."))
}

#[utoipa::path(
    post,
    path = "/v4/federation/oidc/callback",
    tag = "identity_providers",
    operation_id = "federation_browser_callback",
    description = "Finishes a browser login: redeems the provider's authorization code, verifies the ID token (signature, issuer, audience, times, nonce) and answers a Keystone token through the provider's mapping rulesets. 401: the state is invalid or expired, the code is refused, or no rule matches.",
    security(()),
    params(("nocatalog" = Option<bool>, Query, description = "Present (any value but 0/false/no/off): leave the catalog out.")),
    request_body(content = CallbackBody, content_type = "application/json"),
    responses(
        (status = 200, description = "The token; its id is in X-Subject-Token.", body = crate::auth::schemas::TokenEnvelope, headers(("X-Subject-Token" = String, description = "The new token."))),
        E::BadRequest, E::Unauthorized, E::Forbidden, E::NotFound, E::Conflict, E::TooManyRequests, E::Internal, E::Unavailable,
    )
)]
pub async fn callback(
    State(node): State<Arc<Node>>,
    Query(q): Query<HashMap<String, String>>,
    JsonBody(body): JsonBody<CallbackBody>,
) -> ApiResult<Response> {
    let ring = node.token_ring().map_err(|_| ApiError::unavailable("The cluster is not bootstrapped yet."))?;
    let pending: Pending = sealed::open(&ring, &PURPOSE, &body.state)
        .filter(|p: &Pending| crate::oauth2::now() < p.exp)
        .ok_or_else(|| ApiError::unauthorized("The login state is not valid or has expired; start again."))?;
    if body.code.is_empty() || body.code.len() > 4096 {
        return Err(ApiError::bad_request("Invalid input for field 'code'."));
    }
    let provider = usable_provider(&node, ProviderKind::Oidc, &pending.idp_id)?;
    let idp = oidc(&provider)?;
    let d = node.mapped.discovery.get(&idp.issuer).await?;
    let id_token = redeem(idp, &d, &pending, &body.code).await?;
    let claims = verify_oidc_jwt(idp, &id_token, crate::oauth2::now(), &node.mapped.jwks).await.map_err(refused)?;
    let nonce_ok = claims
        .get("nonce")
        .and_then(serde_json::Value::as_str)
        .is_some_and(|n| idnode_keys::constant_time_eq(n.as_bytes(), pending.nonce.as_bytes()));
    if !nonce_ok {
        return Err(ApiError::unauthorized("The ID token's nonce is not this login's."));
    }
    let workload = subject(&claims)?;
    let scope = match &pending.scope {
        Some(text) => Some(serde_json::from_str::<serde_json::Value>(text).map_err(ApiError::internal)?),
        None => None,
    };
    let ext = External { provider, claims, workload, rule_name: None };
    login(&node, ext, scope.as_ref(), query_flag(q.get("nocatalog"))).await
}
