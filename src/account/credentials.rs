//! The application credentials section: list, create (the secret shown once, with a copy
//! button), delete, through `/v3/users/{user_id}/application_credentials`. Keystone makes
//! an application credential from a project-scoped token (it takes the token's roles on
//! the project), so creating one first rescopes the session's token to the chosen project,
//! and revokes that scoped token when done.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::Path;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use minijinja::context;
use serde_json::{json, Value};

use super::audit::{Note, APP_CREDENTIAL};
use super::session::Session;
use super::visit::{when, Visit};
use crate::audit::event::Action;

super::visit::section_get!(
    "/v4/account/{domain_id}/credentials",
    "account_credentials",
    "The user's application credentials, and the form for a new one (HTML)."
);

/// What the page shows once, after a create.
pub struct Created {
    pub id: String,
    pub secret: String,
}

pub async fn show(v: &Visit, s: &Session, status: StatusCode, error: Option<String>, done: Option<&str>) -> Response {
    show_with(v, s, status, error, done, None).await
}

/// The section, with the secret of the credential just created when there is one.
pub async fn show_with(
    v: &Visit,
    s: &Session,
    status: StatusCode,
    error: Option<String>,
    done: Option<&str>,
    created: Option<Created>,
) -> Response {
    let listed = v.call(s, Method::GET, &format!("/v3/users/{}/application_credentials", s.user_id), None).await;
    if listed.status == StatusCode::UNAUTHORIZED {
        return v.to_sign_in();
    }
    let projects = v.call(s, Method::GET, "/v3/auth/projects", None).await;
    let projects: Vec<Value> = projects.body["projects"]
        .as_array()
        .map(|l| l.iter().map(|p| json!({"id": p["id"], "name": p["name"]})).collect())
        .unwrap_or_default();
    let names: HashMap<&str, &str> =
        projects.iter().filter_map(|p| Some((p["id"].as_str()?, p["name"].as_str()?))).collect();
    let credentials: Vec<Value> = listed.body["application_credentials"]
        .as_array()
        .map(|l| {
            l.iter()
                .map(|c| {
                    let project = c["project_id"].as_str().unwrap_or("");
                    json!({"id": c["id"], "name": c["name"], "project": names.get(project).copied().unwrap_or(project),
                           "expires_at": when(&c["expires_at"])})
                })
                .collect()
        })
        .unwrap_or_default();
    let (status, error) = if listed.ok() { (status, error) } else { (listed.status, Some(listed.message())) };
    let (created_id, secret) = created.map(|c| (c.id, c.secret)).unzip();
    v.section(s, "credentials", status, error, done, context! { credentials, projects, created_id, secret })
}

#[utoipa::path(post, path = "/v4/account/{domain_id}/credentials", operation_id = "account_credential_create", tag = "account",
    security(()),
    params(("domain_id" = String, Path, description = "The domain.")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`csrf`, `name`, `description`, `project_id`."),
    responses((status = 201, description = "Created: the section with the secret, shown this once (HTML).", content_type = "text/html", body = String),
              (status = 400, description = "Refused by the API (its message): the section again (HTML).", content_type = "text/html", body = String),
              (status = 403, description = "Not signed in, posted from another site, another session's CSRF value, or no role on the project (HTML).", content_type = "text/html", body = String),
              crate::web::page::PageUnavailable))]
pub async fn create(v: Visit, body: Bytes) -> Response {
    let (s, f) = match v.posted(&body) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let field = |k: &str| f.get(k).map(|x| x.trim()).unwrap_or_default();
    let rescope = json!({"auth": {"identity": {"methods": ["token"], "token": {"id": s.token}},
        "scope": {"project": {"id": field("project_id")}}}});
    let scoped = v.api.call(&v.caller, Method::POST, "/v3/auth/tokens", None, Some(&rescope)).await;
    let note = |id: &str, ok: bool| {
        Note::new(Action::Create, APP_CREDENTIAL, id, "application_credential.create").emit(&v.node, &s, ok)
    };
    let Some(token) = scoped.subject_token().filter(|_| scoped.ok()) else {
        note("", false);
        return show(&v, &s, scoped.status, Some(scoped.message()), None).await;
    };
    let description = Some(field("description")).filter(|d| !d.is_empty());
    let new = json!({"application_credential": {"name": field("name"), "description": description}});
    let path = format!("/v3/users/{}/application_credentials", s.user_id);
    let reply = v.api.call(&v.caller, Method::POST, &path, Some(&token), Some(&new)).await;
    let revoked = v
        .api
        .send(&v.caller, Method::DELETE, "/v3/auth/tokens", Some(&token), &[("x-subject-token", &token)], None)
        .await;
    if !revoked.ok() {
        tracing::warn!(status = %revoked.status, "the account page could not revoke a rescoped token");
    }
    let id = reply.body.pointer("/application_credential/id").and_then(Value::as_str).unwrap_or("").to_string();
    note(&id, reply.ok());
    if !reply.ok() {
        return show(&v, &s, reply.status, Some(reply.message()), None).await;
    }
    let secret = reply.body.pointer("/application_credential/secret").and_then(Value::as_str).unwrap_or("").to_string();
    show_with(&v, &s, StatusCode::CREATED, None, None, Some(Created { id, secret })).await
}

#[utoipa::path(post, path = "/v4/account/{domain_id}/credentials/{credential_id}/delete", operation_id = "account_credential_delete", tag = "account",
    security(()),
    params(("domain_id" = String, Path, description = "The domain."), ("credential_id" = String, Path, description = "The application credential.")),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "`csrf`."),
    responses((status = 303, description = "Deleted: to the application credentials section."),
              (status = 404, description = "No such application credential: the section again (HTML).", content_type = "text/html", body = String),
              (status = 403, description = "Not signed in, posted from another site, or another session's CSRF value (HTML).", content_type = "text/html", body = String),
              crate::web::page::PageUnavailable))]
pub async fn delete(v: Visit, Path(ids): Path<(String, String)>, body: Bytes) -> Response {
    let credential_id = ids.1;
    let (s, _) = match v.posted(&body) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    let path = format!("/v3/users/{}/application_credentials/{credential_id}", s.user_id);
    let reply = v.call(&s, Method::DELETE, &path, None).await;
    v.after(
        &s,
        Note::new(Action::Delete, APP_CREDENTIAL, &credential_id, "application_credential.delete"),
        &reply,
        "credentials",
        "credential-deleted",
        |status, message| show(&v, &s, status, Some(message), None),
    )
    .await
}
