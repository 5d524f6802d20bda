//! Signing in to the account page and out of it: a password (the domain's security
//! compliance applies as on `POST /v3/auth/tokens`, which is what is called: an expired
//! password must be changed first, a locked account is told so), or a passkey. The session
//! holds the unscoped token the API issued; signing out revokes it on every member.

use axum::body::Bytes;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use minijinja::context;
use serde_json::{json, Value};

use super::audit;
use super::session::{self, Session};
use super::visit::{Answer, Visit};
use crate::state::keys::ns;
use crate::state::Reader;
use crate::web::api::Reply;
use crate::web::{form, see_other, PageError};

/// Names and passwords longer than these are refused unsent.
const MAX_NAME: usize = 255;
const MAX_PASSWORD: usize = 4096;

/// The sign-in page, with `error` after a failed attempt.
fn page(v: &Visit, status: StatusCode, username: &str, error: Option<String>) -> Response {
    let (login_csrf, cookie) = session::login_csrf(&v.node, &v.domain_id, &v.headers);
    let passkeys = v.node.cfg.passkey.party.is_ok();
    let mut p = v.page("signin.html", status, context! { login_csrf, username, error, passkeys });
    p.set_cookie.push(cookie);
    p.into_response()
}

/// The expired-password page.
fn expired(v: &Visit, status: StatusCode, username: &str, error: Option<String>) -> Response {
    let (login_csrf, cookie) = session::login_csrf(&v.node, &v.domain_id, &v.headers);
    let mut p = v.page("expired.html", status, context! { login_csrf, username, error });
    p.set_cookie.push(cookie);
    p.into_response()
}

#[utoipa::path(get, path = "/v4/account/{domain_id}", operation_id = "account_page", tag = "account",
    security(()),
    params(("domain_id" = String, Path, description = "The domain.")),
    responses((status = 200, description = "The sign-in page (HTML; sets the sign-in forms' CSRF cookie).", content_type = "text/html", body = String),
              (status = 303, description = "Signed in already: to the passkeys section."),
              crate::web::page::PageUnavailable))]
pub async fn show(v: Visit) -> Response {
    if v.signed_in().is_ok() {
        return see_other(&format!("{}/passkeys", v.base()), &[]);
    }
    page(&v, StatusCode::OK, "", None)
}

/// The user named `name` in the visit's domain, if any.
fn user_id(v: &Visit, name: &str) -> Result<Option<String>, PageError> {
    if name.is_empty() || name.len() > MAX_NAME {
        return Ok(None);
    }
    Ok(v.node.engine.read().id_by_name(ns::USER_NAME, &v.domain_id, name)?)
}

/// A session from the API's answer to a sign-in (the token in `X-Subject-Token`), when the
/// token is of a user of the visit's domain; a token of anyone else is revoked at once.
async fn session_of(v: &Visit, reply: &Reply) -> Option<Session> {
    let token = reply.subject_token()?;
    let t = reply.body.get("token")?;
    let user = t.get("user")?;
    let domain_ok = user.pointer("/domain/id").and_then(Value::as_str) == Some(v.domain_id.as_str());
    if !domain_ok {
        revoke(v, &token).await;
        return None;
    }
    let now = crate::clock::now_secs();
    let exp = t
        .get("expires_at")
        .and_then(Value::as_str)
        .and_then(|e| chrono::DateTime::parse_from_rfc3339(e).ok())
        .map(|e| e.timestamp())
        .unwrap_or(now + 3600)
        .min(now + session::MAX_LIFETIME_S);
    Some(Session {
        domain_id: v.domain_id.clone(),
        user_id: user.get("id")?.as_str()?.to_string(),
        user_name: user.get("name")?.as_str()?.to_string(),
        token,
        csrf: idnode_keys::random_token(32),
        exp,
    })
}

async fn revoke(v: &Visit, token: &str) {
    let reply = v
        .api
        .send(&v.caller, Method::DELETE, "/v3/auth/tokens", Some(token), &[("x-subject-token", token)], None)
        .await;
    if !reply.ok() {
        tracing::warn!(status = %reply.status, "the account page could not revoke a token");
    }
}

/// Signed in: the session's cookie, and on to the passkeys section (or `then`).
fn welcome(v: &Visit, s: &Session, then: &str) -> Answer {
    let cookie = session::start(&v.node, s)?;
    Ok(see_other(&format!("{}/{then}", v.base()), &[cookie]))
}

/// A refused password sign-in, as the page tells it: expired (change it first), locked,
/// throttled, or the one message for everything else.
fn refused_sign_in(v: &Visit, reply: &Reply, username: &str) -> Response {
    let message = reply.message();
    if message.starts_with("The password is expired") {
        return expired(v, StatusCode::UNAUTHORIZED, username, None);
    }
    let key = if reply.status == StatusCode::TOO_MANY_REQUESTS {
        "account-too-many"
    } else if message.starts_with("The account is locked") {
        "account-locked"
    } else {
        "bad-login"
    };
    page(v, reply.status, username, Some(v.text(key)))
}

