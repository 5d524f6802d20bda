//! `/v3/domains`.

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::render;
use super::schemas as s;
use crate::clock::now_micros;
use crate::context::Core;
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{extra, new_id, Obj};
use crate::http::openapi::{errors as E, to_json};
use crate::http::JsonBody;
use crate::openfga::forget::{forget_in, Gone};
use crate::policy::{enforce, enforce_found, guard, Persona};
use crate::state::keys::ns;
use crate::state::model::Project;
use crate::state::read::ResourceReads;
use crate::state::{Command, Reader};
use crate::token::Call;

/// The domain as sent, the create policy's target.
fn sent(b: &s::DomainCreate) -> Obj {
    let mut o = b.fields.extra.clone();
    b.id.put(&mut o, "id");
    b.name.put(&mut o, "name");
    b.fields.description.put(&mut o, "description");
    b.fields.enabled.put(&mut o, "enabled");
    b.fields.options.put(&mut o, "options");
    b.fields.domain_id.put(&mut o, "domain_id");
    b.fields.is_domain.put(&mut o, "is_domain");
    b.fields.parent_id.put(&mut o, "parent_id");
    o
}

fn load(node: &Core, id: &str) -> ApiResult<Project> {
    node.engine.read().domain(id)?.ok_or_else(|| ApiError::not_found("domain", id))
}

fn domain_target(d: &Project) -> Value {
    json!({"domain": {"id": d.id}})
}

fn shown(node: &Core, d: &Project) -> Json<Value> {
    let domain = render::domain(d, &node.cfg.public_base());
    Json(to_json(&s::DomainEnvelope { domain }))
}

#[utoipa::path(get, path = "/v3/domains", operation_id = "domains_list", tag = "domains",
    params(("name" = Option<String>, Query, description = "Only the domain with this name (case-insensitive)."),
           ("ids" = Option<String>, Query, description = "Only these ids (comma-separated)."),
           ("enabled" = Option<bool>, Query, description = "Only enabled (true) or disabled (false) domains.")),
    responses((status = 200, description = "The domains the caller may see.", body = s::DomainList), E::List))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    // A domain-scoped caller asks about, and sees, its own domain only (as Keystone filters).
    let own = Persona { ctx: &ctx }.listing_domain().map(str::to_string);
    let target = own.as_ref().map_or_else(|| json!({}), |d| json!({"domain": {"id": d}}));
    enforce("identity:list_domains", &ctx, &target)?;
    let view = node.engine.snapshot();
    let ids: Option<Vec<&str>> = q.get("ids").map(|s| s.split(',').map(str::trim).collect());
    let domains: Vec<Project> = match q.get("name") {
        Some(name) => view
            .id_by_name(ns::DOMAIN_NAME, "", name)?
            .and_then(|id| view.domain(&id).ok().flatten())
            .into_iter()
            .collect(),
        None => view.projects()?.into_iter().filter(|p| p.is_domain).collect(),
    };
    let enabled = q.get("enabled").map(|v| crate::http::extract::query_flag(Some(v)));
    let base = node.cfg.public_base();
    let out: Vec<Value> = domains
        .iter()
        .filter(|d| ids.as_ref().is_none_or(|ids| ids.contains(&d.id.as_str())))
        .filter(|d| own.as_ref().is_none_or(|own| *own == d.id))
        .filter(|d| enabled.is_none_or(|e| d.enabled == e))
        .map(|d| to_json(&render::domain(d, &base)))
        .collect();
    Ok(Json(crate::http::pages::page("domains", out, &base, "/v3/domains", &q)?))
}

#[utoipa::path(post, path = "/v3/domains", operation_id = "domains_create", tag = "domains",
    request_body(content = s::DomainCreateRequest, content_type = "application/json"),
    responses((status = 201, description = "The created domain.", body = s::DomainEnvelope), E::Write))]
