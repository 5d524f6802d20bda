//! `/v3/services`.

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::render;
use super::schemas as s;
use crate::context::Core;
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{extra, new_id};
use crate::http::openapi::{errors as E, to_json};
use crate::http::pages::page;
use crate::http::JsonBody;
use crate::policy::{enforce, enforce_found};
use crate::state::model::Service;
use crate::state::read::CatalogReads;
use crate::state::{Command, Reader};
use crate::token::Call;

fn load(node: &Core, id: &str) -> ApiResult<Service> {
    node.engine.read().service(id)?.ok_or_else(|| ApiError::not_found("service", id))
}

fn target(s: &Service) -> Value {
    json!({"service": {"id": s.id, "type": s.service_type}})
}

fn shown(node: &Core, v: &Service) -> Json<Value> {
    let service = render::service(v, &node.cfg.public_base());
    Json(to_json(&s::ServiceEnvelope { service }))
}

#[utoipa::path(get, path = "/v3/services", operation_id = "services_list", tag = "catalog",
    params(("name" = Option<String>, Query, description = "Only services with this name."),
           ("type" = Option<String>, Query, description = "Only services of this type.")),
    responses((status = 200, description = "The services.", body = s::ServiceList), E::List))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    enforce("identity:list_services", &ctx, &json!({}))?;
    let services: Vec<Service> = node.engine.read().services()?;
    let base = node.cfg.public_base();
    let out = services
        .iter()
        .filter(|s| q.get("type").is_none_or(|t| &s.service_type == t))
        .filter(|s| q.get("name").is_none_or(|n| s.name.as_deref().unwrap_or("") == n))
        .map(|s| to_json(&render::service(s, &base)))
        .collect();
    Ok(Json(page("services", out, &base, "/v3/services", &q)?))
}

#[utoipa::path(post, path = "/v3/services", operation_id = "services_create", tag = "catalog",
    request_body(content = s::ServiceCreateRequest, content_type = "application/json"),
    responses((status = 201, description = "The created service.", body = s::ServiceEnvelope), E::Write))]
pub async fn create(
    Call(node, ctx): Call,
    JsonBody(body): JsonBody<Body<s::ServiceCreateRequest>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let b = body.object()?.service.envelope("service")?;
    let s = Service {
        id: new_id(),
        service_type: b.service_type.name("type", 255)?,
        name: b.fields.name.opt_name("name", 255)?,
        enabled: b.fields.enabled.flag("enabled")?.unwrap_or(true),
        description: b.fields.description.string("description", 65535)?,
        extra: extra(&b.fields.extra, &[], "{}"),
    };
    enforce("identity:create_service", &ctx, &target(&s))?;
    Ok((StatusCode::CREATED, shown(&node, &node.propose_as(Command::CreateService(s)).await?)))
}

#[utoipa::path(get, path = "/v3/services/{id}", operation_id = "services_get", tag = "catalog",
    params(("id" = String, Path, description = "The service's id.")),
    responses((status = 200, description = "The service.", body = s::ServiceEnvelope), E::Read))]
pub async fn get(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let s = enforce_found("identity:get_service", &ctx, load(&node, &id), target, json!({}))?;
    Ok(shown(&node, &s))
}

#[utoipa::path(patch, path = "/v3/services/{id}", operation_id = "services_update", tag = "catalog",
    params(("id" = String, Path, description = "The service's id.")),
    request_body(content = s::ServiceUpdateRequest, content_type = "application/json"),
    responses((status = 200, description = "The updated service.", body = s::ServiceEnvelope), E::Write))]
pub async fn update(
    Call(node, ctx): Call,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Body<s::ServiceUpdateRequest>>,
) -> ApiResult<Json<Value>> {
    let b = body.object()?.service.envelope("service")?;
    let mut s = enforce_found("identity:update_service", &ctx, load(&node, &id), target, json!({}))?;
    if b.id.is_present() && b.id.string("id", 64)?.as_deref() != Some(id.as_str()) {
        return Err(ApiError::bad_request("Cannot change ID."));
    }
    if let Some(t) = b.service_type.opt_name("type", 255)? {
        s.service_type = t;
    }
    if let Some(n) = b.fields.name.opt_name("name", 255)? {
        s.name = Some(n);
    }
    if let Some(e) = b.fields.enabled.flag("enabled")? {
        s.enabled = e;
    }
    if b.fields.description.is_present() {
        s.description = b.fields.description.string("description", 65535)?;
    }
    s.extra = extra(&b.fields.extra, &[], &s.extra);
    Ok(shown(&node, &node.propose_as(Command::UpdateService(s)).await?))
}

/// Deletes the service and its endpoints.
#[utoipa::path(delete, path = "/v3/services/{id}", operation_id = "services_delete", tag = "catalog",
    params(("id" = String, Path, description = "The service's id.")),
    responses((status = 204, description = "Deleted, with its endpoints."), E::Change))]
pub async fn delete(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<StatusCode> {
    let s = enforce_found("identity:delete_service", &ctx, load(&node, &id), target, json!({}))?;
    node.propose(Command::DeleteService { id: s.id }).await?;
    Ok(StatusCode::NO_CONTENT)
}
