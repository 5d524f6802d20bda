//! The authorization flow's passkey sign-in, behind the login page's "Sign in with a passkey"
//! button: the page's script asks for a challenge for the typed username, the browser signs
//! it, and the answer is posted like the password form (same sealed page state, same CSRF
//! cookie), then the flow goes on to consent exactly as after a password.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use utoipa::ToSchema;

use super::authorize::{domain_enabled, get, login_again, page_form, pending_sign_in, signed_in_as};
use super::html::PageResult;
use super::page_state::{self, AuthRequest, PageState};
use crate::context::Core;
use crate::http::openapi::errors as E;
use crate::passkey::ceremony::{self, RelyingParty};
use crate::passkey::wire::AssertionBody;
use crate::state::keys::ns;
use crate::state::oauth2::Client;
use crate::state::Reader;
use crate::token::Tokens;

/// `…/authorize/passkey/start`.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct PasskeyStartForm {
    page_state: String,
    username: String,
}

/// `…/authorize/passkey`.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct PasskeyForm {
    page_state: String,
    username: String,
    /// The browser's signed credential, as JSON (`PublicKeyCredential` fields, base64url).
    credential: String,
}

/// The open authorization request of a sign-in post and its client.
fn pending_request(
    node: &Tokens,
    domain_id: &str,
    form_state: Option<&str>,
    headers: &HeaderMap,
) -> PageResult<(PageState, AuthRequest, Client)> {
    domain_enabled(node, domain_id)?;
    let st = page_state::open(node, domain_id, form_state, headers)?;
    let (req, client) = pending_sign_in(node, domain_id, &st)?;
    Ok((st, req, client))
}

/// The id of `username` in the domain, or a stand-in no user has (so an unknown name gets
/// the same decoy challenge as a user without passkeys).
fn user_id_of(node: &Core, domain_id: &str, username: Option<&str>) -> PageResult<String> {
    let name = username.unwrap_or_default();
    if name.is_empty() || name.len() > 255 {
        return Ok(format!("-/{domain_id}"));
    }
    Ok(node
        .engine
        .read()
        .id_by_name(ns::USER_NAME, domain_id, name)?
        .unwrap_or_else(|| format!("-/{domain_id}/{name}")))
}

#[utoipa::path(post, path = "/v4/oauth2/{domain_id}/authorize/passkey/start", operation_id = "oauth2_authorize_passkey_start", tag = "oauth2",
    security(()),
    params(("domain_id" = String, Path, description = "The domain.")),
    request_body(content = PasskeyStartForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "`{\"publicKey\": …}`: WebAuthn request options for the user's passkeys (a decoy of the same shape for an unknown name).", content_type = "application/json", body = Object),
              (status = 400, description = "Expired or altered form, or CSRF cookie mismatch (HTML).", content_type = "text/html", body = String),
              super::html::PageUnavailable, E::TooManyRequests,
              (status = 501, description = "Passkeys are off on this deployment (HTML).", content_type = "text/html", body = String)))]
pub async fn passkey_start(
    State(node): State<Arc<Tokens>>,
    State(passkeys): State<Arc<RelyingParty>>,
    Path(domain_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult {
    let form = page_form(&body)?;
    pending_request(&node, &domain_id, get(&form, "page_state"), &headers)?;
    let user_id = user_id_of(&node, &domain_id, get(&form, "username"))?;
    let rcr = ceremony::login_start(&node, &passkeys, &user_id).await?;
    Ok(Json(json!({"publicKey": rcr.public_key})).into_response())
}

#[utoipa::path(post, path = "/v4/oauth2/{domain_id}/authorize/passkey", operation_id = "oauth2_authorize_passkey", tag = "oauth2",
    security(()),
    params(("domain_id" = String, Path, description = "The domain.")),
    request_body(content = PasskeyForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "The consent page, or the login page again after a failed sign-in (HTML).", content_type = "text/html", body = String),
              (status = 303, description = "Consent not needed: to the redirect URI with `code` and `state`."),
              (status = 400, description = "Expired or altered form, or CSRF cookie mismatch (HTML).", content_type = "text/html", body = String),
              super::html::PageUnavailable, E::TooManyRequests))]
pub async fn passkey_login(
    State(node): State<Arc<Tokens>>,
    State(passkeys): State<Arc<RelyingParty>>,
    Path(domain_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult<Response> {
    let form = page_form(&body)?;
    let sealed = get(&form, "page_state");
    let (st, req, client) = pending_request(&node, &domain_id, sealed, &headers)?;
    let username = get(&form, "username");
    let chrome = super::html::chrome(&node, &domain_id, &headers);
    let error = chrome.lang.text("passkey-login-failed");
    let again = || login_again(&node, &passkeys, &domain_id, &client, &req, sealed, username, &error, chrome.clone());
    let credential = get(&form, "credential").and_then(|c| serde_json::from_str::<AssertionBody>(c).ok());
    let Some(Ok(credential)) = credential.map(|c| c.credential()) else {
        return Ok(again());
    };
    let user_id = user_id_of(&node, &domain_id, username)?;
    let user = match ceremony::login_finish(&node, &passkeys, Some(&user_id), &credential).await {
        Ok(user) if user.domain_id == domain_id => user,
        Ok(_) => return Ok(again()),
        Err(e) if e.status.is_client_error() => return Ok(again()),
        Err(e) => return Err(e.into()),
    };
    signed_in_as(&node, &domain_id, st, &req, &client, &user, &chrome).await
}
