//! `POST /v4/oauth2/{domain_id}/token`: every grant of the spec. The client authenticates
//! (HTTP Basic or form), the grant is checked against the client's registration, scope rules
//! apply, and whatever must be single-use (codes, refresh tokens, device codes) is decided by
//! a replicated command, so a replay on another node is caught like one on this node.

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::client_auth;
use super::error::{json_no_cache, OAuthError, OAuthResult};
use super::form::OAuthForm;
use super::issuer::issuer;
use super::keys::{self, DomainKeys};
use super::provider::{DomainEndpoint, Provider};
use super::scopes;
use super::secrets::{keyed_hash, new_secret, same_hash, CODE, DEVICE_CODE, REFRESH};
use super::tokens::{self, mint, Subject};
use crate::clock::now_secs;
use crate::context::Core;
use crate::state::model::User;
use crate::state::oauth2::{Client, DevicePoll, DeviceStatus, Issued, OAuth2Applied, OAuth2Command, RefreshFamily};
use crate::state::read::OAuth2Reads;
use crate::state::reply::{Redemption, Refreshed};
use crate::state::{ApplyError, Reader, Reply};

#[utoipa::path(post, path = "/v4/oauth2/{domain_id}/token", operation_id = "oauth2_token", tag = "oauth2",
    params(("domain_id" = String, Path, description = "The domain whose authorization server it is.")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "grant_type (authorization_code | client_credentials | refresh_token | urn:ietf:params:oauth:grant-type:device_code | urn:ietf:params:oauth:grant-type:token-exchange) and its parameters; client authentication by HTTP Basic or client_id/client_secret."),
    responses((status = 200, description = "The token response (RFC 6749 §5.1).", body = Object),
              (status = 400, description = "invalid_request, invalid_grant, invalid_scope, invalid_target, unauthorized_client, unsupported_grant_type, authorization_pending, slow_down, access_denied, expired_token.", body = super::schemas::OAuthErrorBody),
              (status = 401, description = "invalid_client.", body = super::schemas::OAuthErrorBody),
              (status = 404, description = "No such (enabled) domain.", body = super::schemas::OAuthErrorBody),
              (status = 429, description = "Rate limited; see Retry-After.", body = super::schemas::OAuthErrorBody)))]
pub async fn token(
    DomainEndpoint(node, provider, domain_id): DomainEndpoint,
    headers: HeaderMap,
    form: OAuthForm,
) -> OAuthResult<Response> {
    let grant_type = form.require("grant_type")?.to_string();
    let request =
        TokenRequest { node: &node, provider: &provider, domain_id: &domain_id, headers: &headers, form: &form };
    let outcome = grant(request, &grant_type).await;
    let label = if scopes::GRANT_TYPES.contains(&grant_type.as_str()) { grant_type.as_str() } else { "other" };
    match &outcome {
        Ok(_) => provider.metrics.grant(label, "issued"),
        Err(e) => provider.metrics.grant(label, e.error),
    }
    outcome.map(json_no_cache)
}

/// A token request as the grants read it.
#[derive(Clone, Copy)]
struct TokenRequest<'a> {
    node: &'a Core,
    provider: &'a Provider,
    domain_id: &'a str,
    headers: &'a HeaderMap,
    form: &'a OAuthForm,
}

async fn grant(request: TokenRequest<'_>, grant_type: &str) -> OAuthResult<Value> {
    let TokenRequest { node, provider, domain_id, headers, form } = request;
    let keys = match keys::for_domain(node, provider, domain_id).await {
        Ok(keys) => keys,
        Err(e) if e.status == StatusCode::NOT_FOUND && node.engine.read().domain(domain_id)?.is_some() => {
            return disabled_domain(request, grant_type).await;
        }
        Err(e) => return Err(e),
    };
    node.ensure_fresh().await?;
    let client = client_auth::authenticate(node, domain_id, headers, &form.single)?;
    check_grant_type(&client, grant_type)?;
    let iss = issuer(node, domain_id);
    let g = Grant { node, keys: &keys, iss: &iss, client: &client, form };
    match grant_type {
        scopes::CLIENT_CREDENTIALS => client_credentials(g),
        scopes::AUTHORIZATION_CODE => authorization_code(g).await,
        scopes::REFRESH_TOKEN => refresh(g).await,
        scopes::DEVICE_CODE => device_code(g).await,
        _ => super::exchange::exchange(node, &keys, &client, form),
    }
}

