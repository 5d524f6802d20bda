//! `/v3/projects`.

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
use crate::http::extract::{query_flag, Below};
use crate::http::fields::{extra, new_id};
use crate::http::listing::of_domain;
use crate::http::openapi::{errors as E, to_json};
use crate::http::JsonBody;
use crate::openfga::forget::{forget_in, Gone};
use crate::policy::{enforce, enforce_found, guard};
use crate::state::keys::ns;
use crate::state::limits::LimitCommand;
use crate::state::model::{Project, Target};
use crate::state::read::ResourceReads;
use crate::state::{Command, Reader};
use crate::token::Call;
use crate::token::ValidToken;

fn load(node: &Core, id: &str) -> ApiResult<Project> {
    node.engine.read().project(id)?.ok_or_else(|| ApiError::not_found("project", id))
}

/// Authorizes a change of `p` through `/v3/projects/{id}`. A project acting as a domain
/// changes only under the domain policies and guard rails, exactly as through `/v3/domains`
/// (Keystone lets the projects API create and delete them, and tempest does): the project
/// policies would let a domain manager disable its own domain. `disabling`: the change
/// disables or deletes it. `actions`: the (project, domain) policy names of the change.
fn authorize_change(
    node: &Core,
    ctx: &ValidToken,
    p: &Project,
    (project_action, domain_action): (&str, &str),
    disabling: bool,
) -> ApiResult<()> {
    let view = node.engine.read();
    if p.is_domain {
        enforce(domain_action, ctx, &json!({"domain": {"id": p.id}}))?;
        if disabling {
            guard::disable_domain(&view, ctx, &p.id)?;
        }
        return Ok(());
    }
    enforce(project_action, ctx, &target(p))?;
    guard::change_project(&view, ctx, &p.id)
}

/// The project to change, or, when there is none, the policy's answer for an unknown target
/// before the 404 (Keystone's order: a caller who may not change projects hears 403).
fn load_or_ask(node: &Core, ctx: &ValidToken, id: &str, action: &str) -> ApiResult<Project> {
    match load(node, id) {
        Err(e) if e.status == StatusCode::NOT_FOUND => {
            enforce(action, ctx, &json!({}))?;
            Err(e)
        }
        found => found,
    }
}

fn shown(node: &Core, p: &Project) -> Json<Value> {
    let project = render::project(p, &node.cfg.public_base());
    Json(to_json(&s::ProjectEnvelope { project }))
}

/// The policy target of a project (also of its tags).
pub(super) fn target(p: &Project) -> Value {
    json!({"project": {"id": p.id, "domain_id": p.domain_id}})
}

/// A domain-scoped caller lists its own domain only (Keystone).
fn effective_domain_filter(ctx: &ValidToken, asked: Option<&String>) -> Option<String> {
    asked.cloned().or_else(|| crate::policy::Persona { ctx }.listing_domain().map(str::to_string))
}

#[utoipa::path(get, path = "/v3/projects", operation_id = "projects_list", tag = "projects",
    params(("domain_id" = Option<String>, Query, description = "Only projects of this domain."),
           ("name" = Option<String>, Query, description = "Only the project with this name (case-insensitive)."),
           ("ids" = Option<String>, Query, description = "Only these ids (comma-separated)."),
           ("enabled" = Option<bool>, Query, description = "Only enabled (true) or disabled (false) projects."),
           ("is_domain" = Option<bool>, Query, description = "List projects acting as domains instead (default false)."),
           ("parent_id" = Option<String>, Query, description = "Only children of this project.")),
    responses((status = 200, description = "The projects the caller may see.", body = s::ProjectList), E::List))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    let domain = effective_domain_filter(&ctx, q.get("domain_id"));
    enforce("identity:list_projects", &ctx, &json!({"domain_id": domain}))?;
    let view = node.engine.snapshot();
    let indexes = (ns::PROJECT_NAME, ns::PROJECTS_OF_DOMAIN);
    let projects =
        of_domain(&view, indexes, (domain.as_ref(), q.get("name")), |id| view.project(id), || view.projects())?;
    let ids: Option<Vec<&str>> = q.get("ids").map(|s| s.split(',').map(str::trim).collect());
    let enabled = q.get("enabled").map(|v| query_flag(Some(v)));
    let is_domain = q.get("is_domain").map(|v| query_flag(Some(v))).unwrap_or(false);
    let name = q.get("name").map(|n| n.to_lowercase());
    let base = node.cfg.public_base();
    let out: Vec<Value> = projects
        .iter()
        .filter(|p| p.is_domain == is_domain)
        .filter(|p| name.as_ref().is_none_or(|n| &p.name.to_lowercase() == n))
        .filter(|p| ids.as_ref().is_none_or(|ids| ids.contains(&p.id.as_str())))
        .filter(|p| enabled.is_none_or(|e| p.enabled == e))
        .filter(|p| q.get("parent_id").is_none_or(|pid| p.parent_id.as_ref() == Some(pid)))
        .map(|p| to_json(&render::project(p, &base)))
        .collect();
    Ok(Json(crate::http::pages::page("projects", out, &base, "/v3/projects", &q)?))
}

