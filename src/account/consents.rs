//! The applications section: the OAuth2 clients the user consented to, with their scopes,
//! and revoking one (`DELETE /v4/users/{user_id}/oauth2/consents/{client_id}`, which also
//! ends the user's refresh tokens of that client).

use axum::body::Bytes;
use axum::extract::Path;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use minijinja::context;
use serde_json::{json, Value};

use super::audit::{Note, CONSENT};
use super::session::Session;
use super::visit::{when, Visit};
use crate::audit::event::Action;

super::visit::section_get!(
    "/v4/account/{domain_id}/consents",
    "account_consents",
    "The applications the user allowed (HTML)."
);

pub async fn show(v: &Visit, s: &Session, status: StatusCode, error: Option<String>, done: Option<&str>) -> Response {
    let reply = v.call(s, Method::GET, &format!("/v4/users/{}/oauth2/consents", s.user_id), None).await;
    if reply.status == StatusCode::UNAUTHORIZED {
        return v.to_sign_in();
    }
    let consents: Vec<Value> = reply.body["consents"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|c| {
                    let scopes: Vec<&str> = c["scopes"]
                        .as_array()
                        .map(|a| a.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    json!({"client_id": c["client_id"], "client_name": c["client_name"], "scopes": scopes.join(" "),
                           "granted_at": when(&c["granted_at"])})
                })
                .collect()
        })
        .unwrap_or_default();
    let (status, error) = if reply.ok() { (status, error) } else { (reply.status, Some(reply.message())) };
    v.section(s, "consents", status, error, done, context! { consents })
}

#[utoipa::path(post, path = "/v4/account/{domain_id}/consents/{client_id}/revoke", operation_id = "account_consent_revoke", tag = "account",
    security(()),
    params(("domain_id" = String, Path, description = "The domain."), ("client_id" = String, Path, description = "The OAuth2 client.")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`csrf`."),
    responses((status = 303, description = "Revoked (the client's refresh tokens of the user end): to the applications section."),
              (status = 404, description = "No such consent: the section again (HTML).", content_type = "text/html", body = String),
              (status = 403, description = "Not signed in, posted from another site, or another session's CSRF value (HTML).", content_type = "text/html", body = String),
              crate::web::page::PageUnavailable))]
pub async fn revoke(v: Visit, Path(ids): Path<(String, String)>, body: Bytes) -> Response {
    let client_id = ids.1;
    let (s, _) = match v.posted(&body) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let path = format!("/v4/users/{}/oauth2/consents/{client_id}", s.user_id);
    let reply = v.call(&s, Method::DELETE, &path, None).await;
    v.after(
        &s,
        Note::new(Action::Delete, CONSENT, &client_id, "consent.revoke"),
        &reply,
        "consents",
        "consent-revoked",
        |status, message| show(&v, &s, status, Some(message), None),
    )
    .await
}
