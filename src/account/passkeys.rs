//! The passkeys section: the user's passkeys (name, created, last used), and registering,
//! renaming and removing them, each through `/v4/users/{user_id}/passkeys`.

use axum::body::Bytes;
use axum::extract::Path;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use minijinja::context;
use serde_json::{json, Value};

use super::audit::{Note, PASSKEY};
use super::session::Session;
use super::visit::{when, Visit};
use crate::audit::event::Action;

super::visit::section_get!("/v4/account/{domain_id}/passkeys", "account_passkeys", "The user's passkeys (HTML).");

pub async fn show(v: &Visit, s: &Session, status: StatusCode, error: Option<String>, done: Option<&str>) -> Response {
    let reply = v.call(s, Method::GET, &format!("/v4/users/{}/passkeys", s.user_id), None).await;
    if reply.status == StatusCode::UNAUTHORIZED {
        return v.to_sign_in();
    }
    let passkeys: Vec<Value> = reply.body["passkeys"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|p| {
                    json!({"id": p["id"], "description": p["description"].as_str().unwrap_or(""),
                           "created_at": when(&p["created_at"]), "last_used_at": when(&p["last_used_at"])})
                })
                .collect()
        })
        .unwrap_or_default();
    let (status, error) = if reply.ok() { (status, error) } else { (reply.status, Some(reply.message())) };
    let webauthn = v.node.cfg.passkey.party.is_ok();
    v.section(s, "passkeys", status, error, done, context! { passkeys, webauthn })
}

#[utoipa::path(post, path = "/v4/account/{domain_id}/passkeys/register_start", operation_id = "account_passkey_register_start", tag = "account",
    security(()),
    params(("domain_id" = String, Path, description = "The domain.")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`csrf`, `description`."),
    responses((status = 200, description = "`{\"publicKey\": …}` for `navigator.credentials.create`, from `POST /v4/users/{user_id}/passkeys/register_start`.", content_type = "application/json", body = Object),
              (status = 403, description = "Not signed in, posted from another site, or another session's CSRF value (HTML).", content_type = "text/html", body = String),
              crate::web::page::PageUnavailable))]
pub async fn register_start(v: Visit, body: Bytes) -> Response {
    let (s, f) = match v.posted(&body) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let description = f.get("description").map(|d| d.trim()).filter(|d| !d.is_empty());
    let start = json!({"passkey": {"description": description}});
    let reply =
        v.call(&s, Method::POST, &format!("/v4/users/{}/passkeys/register_start", s.user_id), Some(&start)).await;
    let status = if reply.ok() { StatusCode::OK } else { reply.status };
    (status, Json(reply.body)).into_response()
}

#[utoipa::path(post, path = "/v4/account/{domain_id}/passkeys/register_finish", operation_id = "account_passkey_register_finish", tag = "account",
    security(()),
    params(("domain_id" = String, Path, description = "The domain.")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`csrf`, `credential` (the new credential as JSON)."),
    responses((status = 303, description = "Registered: to the passkeys section."),
              (status = 400, description = "Not registered: the section again with the reason (HTML).", content_type = "text/html", body = String),
              (status = 403, description = "Not signed in, posted from another site, or another session's CSRF value (HTML).", content_type = "text/html", body = String),
              crate::web::page::PageUnavailable))]
pub async fn register_finish(v: Visit, body: Bytes) -> Response {
    let (s, f) = match v.posted(&body) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let credential = f.get("credential").and_then(|c| serde_json::from_str::<Value>(c).ok()).unwrap_or(Value::Null);
    let reply =
        v.call(&s, Method::POST, &format!("/v4/users/{}/passkeys/register_finish", s.user_id), Some(&credential)).await;
    let id = reply.body.pointer("/passkey/id").and_then(Value::as_str).unwrap_or("").to_string();
    v.after(
        &s,
        Note::new(Action::Create, PASSKEY, &id, "passkey.register"),
        &reply,
        "passkeys",
        "passkey-added",
        |status, message| show(&v, &s, status, Some(message), None),
    )
    .await
}

#[utoipa::path(post, path = "/v4/account/{domain_id}/passkeys/{passkey_id}/rename", operation_id = "account_passkey_rename", tag = "account",
    security(()),
    params(("domain_id" = String, Path, description = "The domain."), ("passkey_id" = String, Path, description = "The passkey.")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`csrf`, `description`."),
    responses((status = 303, description = "Renamed: to the passkeys section."),
              (status = 400, description = "Refused by the API: the section again with its message (HTML).", content_type = "text/html", body = String),
              (status = 403, description = "Not signed in, posted from another site, or another session's CSRF value (HTML).", content_type = "text/html", body = String),
              crate::web::page::PageUnavailable))]
pub async fn rename(v: Visit, Path(ids): Path<(String, String)>, body: Bytes) -> Response {
    let passkey_id = ids.1;
    let (s, f) = match v.posted(&body) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let rename = json!({"passkey": {"description": f.get("description").map(|d| d.trim()).unwrap_or("")}});
    let path = format!("/v4/users/{}/passkeys/{passkey_id}", s.user_id);
    let reply = v.call(&s, Method::PATCH, &path, Some(&rename)).await;
    v.after(
        &s,
        Note::new(Action::Update, PASSKEY, &passkey_id, "passkey.rename"),
        &reply,
        "passkeys",
        "passkey-renamed",
        |status, message| show(&v, &s, status, Some(message), None),
    )
    .await
}

#[utoipa::path(post, path = "/v4/account/{domain_id}/passkeys/{passkey_id}/remove", operation_id = "account_passkey_remove", tag = "account",
    security(()),
    params(("domain_id" = String, Path, description = "The domain."), ("passkey_id" = String, Path, description = "The passkey.")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`csrf`."),
    responses((status = 303, description = "Removed: to the passkeys section."),
              (status = 409, description = "The last passkey of an account without a password: the section again with the reason (HTML).", content_type = "text/html", body = String),
              (status = 403, description = "Not signed in, posted from another site, or another session's CSRF value (HTML).", content_type = "text/html", body = String),
              crate::web::page::PageUnavailable))]
pub async fn remove(v: Visit, Path(ids): Path<(String, String)>, body: Bytes) -> Response {
    let passkey_id = ids.1;
    let (s, _) = match v.posted(&body) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let path = format!("/v4/users/{}/passkeys/{passkey_id}", s.user_id);
    let reply = v.call(&s, Method::DELETE, &path, None).await;
    v.after(
        &s,
        Note::new(Action::Delete, PASSKEY, &passkey_id, "passkey.remove"),
        &reply,
        "passkeys",
        "passkey-removed",
        |status, message| show(&v, &s, status, Some(message), None),
    )
    .await
}
