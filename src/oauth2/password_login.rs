//! The pages' password sign-in: the login form of the authorization code flow
//! (`/authorize/login`) and of the device flow (`/device/login`), each checked as the
//! password method of `POST /v3/auth/tokens` checks it.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use serde_json::json;
use utoipa::ToSchema;

use super::authorize::{self as az, get};
use super::device;
use super::html::{self, PageError, PageResult};
use super::issuer::base_path;
use super::page_state::{self, Login};
use super::scopes;
use crate::clock::now_secs;
use crate::passkey::ceremony::RelyingParty;
use crate::state::model::User;
use crate::token::Tokens;

/// The login form (`/authorize/login`, `/device/login`).
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct LoginForm {
    /// The sealed pending request from the page.
    page_state: String,
    username: String,
    password: String,
}

/// The user the login form names, in the issuer's domain, if the password is right. Every
/// failure looks the same (the caller shows one generic message).
async fn check_password(
    node: &Tokens,
    domain_id: &str,
    username: Option<&str>,
    password: Option<&str>,
) -> PageResult<Option<User>> {
    let (Some(name), Some(pw)) = (username, password) else { return Ok(None) };
    if name.len() > 255 || pw.len() > 4096 {
        return Ok(None);
    }
    let identity = json!({"methods": ["password"],
        "password": {"user": {"name": name, "domain": {"id": domain_id}, "password": pw}}});
    match crate::auth::methods::authenticate(node, &identity, None).await {
        Ok(p) if p.user.domain_id == domain_id => Ok(Some(p.user)),
        Ok(_) => Ok(None),
        Err(e) if e.status.is_client_error() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

#[utoipa::path(post, path = "/v4/oauth2/{domain_id}/authorize/login", operation_id = "oauth2_authorize_login", tag = "oauth2",
    security(()),
    params(("domain_id" = String, Path, description = "The domain.")),
    request_body(content = LoginForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "The consent page, or the login page again after a failed sign-in (HTML).", content_type = "text/html", body = String),
              (status = 303, description = "Consent not needed (pre-authorized client, or remembered): to the redirect URI with `code` and `state`."),
              (status = 400, description = "Expired or altered form, CSRF cookie mismatch, or the client changed (HTML).", content_type = "text/html", body = String),
              super::html::PageUnavailable))]
pub async fn authorize_login(
    State(node): State<Arc<Tokens>>,
    State(passkeys): State<Arc<RelyingParty>>,
    Path(domain_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult {
    let (form, st) = az::page_post(&node, &domain_id, &headers, &body)?;
    let chrome = html::chrome(&node, &domain_id, &headers);
    let (req, client) = az::pending_sign_in(&node, &domain_id, &st)?;
    let sealed = get(&form, "page_state");
    let username = get(&form, "username");
    let Some(user) = check_password(&node, &domain_id, username, get(&form, "password")).await? else {
        let error = chrome.lang.text("bad-login");
        return Ok(az::login_again(&node, &passkeys, &domain_id, &client, &req, sealed, username, &error, chrome));
    };
    az::signed_in_as(&node, &domain_id, st, &req, &client, &user, &chrome).await
}

#[utoipa::path(post, path = "/v4/oauth2/{domain_id}/device/login", operation_id = "oauth2_device_login", tag = "oauth2",
    security(()),
    params(("domain_id" = String, Path, description = "The domain.")),
    request_body(content = LoginForm, content_type = "application/x-www-form-urlencoded"),
    responses((status = 200, description = "The consent page (naming the client, the scopes and the code), or the login page again after a failed sign-in (HTML).", content_type = "text/html", body = String),
              (status = 400, description = "Expired or altered form, CSRF cookie mismatch, or the code is no longer pending (HTML).", content_type = "text/html", body = String),
              super::html::PageUnavailable))]
pub async fn device_login(
    State(node): State<Arc<Tokens>>,
    Path(domain_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> PageResult {
    let (form, mut st) = az::page_post(&node, &domain_id, &headers, &body)?;
    let sealed = get(&form, "page_state");
    let user_code = device::device_flow(&st)?;
    if st.login.is_some() {
        return Err(PageError::bad_request("You are signed in already; start again."));
    }
    let grant = device::pending_grant(&node, &domain_id, &user_code)?.ok_or_else(device::code_gone)?;
    let client = az::live_client(&node, &domain_id, &grant.client_id, scopes::DEVICE_CODE, None)?;
    let username = get(&form, "username");
    let chrome = html::chrome(&node, &domain_id, &headers);
    let Some(user) = check_password(&node, &domain_id, username, get(&form, "password")).await? else {
        let error = chrome.lang.text("bad-login");
        return Ok(az::login_page(az::LoginView {
            client_name: &client.name,
            action: format!("{}/device/login", base_path(&node, &domain_id)),
            sealed: sealed.unwrap_or_default(),
            username: username.unwrap_or_default(),
            error: Some(&error),
            chrome,
            ..Default::default()
        }));
    };
    let at = now_secs();
    st.login = Some(Login { user_id: user.id.clone(), auth_time: at, cutoff_us: user.tokens_valid_after });
    st.exp = at + page_state::LIFETIME_S;
    let sealed = page_state::seal(&node, &st)?;
    let action = format!("{}/device/consent", base_path(&node, &domain_id));
    let shown = device::display_user_code(&user_code);
    let view = az::ConsentView {
        client_name: &client.name,
        user_name: &user.name,
        scopes: &grant.scopes,
        action: &action,
        sealed: &sealed,
        user_code: Some(&shown),
        redirect_origin: None,
    };
    Ok(az::consent_page(view, &chrome))
}
