//! `/v3/regions`: Keystone's region API (ids may be chosen by the client, also via PUT).

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::opt_ref;
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
use crate::state::model::Region;
use crate::state::read::CatalogReads;
use crate::state::{Command, Reader};
use crate::token::Call;

const MAX_ID: usize = 255;

fn load(node: &Core, id: &str) -> ApiResult<Region> {
    node.engine.read().region(id)?.ok_or_else(|| ApiError::not_found("region", id))
}

fn target(r: &Region) -> Value {
    json!({"region": {"id": r.id, "parent_region_id": r.parent_region_id}})
}

fn shown(node: &Core, r: &Region) -> Json<Value> {
    let region = render::region(r, &node.cfg.public_base());
    Json(to_json(&s::RegionEnvelope { region }))
}

#[utoipa::path(get, path = "/v3/regions", operation_id = "regions_list", tag = "catalog",
    params(("parent_region_id" = Option<String>, Query, description = "Only children of this region.")),
    responses((status = 200, description = "The regions.", body = s::RegionList), E::List))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    enforce("identity:list_regions", &ctx, &json!({}))?;
    let regions: Vec<Region> = node.engine.read().regions()?;
    let base = node.cfg.public_base();
    let out = regions
        .iter()
        .filter(|r| q.get("parent_region_id").is_none_or(|p| r.parent_region_id.as_ref() == Some(p)))
        .map(|r| to_json(&render::region(r, &base)))
        .collect();
    Ok(Json(page("regions", out, &base, "/v3/regions", &q)?))
}

/// A region from a create body; `id` is the client's when given and non-empty.
fn from_body(b: s::RegionBody, id: Option<String>) -> ApiResult<Region> {
    let id = match id.or(b.id.string("id", MAX_ID)?) {
        Some(id) if !id.is_empty() => id,
        _ => new_id(),
    };
    Ok(Region {
        id,
        description: b.description.string("description", 65535)?,
        parent_region_id: opt_ref(&b.parent_region_id, "parent_region_id")?,
        extra: extra(&b.extra, &[], "{}"),
    })
}

async fn create_region(node: &Core, ctx: &crate::token::ValidToken, r: Region) -> ApiResult<(StatusCode, Json<Value>)> {
    enforce("identity:create_region", ctx, &target(&r))?;
    Ok((StatusCode::CREATED, shown(node, &node.propose_as(Command::CreateRegion(r)).await?)))
}

#[utoipa::path(post, path = "/v3/regions", operation_id = "regions_create", tag = "catalog",
    request_body(content = s::RegionRequest, content_type = "application/json"),
    responses((status = 201, description = "The created region.", body = s::RegionEnvelope), E::Write))]
pub async fn create(
    Call(node, ctx): Call,
    JsonBody(body): JsonBody<Body<s::RegionRequest>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let b = body.object()?.region.envelope("region")?;
    let r = from_body(b, None)?;
    create_region(&node, &ctx, r).await
}

/// `PUT /v3/regions/{id}`: create with a chosen id.
#[utoipa::path(put, path = "/v3/regions/{id}", operation_id = "regions_put", tag = "catalog",
    params(("id" = String, Path, description = "The new region's id.")),
    request_body(content = s::RegionRequest, content_type = "application/json"),
    responses((status = 201, description = "The region created with the id of the path.", body = s::RegionEnvelope), E::Write))]
pub async fn put(
    Call(node, ctx): Call,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Body<s::RegionRequest>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let b = body.object()?.region.envelope("region")?;
    if let Some(body_id) = b.id.string("id", MAX_ID)? {
        if body_id != id {
            return Err(ApiError::bad_request(format!("Conflicting region IDs specified: \"{id}\" != \"{body_id}\".")));
        }
    }
    if id.is_empty() || id.chars().count() > MAX_ID {
        return Err(ApiError::bad_request("Invalid input for field 'id'."));
    }
    let r = from_body(b, Some(id))?;
    create_region(&node, &ctx, r).await
}

#[utoipa::path(get, path = "/v3/regions/{id}", operation_id = "regions_get", tag = "catalog",
    params(("id" = String, Path, description = "The region's id.")),
    responses((status = 200, description = "The region.", body = s::RegionEnvelope), E::Read))]
pub async fn get(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let r = enforce_found("identity:get_region", &ctx, load(&node, &id), target, json!({}))?;
    Ok(shown(&node, &r))
}

#[utoipa::path(patch, path = "/v3/regions/{id}", operation_id = "regions_update", tag = "catalog",
    params(("id" = String, Path, description = "The region's id.")),
    request_body(content = s::RegionRequest, content_type = "application/json"),
    responses((status = 200, description = "The updated region.", body = s::RegionEnvelope), E::Write))]
pub async fn update(
    Call(node, ctx): Call,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Body<s::RegionRequest>>,
) -> ApiResult<Json<Value>> {
    let b = body.object()?.region.envelope("region")?;
    let mut r = enforce_found("identity:update_region", &ctx, load(&node, &id), target, json!({}))?;
    if b.id.is_present() && b.id.string("id", MAX_ID)?.as_deref() != Some(id.as_str()) {
        return Err(ApiError::bad_request("Cannot change ID."));
    }
    if b.description.is_present() {
        r.description = b.description.string("description", 65535)?;
    }
    if b.parent_region_id.is_present() {
        r.parent_region_id = opt_ref(&b.parent_region_id, "parent_region_id")?;
    }
    r.extra = extra(&b.extra, &[], &r.extra);
    Ok(shown(&node, &node.propose_as(Command::UpdateRegion(r)).await?))
}

#[utoipa::path(delete, path = "/v3/regions/{id}", operation_id = "regions_delete", tag = "catalog",
    params(("id" = String, Path, description = "The region's id.")),
    responses((status = 204, description = "Deleted."), E::Change))]
pub async fn delete(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<StatusCode> {
    let r = enforce_found("identity:delete_region", &ctx, load(&node, &id), target, json!({}))?;
    node.propose(Command::DeleteRegion { id: r.id }).await?;
    Ok(StatusCode::NO_CONTENT)
}
