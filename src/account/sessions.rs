//! The sessions section: the user's live OAuth2 refresh-token families (client, created,
//! last used), and ending one or all (`/v4/users/{user_id}/oauth2/sessions`).

use axum::body::Bytes;
use axum::extract::Path;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use minijinja::context;
use serde_json::{json, Value};

use super::audit::{Note, SESSION};
use super::session::Session;
use super::visit::{when, Visit};
use crate::audit::event::Action;

super::visit::section_get!(
    "/v4/account/{domain_id}/sessions",
    "account_sessions",
    "The user's live application sessions (HTML)."
);

pub async fn show(v: &Visit, s: &Session, status: StatusCode, error: Option<String>, done: Option<&str>) -> Response {
    let reply = v.call(s, Method::GET, &format!("/v4/users/{}/oauth2/sessions", s.user_id), None).await;
    if reply.status == StatusCode::UNAUTHORIZED {
        return v.to_sign_in();
    }
    let sessions: Vec<Value> = reply.body["sessions"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|f| {
                    json!({"id": f["id"], "client_name": f["client_name"], "created_at": when(&f["created_at"]),
                           "last_used_at": when(&f["last_used_at"])})
                })
                .collect()
        })
        .unwrap_or_default();
    let (status, error) = if reply.ok() { (status, error) } else { (reply.status, Some(reply.message())) };
    v.section(s, "sessions", status, error, done, context! { sessions })
}

#[utoipa::path(post, path = "/v4/account/{domain_id}/sessions/{session_id}/end", operation_id = "account_session_end", tag = "account",
    security(()),
    params(("domain_id" = String, Path, description = "The domain."), ("session_id" = String, Path, description = "The refresh-token family.")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`csrf`."),
    responses((status = 303, description = "Ended (its refresh token no longer works): to the sessions section."),
              (status = 404, description = "No such live session: the section again (HTML).", content_type = "text/html", body = String),
              (status = 403, description = "Not signed in, posted from another site, or another session's CSRF value (HTML).", content_type = "text/html", body = String),
              crate::web::page::PageUnavailable))]
pub async fn end(v: Visit, Path(ids): Path<(String, String)>, body: Bytes) -> Response {
    let session_id = ids.1;
    let (s, _) = match v.posted(&body) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let path = format!("/v4/users/{}/oauth2/sessions/{session_id}", s.user_id);
    let reply = v.call(&s, Method::DELETE, &path, None).await;
    v.after(
        &s,
        Note::new(Action::Delete, SESSION, &session_id, "session.end"),
        &reply,
        "sessions",
        "session-ended",
        |status, message| show(&v, &s, status, Some(message), None),
    )
    .await
}

#[utoipa::path(post, path = "/v4/account/{domain_id}/sessions/end_all", operation_id = "account_sessions_end_all", tag = "account",
    security(()),
    params(("domain_id" = String, Path, description = "The domain.")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`csrf`."),
    responses((status = 303, description = "Every live session ended: to the sessions section."),
              (status = 403, description = "Not signed in, posted from another site, or another session's CSRF value (HTML).", content_type = "text/html", body = String),
              crate::web::page::PageUnavailable))]
pub async fn end_all(v: Visit, body: Bytes) -> Response {
    let (s, _) = match v.posted(&body) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let reply = v.call(&s, Method::DELETE, &format!("/v4/users/{}/oauth2/sessions", s.user_id), None).await;
    v.after(
        &s,
        Note::new(Action::Delete, SESSION, "*", "session.end_all"),
        &reply,
        "sessions",
        "sessions-ended",
        |status, message| show(&v, &s, status, Some(message), None),
    )
    .await
}