/// Keystone's `GET /v3/users/{user_id}/projects`: every project on which the user holds a
/// role, directly or through a group, enabled or not (filters: `domain_id`, `enabled`, `name`).
#[utoipa::path(get, path = "/v3/users/{user_id}/projects", operation_id = "users_projects_list", tag = "users",
    params(("user_id" = String, Path, description = "The user's id."), ("domain_id" = Option<String>, Query, description = "Only projects of this domain."),
           ("enabled" = Option<bool>, Query, description = "Only enabled (true) or disabled (false) projects."),
           ("name" = Option<String>, Query, description = "Only the project with this name (case-insensitive).")),
    responses((status = 200, description = "The projects on which the user holds a role.", body = s::ProjectList), E::Read))]
pub async fn list_for_user(Call(node, ctx): Call, Below(user_id, q): Below) -> ApiResult<Json<Value>> {
    let user = node.engine.read().user(&user_id)?;
    let domain_id = user.as_ref().map(|u| u.domain_id.clone());
    enforce("identity:list_user_projects", &ctx, &json!({"user": {"id": user_id, "domain_id": domain_id}}))?;
    if user.is_none() {
        return Err(ApiError::not_found("user", &user_id));
    }
    let targets = crate::reads::effective::user_targets(&node, &user_id).await?;
    let view = node.engine.snapshot();
    let enabled = q.get("enabled").map(|v| query_flag(Some(v)));
    let name = q.get("name").map(|n| n.to_lowercase());
    let base = node.cfg.public_base();
    let mut out = Vec::new();
    for t in targets {
        let Target::Project(id) = t else { continue };
        let Some(p) = view.project(&id)? else { continue };
        if q.get("domain_id").is_some_and(|d| d != &p.domain_id)
            || enabled.is_some_and(|e| p.enabled != e)
            || name.as_ref().is_some_and(|n| &p.name.to_lowercase() != n)
        {
            continue;
        }
        out.push(to_json(&render::project(&p, &base)));
    }
    let path = format!("/v3/users/{user_id}/projects");
    Ok(Json(crate::http::pages::page("projects", out, &base, &path, &q)?))
}

#[utoipa::path(post, path = "/v3/projects", operation_id = "projects_create", tag = "projects",
    request_body(content = s::ProjectCreateRequest, content_type = "application/json"),
    responses((status = 201, description = "The created project.", body = s::ProjectEnvelope), E::Write))]
pub async fn create(
    Call(node, ctx): Call,
    JsonBody(body): JsonBody<Body<s::ProjectCreateRequest>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let b = body.object()?.project.envelope("project")?;
    let is_domain = b.fields.is_domain.flag("is_domain")?.unwrap_or(false);
    let parent_id = b.fields.parent_id.string("parent_id", 64)?;
    let asked_domain = b.fields.domain_id.string("domain_id", 64)?;
    let id = new_id();
    let domain_id = if is_domain {
        if asked_domain.is_some() || parent_id.is_some() {
            return Err(ApiError::bad_request("A project acting as a domain cannot have a domain_id or parent_id."));
        }
        id.clone()
    } else {
        let from_parent = match &parent_id {
            Some(pid) => {
                let parent = node.engine.read().project(pid)?.ok_or_else(|| ApiError::not_found("project", pid))?;
                Some(if parent.is_domain { parent.id } else { parent.domain_id })
            }
            None => None,
        };
        asked_domain
            .or(from_parent)
            .or_else(|| ctx.scope_domain.as_ref().map(|d| d.id.clone()))
            .unwrap_or_else(|| "default".to_string())
    };
    let p = Project {
        parent_id: if is_domain { None } else { parent_id.or_else(|| Some(domain_id.clone())) },
        domain_id,
        id,
        name: b.name.name("name", 64)?,
        description: b.fields.description.string("description", 65535)?,
        enabled: b.fields.enabled.flag("enabled")?.unwrap_or(true),
        is_domain,
        tags: super::tags::checked_tags(b.fields.tags.strings("tags")?.unwrap_or_default())?,
        extra: extra(&b.fields.extra, &[], "{}"),
        options: b.fields.options.options()?.unwrap_or_else(|| "{}".into()),
        created_at: now_micros(),
    };
    let action = if is_domain { "identity:create_domain" } else { "identity:create_project" };
    enforce(action, &ctx, &target(&p))?;
    // The unified limit model may bound the hierarchy (Keystone's strict_two_level): apply
    // checks the depth in the same command that creates the project.
    let cmd = match (node.cfg.unified_limit_model.max_hierarchy_depth(), &p.parent_id) {
        (Some(max_depth), Some(parent)) if !is_domain => Command::All(vec![
            LimitCommand::CheckDepth { parent_id: parent.clone(), max_depth }.into(),
            Command::CreateProject(p),
        ]),
        _ => Command::CreateProject(p),
    };
    Ok((StatusCode::CREATED, shown(&node, &node.propose_as(cmd).await?)))
}