/// What every grant works from: the node, the domain's keys and issuer, the authenticated
/// client and the request's form.
#[derive(Clone, Copy)]
struct Grant<'a> {
    node: &'a Core,
    keys: &'a DomainKeys,
    iss: &'a str,
    client: &'a Client,
    form: &'a OAuthForm,
}

/// The grant type is known and registered for the client.
fn check_grant_type(client: &Client, grant_type: &str) -> OAuthResult<()> {
    if !scopes::GRANT_TYPES.contains(&grant_type) {
        return Err(OAuthError::unsupported_grant_type(format!("The grant type {grant_type} is not supported.")));
    }
    if !client.allows_grant(grant_type) {
        return Err(OAuthError::unauthorized_client(format!("The client is not registered for {grant_type}.")));
    }
    Ok(())
}

/// A disabled domain's grants: its clients still authenticate, and every grant is
/// `invalid_grant` (spec: "user or domain disabled"). A presented refresh token goes through
/// the replicated refresh, which revokes its family, so re-enabling the domain does not bring
/// it back (as for a disabled user).
async fn disabled_domain(request: TokenRequest<'_>, grant_type: &str) -> OAuthResult<Value> {
    let TokenRequest { node, provider, domain_id, headers, form } = request;
    node.ensure_fresh().await?;
    let client = client_auth::authenticate(node, domain_id, headers, &form.single)?;
    check_grant_type(&client, grant_type)?;
    if grant_type == scopes::REFRESH_TOKEN {
        if let Some(keys) = keys::stored(node, provider, domain_id)? {
            let iss = issuer(node, domain_id);
            refresh(Grant { node, keys: &keys, iss: &iss, client: &client, form }).await?;
        }
    }
    Err(OAuthError::invalid_grant("The domain is disabled."))
}

fn client_credentials(g: Grant<'_>) -> OAuthResult<Value> {
    let Grant { node, keys, iss, client, form } = g;
    // The token is a platform token whatever the scope (the client is its own principal).
    let granted = scopes::granted(client, form.get("scope"), false)?;
    let minted = mint(node, keys, iss, client, &Subject::Client, &granted, None, None, None)?;
    Ok(tokens::response(node, &minted, &granted, None))
}

/// The user a grant is for, if it still exists and is enabled in an enabled domain.
fn live_user(node: &Core, domain_id: &str, user_id: &str) -> OAuthResult<User> {
    let read = node.engine.read();
    let user = read.user(user_id)?.filter(|u| u.enabled && u.domain_id == domain_id);
    let domain_ok = read.domain(domain_id)?.is_some_and(|d| d.enabled);
    match user {
        Some(u) if domain_ok => Ok(u),
        _ => Err(OAuthError::invalid_grant("The user or the domain is disabled.")),
    }
}

/// A fresh refresh family (and its first token) when the client may refresh.
fn new_family(
    node: &Core,
    client: &Client,
    user: &User,
    scopes: &[String],
    auth_time: i64,
) -> OAuthResult<Option<(RefreshFamily, String)>> {
    if !client.allows_grant(scopes::REFRESH_TOKEN) {
        return Ok(None);
    }
    let now_us = crate::clock::now_micros();
    let id = super::cutoff::new_family_id(now_us, user.tokens_valid_after);
    let secret = new_secret();
    let at = now_us / 1_000_000;
    let family = RefreshFamily {
        id: id.clone(),
        domain_id: client.domain_id.clone(),
        client_id: client.client_id.clone(),
        user_id: user.id.clone(),
        scopes: scopes.to_vec(),
        auth_time,
        created_at: at,
        expires_at: at + node.cfg.oauth2.refresh_token_absolute_lifetime_days * 86_400,
        current: keyed_hash(node, REFRESH, &secret)?,
        spent: Vec::new(),
        revoked_at: None,
    };
    Ok(Some((family, tokens::refresh_token(&id, &secret))))
}

