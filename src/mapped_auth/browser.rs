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
//! provider's), cached for `discovery::DISCOVERY_TTL` (a failure for `DISCOVERY_RETRY`; at most
//! `MAX_DISCOVERY_DOCS` issuers, the least recently used forgotten first). Every request to
//! the provider goes through the node's outbound policy (`providers::outbound`).
//!
//! Login CSRF: the state is bound to the browser that started the login. The start answer
//! sets a random cookie (`HttpOnly`, `SameSite=Lax`, limited to the callback's path, `Secure`
//! with the `__Secure-` prefix when this service is https); the state carries only its hash,
//! and a callback whose cookie is missing or differs is refused before the code is redeemed.
//! So someone who obtains a state and code (their own login at the provider) cannot make
//! another browser finish it. The page at `redirect_uri` must send the callback from the same
//! browser with its cookies (same site as this service, `credentials: "include"`).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::discovery::{unreachable, Discovery, MAX_RESPONSE};
use super::login::{login, External};
use super::oidc::{subject, usable_provider};
use super::refusal::refused;
use super::schemas::{BrowserStart, BrowserStartBody, CallbackBody};
use super::state::MappedAuth;
use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::query_flag;
use crate::http::openapi::errors as E;
use crate::http::JsonBody;
use crate::providers::jwks::read_capped;
use crate::providers::outbound::Outbound;
use crate::providers::verify::verify_oidc_jwt;
use crate::state::providers::{OidcProvider, ProviderConfig, ProviderKind};
use crate::token::{sealed, Tokens};

/// Seconds a started login may take to come back.
pub const FLOW_LIFETIME_S: i64 = 600;
/// Where the browser-binding cookie is sent back (and nowhere else).
const CALLBACK_PATH: &str = "/v4/federation/oidc/callback";
/// v2: the state carries the browser binding; a v1 state (or an older node) opens none of v2.
const PURPOSE: sealed::Purpose =
    sealed::Purpose { label: "idnode federation oidc state v2", ad: b"idnode-federation-oidc-v2", max_len: 8 * 1024 };

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
    /// The hash of the browser-binding cookie set by the start.
    browser: String,
}

/// The browser-binding cookie's name: `__Secure-` prefixed (and `Secure`) when this service
/// is https.
fn cookie_name(node: &Core) -> &'static str {
    if secure(node) {
        "__Secure-idnode_federation_login"
    } else {
        "idnode_federation_login"
    }
}

fn secure(node: &Core) -> bool {
    node.cfg.public_base().starts_with("https://")
}

fn binding_cookie(node: &Core, value: &str, max_age: i64) -> Option<HeaderValue> {
    let secure = if secure(node) { "; Secure" } else { "" };
    let c = format!(
        "{}={value}; Path={CALLBACK_PATH}; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}",
        cookie_name(node)
    );
    HeaderValue::from_str(&c).ok()
}

/// What the state keeps of the cookie: its hash, so the state (which travels through the
/// provider and the redirect URI) never holds the cookie itself.
fn browser_hash(cookie: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(cookie.as_bytes()))
}

/// Whether the request carries the cookie of the browser that started this login.
fn same_browser(node: &Core, headers: &HeaderMap, p: &Pending) -> bool {
    crate::oauth2::page_state::cookie(headers, cookie_name(node))
        .filter(|c| !c.is_empty() && c.len() <= 256)
        .is_some_and(|c| idnode_keys::constant_time_eq(browser_hash(&c).as_bytes(), p.browser.as_bytes()))
}

fn oidc(p: &crate::state::providers::Provider) -> ApiResult<&OidcProvider> {
    match &p.config {
        ProviderConfig::Oidc(idp) => Ok(idp),
        _ => Err(ApiError::internal("an OIDC provider record holds another kind")),
    }
}

#[utoipa::path(post, path = "/v4/federation/identity_providers/{idp_id}/auth", tag = "identity_providers", operation_id = "federation_browser_start", description = "Starts a browser login at an external OIDC provider: answers the provider's authorization URL (code flow with PKCE and a nonce; `state` carries the sealed pending login). `redirect_uri` must be one of the provider's `allowed_redirect_uris`.",
    security(()),
    params(("idp_id" = String, Path, description = "The identity provider's id.")),
    request_body(content = BrowserStartBody, content_type = "application/json"),
    responses((status = 201, description = "Where to send the browser.", body = BrowserStart), E::BadRequest, E::Unauthorized, E::NotFound, E::TooManyRequests,
              E::Internal, E::Unavailable))]
