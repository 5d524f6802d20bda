//! Authentication methods. Each one resolves to a user; failures all look alike (401) so a
//! caller cannot learn which part was wrong.

use axum::http::{HeaderMap, Uri};
use serde_json::Value;

use crate::clock::now_micros;
use crate::http::error::{ApiError, ApiResult};
use crate::http::metrics::labels;
use crate::state::keys::ns;
use crate::state::model::User;
use crate::state::Reader;
use crate::token::{Delegation, Method, Tokens};

pub use super::proven::Proven;

pub(super) fn fail(node: &Tokens, method: &str) -> ApiError {
    node.metrics.auth_attempts.get_or_create(&labels(&[("method", method), ("result", "failure")])).inc();
    ApiError::unauthenticated()
}

/// The HTTP request a method may need besides the body: the `oauth1` method checks the
/// request's signature.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    pub headers: &'a HeaderMap,
    pub uri: &'a Uri,
}

pub async fn authenticate(node: &Tokens, identity: &Value, request: Option<Request<'_>>) -> ApiResult<Proven> {
    node.ensure_fresh().await?;
    let methods = identity
        .get("methods")
        .and_then(Value::as_array)
        .filter(|m| !m.is_empty())
        .ok_or_else(|| ApiError::bad_request("'methods' is a required property."))?;
    let mut proven: Option<Proven> = None;
    for m in methods {
        let name = m.as_str().ok_or_else(|| ApiError::bad_request("Invalid input for field 'methods'."))?;
        let step = match name {
            "password" => password(node, identity.get("password")).await?,
            "token" => token(node, identity.get("token")).await?,
            "totp" => super::totp::authenticate(node, identity.get("totp")).await?,
            "application_credential" => {
                crate::appcred::auth::authenticate(node, identity.get("application_credential")).await?
            }
            "oauth1" => match request {
                Some(r) => crate::oauth1::auth::authenticate(node, r.headers, r.uri).await.inspect_err(|e| {
                    if e.status == axum::http::StatusCode::UNAUTHORIZED {
                        fail(node, "oauth1");
                    }
                })?,
                None => return Err(fail(node, "oauth1")),
            },
            other => {
                return Err(ApiError::unauthorized(format!(
                    "Attempted to authenticate with an unsupported method: {other}."
                )))
            }
        };
        proven = Some(match proven {
            None => step,
            Some(mut p) if p.user.id == step.user.id => {
                p.methods |= step.methods;
                p.parent = p.parent.or(step.parent);
                if step.delegation != Delegation::None {
                    p.delegation = step.delegation;
                }
                p.fixed_scope = p.fixed_scope.or(step.fixed_scope);
                p.expires_at = p.expires_at.or(step.expires_at);
                p.restriction = p.restriction.or(step.restriction);
                p
            }
            Some(_) => return Err(ApiError::unauthorized("Methods identify different users.")),
        });
    }
    let proven = proven.ok_or_else(ApiError::unauthenticated)?;
    for m in methods.iter().filter_map(Value::as_str) {
        node.metrics.auth_attempts.get_or_create(&labels(&[("method", m), ("result", "success")])).inc();
    }
    Ok(proven)
}

async fn password(node: &Tokens, body: Option<&Value>) -> ApiResult<Proven> {
    let user =
        body.and_then(|b| b.get("user")).ok_or_else(|| ApiError::bad_request("'user' is a required property."))?;
    let pw = user
        .get("password")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::bad_request("'password' is a required property."))?
        .to_string();
    // Known and unknown users take the same path: one lookup, one argon2 verification (of a
    // dummy hash when there is no usable one), the lock check after it, and with lockout on
    // one recorded failure (refused by apply for an unknown user), so neither the answer nor
    // its timing says whether the user exists or is locked. Users are acknowledged once every
    // reachable node applied them, so no catch-up with the leader is needed first.
    let found = find_user(node, user)?.filter(|u| u.enabled);
    let usable = found.as_ref().and_then(|u| u.password_hash.clone());
    let candidate = usable.is_some();
    let ok = node.verify_password(pw.clone(), usable.unwrap_or_else(|| node.dummy_hash.clone())).await?;
    let locked = node.locked(found.as_ref().map_or("", |u| u.id.as_str()), found.as_ref())?;
    match found {
        Some(u) if ok && candidate && !locked && domain_enabled(node, &u)? => {
            if node.cfg.security.expired(&u, now_micros()) {
                fail(node, "password");
                return Err(ApiError::unauthorized(format!(
                    "The password is expired and needs to be changed for user: {}.",
                    u.id
                )));
            }
            node.note_auth_success(&u).await?;
            node.rehash_kept_password(&u, pw).await;
            Ok(Proven::of(u, Method::Password as u8, None))
        }
        Some(u) if locked => {
            tracing::info!(user_id = %u.id, "authentication refused: the account is locked");
            Err(fail(node, "password"))
        }
        Some(u) if candidate => {
            node.note_auth_failure(&u.id).await;
            Err(fail(node, "password"))
        }
        _ => {
            node.note_auth_failure(UNKNOWN_USER).await;
            Err(fail(node, "password"))
        }
    }
}