/// What a grant for a signed-in user mints ahead of its replicated command: the tokens, and a
/// new refresh family (with its first refresh token) when the client may refresh.
struct UserTokens {
    minted: tokens::Minted,
    family: Option<(RefreshFamily, String)>,
}

impl UserTokens {
    /// What the command records of the tokens.
    fn issued(&self) -> Issued {
        let family_id = self.family.as_ref().map(|(f, _)| f.id.clone());
        Issued { jti: self.minted.jti.clone(), access_exp: self.minted.exp, family_id }
    }
    fn family(&self) -> Option<RefreshFamily> {
        self.family.as_ref().map(|(f, _)| f.clone())
    }
    /// The token response, once the command redeemed the grant.
    fn response(self, node: &Core, granted: &[String]) -> Value {
        tokens::response(node, &self.minted, granted, self.family.map(|(_, t)| t))
    }
}

/// [`UserTokens`] for `user` signed in at `auth_time`.
fn user_tokens(
    g: Grant<'_>,
    (user, auth_time): (&User, i64),
    granted: &[String],
    nonce: Option<&str>,
) -> OAuthResult<UserTokens> {
    let Grant { node, keys, iss, client, .. } = g;
    let family = new_family(node, client, user, granted, auth_time)?;
    let family_id = family.as_ref().map(|(f, _)| f.id.as_str());
    let subject = Subject::User { user, auth_time };
    let minted = mint(node, keys, iss, client, &subject, granted, nonce, family_id, None)?;
    Ok(UserTokens { minted, family })
}

impl Grant<'_> {
    /// The record a single-use secret of the form names (`field`, hashed for `purpose`) and
    /// its hash, if it is the client's (`owner`); `invalid_grant` (`unknown`) otherwise.
    fn record<T>(
        &self,
        (field, purpose): (&str, &[u8]),
        find: impl FnOnce(&idnode_storage::ReadView<'_>, &str) -> idnode_storage::Result<Option<T>>,
        owner: impl Fn(&T) -> &str,
        unknown: &str,
    ) -> OAuthResult<(String, T)> {
        let secret = self.form.require(field)?;
        let hash = keyed_hash(self.node, purpose, secret)?;
        let found = find(&self.node.engine.read(), &hash)?.filter(|r| owner(r) == self.client.client_id);
        Ok((hash, found.ok_or_else(|| OAuthError::invalid_grant(unknown))?))
    }
}

/// Replicates a grant's command: its log index and outcome; a refusal is `invalid_grant`.
async fn decide<R: Reply>(node: &Core, cmd: OAuth2Command) -> OAuthResult<(u64, R)> {
    node.propose_at_as(cmd).await.map_err(refused)
}

/// [`decide`], answering once every reachable node has applied the command: the tokens it
/// issued (or revoked, on a replay) hold wherever they are presented next.
async fn decide_everywhere<R: Reply>(node: &Core, cmd: OAuth2Command) -> OAuthResult<R> {
    let (index, outcome) = decide(node, cmd).await?;
    node.wait_cluster_applied(index).await;
    Ok(outcome)
}

fn refused(e: crate::http::ApiError) -> OAuthError {
    if e.status.is_client_error() {
        OAuthError::invalid_grant(e.message)
    } else {
        e.into()
    }
}

/// A code or device approval whose sign-in a password change or a disable ended.
const SIGNED_IN_BEFORE_CHANGE: &str =
    "The user's password changed or the user was disabled after signing in; sign in again.";