pub async fn start(
    State(node): State<Arc<Tokens>>,
    State(mapped): State<Arc<MappedAuth>>,
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
    let d = mapped.discovery.get(&mapped.outbound, &idp.issuer).await?;
    let verifier = idnode_keys::random_token(32);
    let browser = idnode_keys::random_token(32);
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    let pending = Pending {
        idp_id: provider.id.clone(),
        redirect_uri: body.redirect_uri.clone(),
        scope: body.scope.as_ref().map(|s| s.to_string()),
        nonce: idnode_keys::random_token(16),
        verifier,
        exp: crate::clock::now_secs() + FLOW_LIFETIME_S,
        browser: browser_hash(&browser),
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
    let mut resp = (StatusCode::CREATED, Json(BrowserStart { auth_url: url.to_string() })).into_response();
    let cookie = binding_cookie(&node, &browser, FLOW_LIFETIME_S).ok_or_else(|| ApiError::internal("no cookie"))?;
    resp.headers_mut().append(header::SET_COOKIE, cookie);
    Ok(resp)
}

#[derive(Deserialize)]
struct TokenAnswer {
    id_token: Option<String>,
}

/// Redeems the code at the provider's token endpoint; answers its ID token.
async fn redeem(outbound: &Outbound, idp: &OidcProvider, d: &Discovery, p: &Pending, code: &str) -> ApiResult<String> {
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", p.redirect_uri.as_str()),
        ("code_verifier", p.verifier.as_str()),
    ];
    let secret = idp.client_secret.as_ref().map(|s| s.0.as_str());
    let method = idp.token_endpoint_auth_method.as_deref().unwrap_or("client_secret_basic");
    let client = outbound.client();
    let mut req = client.post(&d.token_endpoint);
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
    let mut resp = outbound.send(client, req.form(&form)).await.map_err(unreachable)?;
    let status = resp.status();
    let body = read_capped(&mut resp, MAX_RESPONSE).await.map_err(unreachable)?;
    if status.is_client_error() {
        tracing::debug!("the token endpoint refused a code: {status}");
        return Err(ApiError::unauthorized("The identity provider refused the authorization code."));
    }
    if !status.is_success() {
        return Err(unreachable(format!("the token endpoint answered {status}")));
    }
    let answer: TokenAnswer =
        serde_json::from_slice(&body).map_err(|_| unreachable("the token endpoint's answer is not valid"))?;
    answer.id_token.ok_or_else(|| ApiError::unauthorized("The identity provider issued no ID token."))
}

#[utoipa::path(post, path = "/v4/federation/oidc/callback", tag = "identity_providers", operation_id = "federation_browser_callback", description = "Finishes a browser login: redeems the provider's authorization code, verifies the ID token (signature, issuer, audience, times, nonce) and answers a Keystone token through the provider's mapping rulesets. Must come from the browser that started the login (with the cookie the start set). 400: the browser's cookie is missing or not this login's; 401: the state is invalid or expired, the code is refused, or no rule matches.",
    security(()),
    params(("nocatalog" = Option<bool>, Query, description = "Present (any value but 0/false/no/off): leave the catalog out.")),
    request_body(content = CallbackBody, content_type = "application/json"),
    responses((status = 200, description = "The token; its id is in X-Subject-Token.", body = crate::auth::schemas::TokenEnvelope, headers(("X-Subject-Token" = String, description = "The new token."))),
              E::BadRequest, E::Unauthorized, E::Forbidden, E::NotFound, E::Conflict, E::TooManyRequests, E::Internal, E::Unavailable))]
pub async fn callback(
    State(node): State<Arc<Tokens>>,
    State(mapped): State<Arc<MappedAuth>>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<CallbackBody>,
) -> ApiResult<Response> {
    let ring = node.token_ring().map_err(|_| ApiError::unavailable("The cluster is not bootstrapped yet."))?;
    let pending: Pending = sealed::open(&ring, &PURPOSE, &body.state)
        .filter(|p: &Pending| crate::clock::now_secs() < p.exp)
        .ok_or_else(|| ApiError::unauthorized("The login state is not valid or has expired; start again."))?;
    if !same_browser(&node, &headers, &pending) {
        return Err(ApiError::bad_request(
            "This login was not started in this browser (its cookie is missing or differs); start again.",
        ));
    }
    if body.code.is_empty() || body.code.len() > 4096 {
        return Err(ApiError::bad_request("Invalid input for field 'code'."));
    }
    let provider = usable_provider(&node, ProviderKind::Oidc, &pending.idp_id)?;
    let idp = oidc(&provider)?;
    let d = mapped.discovery.get(&mapped.outbound, &idp.issuer).await?;
    let id_token = redeem(&mapped.outbound, idp, &d, &pending, &body.code).await?;
    let claims = verify_oidc_jwt(idp, &id_token, crate::clock::now_secs(), &mapped.jwks).await.map_err(refused)?;
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
    let mut resp = login(&node, &mapped, ext, scope.as_ref(), query_flag(q.get("nocatalog"))).await?;
    // The login is finished: the browser forgets its binding.
    if let Some(clear) = binding_cookie(&node, "", 0) {
        resp.headers_mut().append(header::SET_COOKIE, clear);
    }
    Ok(resp)
}