async fn password_sign_in(v: &Visit, username: &str, password: &str) -> Reply {
    let body = json!({"auth": {"identity": {"methods": ["password"],
        "password": {"user": {"name": username, "domain": {"id": v.domain_id}, "password": password}}},
        "scope": "unscoped"}});
    v.api.call(&v.caller, Method::POST, "/v3/auth/tokens", None, Some(&body)).await
}

/// The sign-in forms' fields, after their CSRF check.
fn sign_in_form(v: &Visit, body: &[u8]) -> Result<std::collections::HashMap<String, String>, PageError> {
    let f = form::parse(body)?;
    session::same_origin(&v.node, &v.headers)?;
    session::login_posted(&v.node, &v.headers, f.get("login_csrf").map(String::as_str))?;
    Ok(f)
}

#[utoipa::path(post, path = "/v4/account/{domain_id}/signin", operation_id = "account_sign_in", tag = "account",
    security(()),
    params(("domain_id" = String, Path, description = "The domain.")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`login_csrf`, `username`, `password`."),
    responses((status = 303, description = "Signed in (sets the session cookie): to the passkeys section."),
              (status = 401, description = "Refused: the sign-in page again with the reason, or the change-password page for an expired password (HTML).", content_type = "text/html", body = String),
              (status = 403, description = "Posted from another site, or without the sign-in CSRF cookie (HTML).", content_type = "text/html", body = String),
              crate::web::page::PageUnavailable))]
pub async fn sign_in(v: Visit, body: Bytes) -> Answer {
    let f = sign_in_form(&v, &body)?;
    let username = f.get("username").map(String::as_str).unwrap_or_default();
    let password = f.get("password").map(String::as_str).unwrap_or_default();
    if username.is_empty() || username.len() > MAX_NAME || password.is_empty() || password.len() > MAX_PASSWORD {
        return Ok(page(&v, StatusCode::UNAUTHORIZED, username, Some(v.text("bad-login"))));
    }
    let reply = password_sign_in(&v, username, password).await;
    let who = user_id(&v, username)?.unwrap_or_else(|| username.to_string());
    if !reply.ok() {
        audit::sign_in(&v.node, &who, "password", false);
        return Ok(refused_sign_in(&v, &reply, username));
    }
    let Some(s) = session_of(&v, &reply).await else {
        audit::sign_in(&v.node, &who, "password", false);
        return Ok(page(&v, StatusCode::UNAUTHORIZED, username, Some(v.text("bad-login"))));
    };
    audit::sign_in(&v.node, &s.user_id, "password", true);
    welcome(&v, &s, "passkeys")
}

#[utoipa::path(post, path = "/v4/account/{domain_id}/signin/expired", operation_id = "account_sign_in_expired", tag = "account",
    security(()),
    params(("domain_id" = String, Path, description = "The domain.")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`login_csrf`, `username`, `original_password`, `password`, `confirm`."),
    responses((status = 303, description = "The password was changed (`POST /v3/users/{id}/password`) and the user signed in with the new one."),
              (status = 400, description = "The new password breaks a rule of the domain's security compliance (its message), or the two differ: the page again (HTML).", content_type = "text/html", body = String),
              (status = 401, description = "The current password is wrong: the page again (HTML).", content_type = "text/html", body = String),
              (status = 403, description = "Posted from another site, or without the sign-in CSRF cookie (HTML).", content_type = "text/html", body = String),
              crate::web::page::PageUnavailable))]
pub async fn sign_in_expired(v: Visit, body: Bytes) -> Answer {
    let f = sign_in_form(&v, &body)?;
    let field = |k: &str| f.get(k).map(String::as_str).unwrap_or_default();
    let (username, original, new) = (field("username"), field("original_password"), field("password"));
    if new != field("confirm") {
        return Ok(expired(&v, StatusCode::BAD_REQUEST, username, Some(v.text("account-passwords-differ"))));
    }
    let Some(id) = user_id(&v, username)? else {
        return Ok(expired(&v, StatusCode::UNAUTHORIZED, username, Some(v.text("bad-login"))));
    };
    let change = json!({"user": {"original_password": original, "password": new}});
    let reply = v.api.call(&v.caller, Method::POST, &format!("/v3/users/{id}/password"), None, Some(&change)).await;
    let note = audit::Note::new(crate::audit::event::Action::Update, audit::PASSWORD, &id, "password.change_expired");
    note.emit_for(&v.node, &id, reply.ok());
    if !reply.ok() {
        let message = if reply.status == StatusCode::UNAUTHORIZED { v.text("bad-login") } else { reply.message() };
        return Ok(expired(&v, reply.status, username, Some(message)));
    }
    let reply = password_sign_in(&v, username, new).await;
    match session_of(&v, &reply).await {
        Some(s) if reply.ok() => {
            audit::sign_in(&v.node, &s.user_id, "password", true);
            welcome(&v, &s, "passkeys?done=password-changed")
        }
        _ => Ok(refused_sign_in(&v, &reply, username)),
    }
}