async fn authorization_code(g: Grant<'_>) -> OAuthResult<Value> {
    let Grant { node, client, form, .. } = g;
    let unknown = "The authorization code is invalid or expired.";
    let (hash, stored) = g.record(("code", CODE), |r, h| r.oauth2_code(h), |c| &c.client_id, unknown)?;
    // RFC 6749 §4.1.3: the authorization request's redirect URI, present and identical (a
    // code has one, given or the client's only registered URI).
    match form.get("redirect_uri") {
        None => return Err(OAuthError::invalid_grant("redirect_uri is required with an authorization code.")),
        Some(uri) if uri != stored.redirect_uri => {
            return Err(OAuthError::invalid_grant("redirect_uri differs from the authorization request's."))
        }
        Some(_) => {}
    }
    match (&stored.code_challenge, form.get("code_verifier")) {
        (Some(challenge), Some(verifier)) => {
            let ok_len = (43..=128).contains(&verifier.len());
            let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
            if !ok_len || !idnode_keys::constant_time_eq(computed.as_bytes(), challenge.as_bytes()) {
                return Err(OAuthError::invalid_grant("The PKCE code_verifier does not match the code_challenge."));
            }
        }
        (Some(_), None) => return Err(OAuthError::invalid_grant("The PKCE code_verifier is missing.")),
        (None, Some(_)) => return Err(OAuthError::invalid_grant("The authorization request had no code_challenge.")),
        (None, None) => {}
    }
    let user = live_user(node, &client.domain_id, &stored.user_id)?;
    // This node is fresh: a password change or disable that returned before now is applied here.
    let seen = form.get("code").and_then(super::cutoff::code_seen_us);
    if super::cutoff::sign_in_cut_off(&user, stored.auth_time, seen) {
        return Err(OAuthError::invalid_grant(SIGNED_IN_BEFORE_CHANGE));
    }
    let minted = user_tokens(g, (&user, stored.auth_time), &stored.scopes, stored.nonce.as_deref())?;
    let cmd = OAuth2Command::RedeemCode {
        hash,
        client_id: client.client_id.clone(),
        at: now_secs(),
        issued: minted.issued(),
        family: minted.family(),
    };
    match decide_everywhere(node, cmd).await? {
        Redemption::Redeemed => {}
        Redemption::Replayed => {
            return Err(OAuthError::invalid_grant(
                "The authorization code was used already; the tokens it gave are revoked.",
            ))
        }
    }
    Ok(minted.response(node, &stored.scopes))
}

async fn refresh(g: Grant<'_>) -> OAuthResult<Value> {
    let Grant { node, keys, iss, client, form } = g;
    let presented = form.require("refresh_token")?;
    let (family_id, secret) =
        tokens::split_refresh(presented).ok_or_else(|| OAuthError::invalid_grant("The refresh token is invalid."))?;
    let presented = keyed_hash(node, REFRESH, secret)?;
    // A wider scope is refused before the token rotates: a refused request must not spend it.
    if let Some(req) = form.get("scope") {
        let stored = node
            .engine
            .read()
            .oauth2_family(family_id)?
            .filter(|f| f.client_id == client.client_id && same_hash(&f.current, &presented));
        if let Some(f) = stored {
            if let Some(s) = req.split(' ').filter(|s| !s.is_empty()).find(|s| !f.scopes.iter().any(|x| x == s)) {
                return Err(OAuthError::invalid_scope(format!("The scope {s} was not granted originally.")));
            }
        }
    }
    let next_secret = new_secret();
    let cmd = OAuth2Command::Refresh {
        family_id: family_id.to_string(),
        client_id: client.client_id.clone(),
        presented,
        next: keyed_hash(node, REFRESH, &next_secret)?,
        at: now_secs(),
    };
    let family = match decide_everywhere(node, cmd).await? {
        Refreshed::Family(f) => *f,
        Refreshed::Reused => {
            return Err(OAuthError::invalid_grant(
                "The refresh token was used already; every token of its family is revoked.",
            ))
        }
        Refreshed::Revoked => {
            return Err(OAuthError::invalid_grant(
                "The user, the client or the domain is disabled; the refresh token is revoked.",
            ))
        }
    };
    // A narrower scope may be asked for (RFC 6749 §6); never a wider one.
    let granted = match form.get("scope") {
        None => family.scopes.clone(),
        Some(req) => {
            let asked: Vec<String> = req.split(' ').filter(|s| !s.is_empty()).map(str::to_string).collect();
            if let Some(s) = asked.iter().find(|s| !family.scopes.contains(s)) {
                return Err(OAuthError::invalid_scope(format!("The scope {s} was not granted originally.")));
            }
            asked
        }
    };
    let user = live_user(node, &client.domain_id, &family.user_id)?;
    // The refresh is applied here, and so is every password change or disable before it.
    if super::cutoff::family_cut_off(&user, &family, node.raft.cluster_version()) {
        let cmd =
            OAuth2Command::RevokeFamily { family_id: family.id, client_id: client.client_id.clone(), at: now_secs() };
        decide_everywhere::<OAuth2Applied>(node, cmd).await?;
        return Err(OAuthError::invalid_grant(
            "The user's password changed or the user was disabled; the refresh token is revoked.",
        ));
    }
    let subject = Subject::User { user: &user, auth_time: family.auth_time };
    let minted = mint(node, keys, iss, client, &subject, &granted, None, Some(&family.id), None)?;
    Ok(tokens::response(node, &minted, &granted, Some(tokens::refresh_token(&family.id, &next_secret))))
}