#[utoipa::path(get, path = "/v3/projects/{id}", operation_id = "projects_get", tag = "projects",
    params(("id" = String, Path, description = "The project's id.")),
    responses((status = 200, description = "The project.", body = s::ProjectEnvelope), E::Read))]
pub async fn get(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let p = enforce_found("identity:get_project", &ctx, load(&node, &id), target, json!({}))?;
    Ok(shown(&node, &p))
}

#[utoipa::path(patch, path = "/v3/projects/{id}", operation_id = "projects_update", tag = "projects",
    params(("id" = String, Path, description = "The project's id.")),
    request_body(content = s::ProjectUpdateRequest, content_type = "application/json"),
    responses((status = 200, description = "The updated project.", body = s::ProjectEnvelope), E::Write))]
pub async fn update(
    Call(node, ctx): Call,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Body<s::ProjectUpdateRequest>>,
) -> ApiResult<Json<Value>> {
    let b = body.object()?.project.envelope("project")?;
    let mut p = load_or_ask(&node, &ctx, &id, "identity:update_project")?;
    let disabling = p.enabled && b.fields.enabled.flag("enabled")? == Some(false);
    authorize_change(&node, &ctx, &p, ("identity:update_project", "identity:update_domain"), disabling)?;
    for (key, sent, current) in [
        ("domain_id", &b.fields.domain_id, Some(p.domain_id.clone())),
        ("parent_id", &b.fields.parent_id, p.parent_id.clone()),
    ] {
        if sent.is_present() && sent.string(key, 64)? != current {
            return Err(ApiError::bad_request(format!("Update of `{key}` is not allowed.")));
        }
    }
    if b.fields.is_domain.is_present() && b.fields.is_domain.flag("is_domain")? != Some(p.is_domain) {
        return Err(ApiError::bad_request("Update of `is_domain` is not allowed."));
    }
    if let Some(n) = b.name.opt_name("name", 64)? {
        p.name = n;
    }
    if b.fields.description.is_present() {
        p.description = b.fields.description.string("description", 65535)?;
    }
    if let Some(e) = b.fields.enabled.flag("enabled")? {
        p.enabled = e;
    }
    if let Some(t) = b.fields.tags.strings("tags")? {
        p.tags = super::tags::checked_tags(t)?;
    }
    if let Some(opts) = b.fields.options.options()? {
        p.options = opts;
    }
    p.extra = extra(&b.fields.extra, &[], &p.extra);
    Ok(shown(&node, &node.propose_as(Command::UpdateProject(p)).await?))
}

#[utoipa::path(delete, path = "/v3/projects/{id}", operation_id = "projects_delete", tag = "projects",
    params(("id" = String, Path, description = "The project's id.")),
    responses((status = 204, description = "Deleted."), E::Change))]
pub async fn delete(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<StatusCode> {
    let p = load_or_ask(&node, &ctx, &id, "identity:delete_project")?;
    authorize_change(&node, &ctx, &p, ("identity:delete_project", "identity:delete_domain"), true)?;
    forget_in(node.fga.as_deref(), Gone::of_project_delete(&node.engine.read(), &p)?).await?;
    node.propose(Command::DeleteProject { id: p.id }).await?;
    Ok(StatusCode::NO_CONTENT)
}
