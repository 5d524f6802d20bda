//! `/v3/registered_limits`: a service's default per resource (and region). Readable by anyone
//! authenticated; changed by a cloud administrator with a system or project token (Keystone's
//! `admin_required` with scope types system and project). The body is checked before the
//! policy, as Keystone's schema decorators run first.

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::render;
use super::schemas::{self as s, RegisteredLimitOne, RegisteredLimitsCreated};
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::new_id;
use crate::http::openapi::{errors as E, to_json};
use crate::http::pages::page;
use crate::http::JsonBody;
use crate::policy::enforce;
use crate::state::limits::{LimitCommand, RegisteredLimit, RegisteredPatch};
use crate::state::read::LimitReads;
use crate::token::Call;

#[utoipa::path(get, path = "/v3/registered_limits", operation_id = "registered_limits_list", tag = "unified_limits",
    params(("service_id" = Option<String>, Query, description = "Only this service's."),
           ("region_id" = Option<String>, Query, description = "Only this region's."),
           ("resource_name" = Option<String>, Query, description = "Only this resource's.")),
    responses((status = 200, description = "The registered limits, in id order.", body = s::RegisteredLimitList), E::List))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    enforce("identity:list_registered_limits", &ctx, &json!({}))?;
    let base = node.cfg.public_base();
    let items = node
        .engine
        .read()
        .registered_limits()?
        .iter()
        .filter(|r| q.get("service_id").is_none_or(|v| r.service_id == *v))
        .filter(|r| q.get("region_id").is_none_or(|v| r.region_id.as_ref() == Some(v)))
        .filter(|r| q.get("resource_name").is_none_or(|v| r.resource_name == *v))
        .map(|r| to_json(&render::registered(r, &base)))
        .collect();
    Ok(Json(page("registered_limits", items, &base, "/v3/registered_limits", &q)?))
}

#[utoipa::path(post, path = "/v3/registered_limits", operation_id = "registered_limits_create", tag = "unified_limits",
    request_body(content = s::RegisteredLimitsCreateRequest, content_type = "application/json"),
    responses((status = 201, description = "The registered limits, all created (or none, with the error).", body = RegisteredLimitsCreated), E::Write))]
pub async fn create(
    Call(node, ctx): Call,
    JsonBody(body): JsonBody<Body<s::RegisteredLimitsCreateRequest>>,
) -> ApiResult<(StatusCode, Json<RegisteredLimitsCreated>)> {
    let asked = s::items("registered_limits", body.object()?.registered_limits, s::REGISTERED_CREATE_KEYS)?;
    let mut limits = Vec::with_capacity(asked.len());
    for (n, b) in asked.iter().enumerate() {
        let key = |f: &str| format!("registered_limits/{n}/{f}");
        limits.push(RegisteredLimit {
            id: new_id(),
            service_id: s::must("service_id", s::id(&key("service_id"), &b.service_id)?)?,
            region_id: s::region(&key("region_id"), &b.region_id)?,
            resource_name: s::must("resource_name", s::name(&key("resource_name"), &b.resource_name)?)?,
            default_limit: s::must("default_limit", s::count(&key("default_limit"), &b.default_limit)?)?,
            description: s::description(&key("description"), &b.description)?,
        });
    }
    enforce("identity:create_registered_limits", &ctx, &json!({}))?;
    let made: Vec<RegisteredLimit> = node.propose_as(LimitCommand::CreateRegistered { limits }).await?;
    let base = node.cfg.public_base();
    let registered_limits = made.iter().map(|r| render::registered(r, &base)).collect();
    Ok((StatusCode::CREATED, Json(RegisteredLimitsCreated { registered_limits })))
}

#[utoipa::path(get, path = "/v3/registered_limits/{id}", operation_id = "registered_limits_get", tag = "unified_limits",
    params(("id" = String, Path, description = "The registered limit.")),
    responses((status = 200, description = "The registered limit.", body = RegisteredLimitOne), E::Read))]
pub async fn get(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<Json<RegisteredLimitOne>> {
    enforce("identity:get_registered_limit", &ctx, &json!({}))?;
    let r = node.engine.read().registered_limit(&id)?.ok_or_else(|| not_found(&id))?;
    Ok(Json(RegisteredLimitOne { registered_limit: render::registered(&r, &node.cfg.public_base()) }))
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found_msg(format!("Could not find registered limit for {id}."))
}

#[utoipa::path(patch, path = "/v3/registered_limits/{id}", operation_id = "registered_limits_update", tag = "unified_limits",
    params(("id" = String, Path, description = "The registered limit.")),
    request_body(content = s::RegisteredLimitUpdateRequest, content_type = "application/json"),
    responses((status = 200, description = "The registered limit as changed (403 while a limit refers to it).", body = RegisteredLimitOne), E::Write))]
pub async fn update(
    Call(node, ctx): Call,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Body<s::RegisteredLimitUpdateRequest>>,
) -> ApiResult<Json<RegisteredLimitOne>> {
    let b = s::object("registered_limit", body.object()?.registered_limit, s::REGISTERED_CREATE_KEYS)?;
    let key = |f: &str| format!("registered_limit/{f}");
    let patch = RegisteredPatch {
        service_id: s::id(&key("service_id"), &b.service_id)?,
        region_id: if b.region_id.is_present() { Some(s::region(&key("region_id"), &b.region_id)?) } else { None },
        resource_name: s::name(&key("resource_name"), &b.resource_name)?,
        default_limit: s::count(&key("default_limit"), &b.default_limit)?,
        description: if b.description.is_present() {
            Some(s::description(&key("description"), &b.description)?)
        } else {
            None
        },
    };
    enforce("identity:update_registered_limit", &ctx, &json!({}))?;
    let mut changed: Vec<RegisteredLimit> = node.propose_as(LimitCommand::UpdateRegistered { id, patch }).await?;
    let r = changed.pop().ok_or_else(|| ApiError::internal("an update answered no registered limit"))?;
    Ok(Json(RegisteredLimitOne { registered_limit: render::registered(&r, &node.cfg.public_base()) }))
}

#[utoipa::path(delete, path = "/v3/registered_limits/{id}", operation_id = "registered_limits_delete", tag = "unified_limits",
    params(("id" = String, Path, description = "The registered limit.")),
    responses((status = 204, description = "Deleted (403 while a limit refers to it)."), E::Remove))]
pub async fn delete(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<StatusCode> {
    enforce("identity:delete_registered_limit", &ctx, &json!({}))?;
    node.propose(LimitCommand::DeleteRegistered { id }).await?;
    Ok(StatusCode::NO_CONTENT)
}