async fn device_code(g: Grant<'_>) -> OAuthResult<Value> {
    let Grant { node, client, .. } = g;
    let unknown = "The device code is invalid.";
    let (hash, grant) =
        g.record(("device_code", DEVICE_CODE), |r, h| r.oauth2_device_grant(h), |d| &d.client_id, unknown)?;
    // Minted ahead (tokens carry the node's clock and a fresh jti, which apply must not draw),
    // returned only if the poll redeems the approved grant.
    let approved = match &grant.status {
        DeviceStatus::Approved { user_id, auth_time } => {
            let user = live_user(node, &client.domain_id, user_id)?;
            // An approval keeps only its sign-in's second (no cut-off): the clocks decide.
            if super::cutoff::sign_in_cut_off(&user, *auth_time, None) {
                return Err(OAuthError::invalid_grant(SIGNED_IN_BEFORE_CHANGE));
            }
            Some((user, *auth_time))
        }
        _ => None,
    };
    let minted = match &approved {
        Some((user, auth_time)) => Some(user_tokens(g, (user, *auth_time), &grant.scopes, None)?),
        None => None,
    };
    let cmd = OAuth2Command::PollDevice {
        hash,
        client_id: client.client_id.clone(),
        at: now_secs(),
        issued: minted.as_ref().map(UserTokens::issued),
        family: minted.as_ref().and_then(UserTokens::family),
    };
    let bad = |error: &'static str, d: &str| OAuthError::new(axum::http::StatusCode::BAD_REQUEST, error, d);
    // Only an issuing poll waits for the other members (a pending one merely notes the time).
    let issuing = minted.is_some();
    let (index, poll) = decide(node, cmd).await?;
    if issuing {
        node.wait_cluster_applied(index).await;
    }
    match poll {
        DevicePoll::Pending => Err(bad("authorization_pending", "The user has not decided yet.")),
        DevicePoll::SlowDown { interval } => {
            Err(bad("slow_down", &format!("Polling too fast; wait {interval} s between requests.")))
        }
        DevicePoll::Denied => Err(bad("access_denied", "The user denied the request.")),
        DevicePoll::Expired => Err(bad("expired_token", "The device code has expired; start again.")),
        DevicePoll::Issued(_) => match minted {
            Some(m) => Ok(m.response(node, &grant.scopes)),
            None => Err(crate::http::ApiError::internal("a device grant issued without tokens").into()),
        },
    }
}

impl From<ApplyError> for OAuthError {
    fn from(e: ApplyError) -> Self {
        crate::http::ApiError::from(e).into()
    }
}
