//! `/v3/limits` and `/v3/limits/model`: a project's or domain's override of a registered
//! limit. Changed by a cloud administrator with a system or project token; read by an
//! administrator or system reader, and by a caller scoped to the limit's project or domain (a
//! domain's also reads its projects'). The listing shows each caller what its scope covers,
//! as Keystone filters it.

use std::collections::{BTreeSet, HashMap};

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::render;
use super::schemas::{self as s, LimitOne, LimitsCreated, ModelOne, ModelView};
use crate::context::Core;
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::new_id;
use crate::http::openapi::{errors as E, to_json};
use crate::http::pages::page;
use crate::http::JsonBody;
use crate::policy::{enforce, Persona};
use crate::state::keys::ns;
use crate::state::limits::{Limit, LimitCommand, NewLimit};
use crate::state::read::LimitReads;
use crate::state::Reader;
use crate::token::{Call, TokenScope, ValidToken};

#[utoipa::path(get, path = "/v3/limits/model", operation_id = "limits_model", tag = "unified_limits",
    responses((status = 200, description = "The enforcement model (`[unified_limit] enforcement_model`).", body = ModelOne), E::List))]
pub async fn model(Call(node, ctx): Call) -> ApiResult<Json<ModelOne>> {
    enforce("identity:get_limit_model", &ctx, &json!({}))?;
    let m = node.cfg.unified_limit_model;
    Ok(Json(ModelOne { model: ModelView { name: m.name().into(), description: m.description().into() } }))
}

/// Which limits a caller's listing shows: Keystone's "superuser" (system scope, or the
/// `admin` or `service` role; under `admin_scope = system` a cloud administrator) sees all, a
/// domain-scoped caller its domain's and its projects', a project-scoped one its project's.
enum Seen {
    All,
    Domain { id: String, projects: BTreeSet<String> },
    Project(String),
    Nothing,
}

fn seen(node: &Core, ctx: &ValidToken) -> ApiResult<Seen> {
    let p = Persona { ctx };
    if p.system_scoped() || p.cloud_admin() || ctx.has_role("service") {
        return Ok(Seen::All);
    }
    Ok(match &ctx.payload.scope {
        TokenScope::Domain(d) => Seen::Domain {
            id: d.clone(),
            projects: node.engine.read().member_ids(ns::PROJECTS_OF_DOMAIN, d)?.into_iter().collect(),
        },
        TokenScope::Project(pid) => Seen::Project(pid.clone()),
        _ => Seen::Nothing,
    })
}

impl Seen {
    fn shows(&self, l: &Limit) -> bool {
        match self {
            Seen::All => true,
            Seen::Domain { id, projects } => match (&l.project_id, &l.domain_id) {
                (Some(p), _) => projects.contains(p),
                (None, Some(d)) => d == id,
                _ => false,
            },
            Seen::Project(p) => l.project_id.as_ref() == Some(p),
            Seen::Nothing => false,
        }
    }
}

#[utoipa::path(get, path = "/v3/limits", operation_id = "limits_list", tag = "unified_limits",
    params(("service_id" = Option<String>, Query, description = "Only this service's."),
           ("region_id" = Option<String>, Query, description = "Only this region's."),
           ("resource_name" = Option<String>, Query, description = "Only this resource's."),
           ("project_id" = Option<String>, Query, description = "Only this project's."),
           ("domain_id" = Option<String>, Query, description = "Only this domain's.")),
    responses((status = 200, description = "The limits the caller's scope covers, in id order.", body = s::LimitList), E::List))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    enforce("identity:list_limits", &ctx, &json!({}))?;
    let seen = seen(&node, &ctx)?;
    let base = node.cfg.public_base();
    let matches = |l: &Limit| {
        q.get("service_id").is_none_or(|v| l.service_id == *v)
            && q.get("region_id").is_none_or(|v| l.region_id.as_ref() == Some(v))
            && q.get("resource_name").is_none_or(|v| l.resource_name == *v)
            && q.get("project_id").is_none_or(|v| l.project_id.as_ref() == Some(v))
            && q.get("domain_id").is_none_or(|v| l.domain_id.as_ref() == Some(v))
    };
    let items = node
        .engine
        .read()
        .limits()?
        .iter()
        .filter(|l| matches(l) && seen.shows(l))
        .map(|l| to_json(&render::limit(l, &base)))
        .collect();
    Ok(Json(page("limits", items, &base, "/v3/limits", &q)?))
}

#[utoipa::path(post, path = "/v3/limits", operation_id = "limits_create", tag = "unified_limits",
    request_body(content = s::LimitsCreateRequest, content_type = "application/json"),
    responses((status = 201, description = "The limits, all created (or none, with the error).", body = LimitsCreated), E::Write))]