pub async fn create(
    Call(node, ctx): Call,
    JsonBody(body): JsonBody<Body<s::DomainCreateRequest>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let b = body.object()?.domain.envelope("domain")?;
    enforce("identity:create_domain", &ctx, &json!({"domain": sent(&b)}))?;
    let id = match b.id.string("id", 64)? {
        Some(id) if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') => {
            return Err(ApiError::bad_request("Invalid input for field 'id'."))
        }
        Some(id) => id,
        None => new_id(),
    };
    let d = Project {
        domain_id: id.clone(),
        id,
        name: b.name.name("name", 64)?,
        // Keystone defaults an absent description to "" (an explicit null stays null).
        description: match b.fields.description.is_present() {
            true => b.fields.description.string("description", 65535)?,
            false => Some(String::new()),
        },
        enabled: b.fields.enabled.flag("enabled")?.unwrap_or(true),
        is_domain: true,
        parent_id: None,
        tags: Vec::new(),
        extra: extra(&b.fields.extra, &[], "{}"),
        options: branded(b.fields.options.options()?)?.unwrap_or_else(|| "{}".into()),
        created_at: now_micros(),
    };
    Ok((StatusCode::CREATED, shown(&node, &node.propose_as(Command::CreateProject(d)).await?)))
}

/// Domain options, with the branding options of the domain's pages checked
/// (`branding_name`, `branding_logo_url`, `branding_color`).
fn branded(options: Option<String>) -> ApiResult<Option<String>> {
    if let Some(o) = &options {
        crate::web::brand::check(o).map_err(ApiError::bad_request)?;
    }
    Ok(options)
}

#[utoipa::path(get, path = "/v3/domains/{id}", operation_id = "domains_get", tag = "domains",
    params(("id" = String, Path, description = "The domain's id.")),
    responses((status = 200, description = "The domain.", body = s::DomainEnvelope), E::Read))]
pub async fn get(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let d = enforce_found("identity:get_domain", &ctx, load(&node, &id), domain_target, json!({}))?;
    Ok(shown(&node, &d))
}

#[utoipa::path(patch, path = "/v3/domains/{id}", operation_id = "domains_update", tag = "domains",
    params(("id" = String, Path, description = "The domain's id.")),
    request_body(content = s::DomainUpdateRequest, content_type = "application/json"),
    responses((status = 200, description = "The updated domain.", body = s::DomainEnvelope), E::Write))]
pub async fn update(
    Call(node, ctx): Call,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Body<s::DomainUpdateRequest>>,
) -> ApiResult<Json<Value>> {
    let b = body.object()?.domain.envelope("domain")?;
    // Keystone looks the domain up first here: 404 to anyone when there is none.
    let mut d = load(&node, &id)?;
    enforce("identity:update_domain", &ctx, &domain_target(&d))?;
    if let Some(other) = b.id.string("id", 64)? {
        if other != d.id {
            return Err(ApiError::bad_request("Cannot change the domain id."));
        }
    }
    if let Some(n) = b.name.opt_name("name", 64)? {
        d.name = n;
    }
    if b.fields.description.is_present() {
        d.description = b.fields.description.string("description", 65535)?;
    }
    if let Some(e) = b.fields.enabled.flag("enabled")? {
        if !e && d.enabled {
            guard::disable_domain(&node.engine.read(), &ctx, &d.id)?;
        }
        d.enabled = e;
    }
    if let Some(opts) = branded(b.fields.options.options()?)? {
        d.options = opts;
    }
    d.extra = extra(&b.fields.extra, &[], &d.extra);
    Ok(shown(&node, &node.propose_as(Command::UpdateProject(d)).await?))
}

#[utoipa::path(delete, path = "/v3/domains/{id}", operation_id = "domains_delete", tag = "domains",
    params(("id" = String, Path, description = "The domain's id.")),
    responses((status = 204, description = "Deleted, with the projects, users, groups, credentials and grants it owns."), E::Change))]
pub async fn delete(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<StatusCode> {
    // Keystone looks the domain up first here: 404 to anyone when there is none.
    let d = load(&node, &id)?;
    enforce("identity:delete_domain", &ctx, &domain_target(&d))?;
    guard::disable_domain(&node.engine.read(), &ctx, &d.id)?;
    forget_in(node.fga.as_deref(), Gone::of_project_delete(&node.engine.read(), &d)?).await?;
    node.propose(Command::DeleteProject { id: d.id }).await?;
    Ok(StatusCode::NO_CONTENT)
}