/// An id no user has (ids are uuid hex): a failure recorded for it is refused by apply.
pub(super) const UNKNOWN_USER: &str = "-";

pub(super) fn domain_enabled(node: &Tokens, u: &User) -> ApiResult<bool> {
    Ok(node.engine.read().domain(&u.domain_id)?.is_some_and(|d| d.enabled))
}

/// `{"id": …}` or `{"name": …, "domain": {"id"|"name": …}}`.
pub(super) fn find_user(node: &Tokens, user: &Value) -> ApiResult<Option<User>> {
    let view = node.engine.read();
    if let Some(id) = user.get("id").and_then(Value::as_str) {
        return Ok(view.user(id)?);
    }
    let name = user
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::bad_request("'user' needs an 'id' or a 'name'."))?;
    let domain = user.get("domain").ok_or_else(|| ApiError::bad_request("A user name needs a 'domain'."))?;
    let domain_id = match (domain.get("id").and_then(Value::as_str), domain.get("name").and_then(Value::as_str)) {
        (Some(id), _) => Some(id.to_string()),
        (None, Some(n)) => view.id_by_name(ns::DOMAIN_NAME, "", n)?,
        _ => return Err(ApiError::bad_request("'domain' needs an 'id' or a 'name'.")),
    };
    let Some(domain_id) = domain_id else { return Ok(None) };
    match view.id_by_name(ns::USER_NAME, &domain_id, name)? {
        Some(id) => Ok(view.user(&id)?),
        None => Ok(None),
    }
}

async fn token(node: &Tokens, body: Option<&Value>) -> ApiResult<Proven> {
    let id = body
        .and_then(|b| b.get("id"))
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::bad_request("'id' is a required property of 'token'."))?;
    // Keystone answers a revoked or unknown token with 404, like its validation does.
    let vt = node.validate_token(id, false).await.map_err(|e| {
        fail(node, "token");
        if e.status == axum::http::StatusCode::NOT_FOUND {
            ApiError::new(e.status, "Failed to validate token")
        } else {
            ApiError::unauthenticated()
        }
    })?;
    if vt.payload.trust().is_some() {
        return Err(ApiError::forbidden(
            "You are not authorized to perform the requested action: Using trust-scoped token to create another \
             token. Create a new trust-scoped token instead.",
        ));
    }
    if vt.payload.oauth1().is_some() {
        return Err(ApiError::forbidden(
            "You are not authorized to perform the requested action: Using OAuth-scoped token to create another \
             token. Create a new OAuth-scoped token instead.",
        ));
    }
    if vt.payload.is_delegated() || vt.payload.app_cred().is_some() {
        // Keystone (LP#2153453): a token from a signed request must not buy a broader one.
        return Err(ApiError::forbidden("Using a delegated token to create another token is not allowed."));
    }
    let mut proven = Proven::of(vt.user.clone(), vt.payload.methods | Method::Token as u8, Some(vt.payload.clone()));
    // A mapped token re-scopes within what its mapping grants, and stays bound to its ruleset;
    // a Keystone federated one keeps its login's groups, as in Keystone.
    if vt.payload.federated().is_some() {
        crate::token::keystone::delegations_allowed(node).await?;
    }
    if vt.payload.mapped().is_some() || vt.payload.federated().is_some() {
        proven.delegation = vt.payload.delegation.clone();
    }
    // A restricted token buys only restricted tokens (`super::restricted` decides which).
    proven.restriction = vt.payload.restriction.clone();
    Ok(proven)
}