pub async fn create(
    Call(node, ctx): Call,
    JsonBody(body): JsonBody<Body<s::LimitsCreateRequest>>,
) -> ApiResult<(StatusCode, Json<LimitsCreated>)> {
    let asked = s::items("limits", body.object()?.limits, s::LIMIT_CREATE_KEYS)?;
    let mut limits = Vec::with_capacity(asked.len());
    for (n, b) in asked.iter().enumerate() {
        let key = |f: &str| format!("limits/{n}/{f}");
        // Keystone's `oneOf`: exactly one of the two owners is named.
        if b.project_id.is_present() == b.domain_id.is_present() {
            return Err(s::invalid(
                &format!("limits/{n}"),
                "is valid under each of, or none of, the schemas requiring 'project_id' and 'domain_id'",
            ));
        }
        limits.push(NewLimit {
            id: new_id(),
            project_id: s::id(&key("project_id"), &b.project_id)?,
            domain_id: s::id(&key("domain_id"), &b.domain_id)?,
            service_id: s::must("service_id", s::id(&key("service_id"), &b.service_id)?)?,
            region_id: s::region(&key("region_id"), &b.region_id)?,
            resource_name: s::must("resource_name", s::name(&key("resource_name"), &b.resource_name)?)?,
            resource_limit: s::must("resource_limit", s::count(&key("resource_limit"), &b.resource_limit)?)?,
            description: s::description(&key("description"), &b.description)?,
        });
    }
    enforce("identity:create_limits", &ctx, &json!({}))?;
    let model = node.cfg.unified_limit_model;
    let made: Vec<Limit> = node.propose_as(LimitCommand::Create { limits, model }).await?;
    let base = node.cfg.public_base();
    Ok((StatusCode::CREATED, Json(LimitsCreated { limits: made.iter().map(|l| render::limit(l, &base)).collect() })))
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found_msg(format!("Could not find limit for {id}."))
}

/// Keystone's target: the limit with its project (or domain) when it exists; none
/// otherwise, which only an administrator passes before hearing 404.
fn target(node: &Core, l: Option<&Limit>) -> ApiResult<Value> {
    let Some(l) = l else { return Ok(json!({})) };
    let view = node.engine.read();
    let mut limit = json!({"id": l.id, "project_id": l.project_id, "domain_id": l.domain_id});
    if let Some(p) = l.project_id.as_deref().map(|p| view.project(p)).transpose()?.flatten() {
        limit["project"] = json!({"id": p.id, "domain_id": p.domain_id});
    } else if let Some(d) = l.domain_id.as_deref().map(|d| view.domain(d)).transpose()?.flatten() {
        limit["domain"] = json!({"id": d.id});
    }
    Ok(json!({"limit": limit}))
}

#[utoipa::path(get, path = "/v3/limits/{id}", operation_id = "limits_get", tag = "unified_limits",
    params(("id" = String, Path, description = "The limit.")),
    responses((status = 200, description = "The limit.", body = LimitOne), E::Read))]
pub async fn get(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<Json<LimitOne>> {
    let found = node.engine.read().limit(&id)?;
    enforce("identity:get_limit", &ctx, &target(&node, found.as_ref())?)?;
    let l = found.ok_or_else(|| not_found(&id))?;
    Ok(Json(LimitOne { limit: render::limit(&l, &node.cfg.public_base()) }))
}

#[utoipa::path(patch, path = "/v3/limits/{id}", operation_id = "limits_update", tag = "unified_limits",
    params(("id" = String, Path, description = "The limit.")),
    request_body(content = s::LimitUpdateRequest, content_type = "application/json"),
    responses((status = 200, description = "The limit as changed.", body = LimitOne), E::Write))]
pub async fn update(
    Call(node, ctx): Call,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Body<s::LimitUpdateRequest>>,
) -> ApiResult<Json<LimitOne>> {
    let b = s::object("limit", body.object()?.limit, &["resource_limit", "description"])?;
    let resource_limit = s::count("limit/resource_limit", &b.resource_limit)?;
    let description =
        if b.description.is_present() { Some(s::description("limit/description", &b.description)?) } else { None };
    enforce("identity:update_limit", &ctx, &json!({}))?;
    let model = node.cfg.unified_limit_model;
    let mut changed: Vec<Limit> =
        node.propose_as(LimitCommand::Update { id, resource_limit, description, model }).await?;
    let l = changed.pop().ok_or_else(|| ApiError::internal("an update answered no limit"))?;
    Ok(Json(LimitOne { limit: render::limit(&l, &node.cfg.public_base()) }))
}

#[utoipa::path(delete, path = "/v3/limits/{id}", operation_id = "limits_delete", tag = "unified_limits",
    params(("id" = String, Path, description = "The limit.")),
    responses((status = 204, description = "Deleted."), E::Remove))]
pub async fn delete(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<StatusCode> {
    enforce("identity:delete_limit", &ctx, &json!({}))?;
    node.propose(LimitCommand::Delete { id }).await?;
    Ok(StatusCode::NO_CONTENT)
}
