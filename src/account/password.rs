//! The password section: changing the password through `POST /v3/users/{id}/password`, so
//! the domain's security compliance answers with its own messages (history, minimum age,
//! pattern). A change ends every token of the user, the session's too: the page signs in
//! again with the new password and keeps the browser signed in.

use axum::body::Bytes;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use minijinja::context;
use serde_json::json;

use super::audit::{Note, PASSWORD};
use super::session::Session;
use super::visit::Visit;
use crate::audit::event::Action;

super::visit::section_get!("/v4/account/{domain_id}/password", "account_password", "The change-password form (HTML).");

pub async fn show(v: &Visit, s: &Session, status: StatusCode, error: Option<String>, done: Option<&str>) -> Response {
    v.section(s, "password", status, error, done, context! {})
}

#[utoipa::path(post, path = "/v4/account/{domain_id}/password", operation_id = "account_password_change", tag = "account",
    security(()),
    params(("domain_id" = String, Path, description = "The domain.")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`csrf`, `original_password`, `password`, `confirm`."),
    responses((status = 303, description = "Changed; signed in again with the new password: to the passkeys section."),
              (status = 400, description = "A rule of the domain's security compliance refused it (its message), or the two new passwords differ: the section again (HTML).", content_type = "text/html", body = String),
              (status = 401, description = "The current password is wrong: the section again (HTML).", content_type = "text/html", body = String),
              (status = 403, description = "Not signed in, posted from another site, or another session's CSRF value (HTML).", content_type = "text/html", body = String),
              crate::web::page::PageUnavailable))]
pub async fn change(v: Visit, body: Bytes) -> Response {
    let (s, f) = match v.posted(&body) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let field = |k: &str| f.get(k).map(String::as_str).unwrap_or_default();
    let new = field("password");
    if new != field("confirm") {
        return show(&v, &s, StatusCode::BAD_REQUEST, Some(v.text("account-passwords-differ")), None).await;
    }
    let change = json!({"user": {"original_password": field("original_password"), "password": new}});
    let reply = v.call(&s, Method::POST, &format!("/v3/users/{}/password", s.user_id), Some(&change)).await;
    Note::new(Action::Update, PASSWORD, &s.user_id, "password.change").emit(&v.node, &s, reply.ok());
    if !reply.ok() {
        // A wrong current password is the API's 401 too; here it is a message, not a sign-out.
        let message = if reply.status == StatusCode::UNAUTHORIZED { v.text("bad-login") } else { reply.message() };
        return show(&v, &s, reply.status, Some(message), None).await;
    }
    super::signin::again(&v, &s, new).await
}