#[utoipa::path(post, path = "/v4/account/{domain_id}/signin/passkey/start", operation_id = "account_passkey_start", tag = "account",
    security(()),
    params(("domain_id" = String, Path, description = "The domain.")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`login_csrf`, `username`."),
    responses((status = 200, description = "`{\"publicKey\": …}` for `navigator.credentials.get` (a decoy of the same shape for an unknown name), from `POST /v4/auth/passkey/start`.", content_type = "application/json", body = Object),
              (status = 403, description = "Posted from another site, or without the sign-in CSRF cookie (HTML).", content_type = "text/html", body = String),
              crate::web::page::PageUnavailable))]
pub async fn passkey_start(v: Visit, body: Bytes) -> Answer {
    let f = sign_in_form(&v, &body)?;
    let name = f.get("username").map(String::as_str).unwrap_or_default();
    // An unknown name gets the API's decoy challenge: the answer does not tell who exists.
    let id = user_id(&v, name)?.unwrap_or_else(|| format!("-/{}/{name}", v.domain_id));
    let start = json!({"passkey": {"user_id": id}});
    let reply = v.api.call(&v.caller, Method::POST, "/v4/auth/passkey/start", None, Some(&start)).await;
    if !reply.ok() {
        return Err(PageError { status: reply.status, message: reply.message() });
    }
    Ok((StatusCode::OK, Json(reply.body)).into_response())
}

#[utoipa::path(post, path = "/v4/account/{domain_id}/signin/passkey", operation_id = "account_passkey_sign_in", tag = "account",
    security(()),
    params(("domain_id" = String, Path, description = "The domain.")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`login_csrf`, `username`, `credential` (the signed challenge as JSON)."),
    responses((status = 303, description = "Signed in (sets the session cookie): to the passkeys section."),
              (status = 401, description = "The passkey did not sign in (HTML).", content_type = "text/html", body = String),
              (status = 403, description = "Posted from another site, or without the sign-in CSRF cookie (HTML).", content_type = "text/html", body = String),
              crate::web::page::PageUnavailable))]
pub async fn passkey_sign_in(v: Visit, body: Bytes) -> Answer {
    let f = sign_in_form(&v, &body)?;
    let name = f.get("username").map(String::as_str).unwrap_or_default();
    let failed = |v: &Visit| page(v, StatusCode::UNAUTHORIZED, name, Some(v.text("passkey-login-failed")));
    let Some(id) = user_id(&v, name)? else {
        audit::sign_in(&v.node, name, "passkey", false);
        return Ok(failed(&v));
    };
    let Some(mut credential) =
        f.get("credential").and_then(|c| serde_json::from_str::<Value>(c).ok()).filter(Value::is_object)
    else {
        return Ok(failed(&v));
    };
    credential["user_id"] = json!(id);
    let reply = v.api.call(&v.caller, Method::POST, "/v4/auth/passkey/finish", None, Some(&credential)).await;
    let session = if reply.ok() { session_of(&v, &reply).await } else { None };
    audit::sign_in(&v.node, &id, "passkey", session.is_some());
    match session {
        Some(s) => welcome(&v, &s, "passkeys"),
        None => Ok(failed(&v)),
    }
}

#[utoipa::path(post, path = "/v4/account/{domain_id}/signout", operation_id = "account_sign_out", tag = "account",
    security(()),
    params(("domain_id" = String, Path, description = "The domain.")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`csrf`."),
    responses((status = 303, description = "The session's token is revoked on every member and its cookie removed: to the sign-in page."),
              (status = 403, description = "Posted from another site, or with another session's CSRF value (HTML).", content_type = "text/html", body = String),
              crate::web::page::PageUnavailable))]
pub async fn sign_out(v: Visit, body: Bytes) -> Response {
    let (s, _) = match v.posted(&body) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    revoke(&v, &s.token).await;
    audit::Note::new(crate::audit::event::Action::Delete, audit::SESSION, &s.user_id, "sign_out")
        .emit(&v.node, &s, true);
    v.to_sign_in()
}

/// After a password change ended the session's token: a new session with the new password
/// (or the sign-in page, should that fail).
pub async fn again(v: &Visit, old: &Session, password: &str) -> Response {
    let reply = password_sign_in(v, &old.user_name, password).await;
    match session_of(v, &reply).await {
        Some(s) if reply.ok() => match welcome(v, &s, "password?done=password-changed") {
            Ok(r) => r,
            Err(e) => e.into_response(),
        },
        _ => v.to_sign_in(),
    }
}
