//! `/v3/endpoints`.

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::opt_ref;
use super::render;
use super::schemas as s;
use crate::context::Core;
use crate::http::body::{Body, Sent};
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{extra, new_id};
use crate::http::openapi::{errors as E, to_json};
use crate::http::pages::page;
use crate::http::JsonBody;
use crate::policy::{enforce, enforce_found};
use crate::state::model::{Endpoint, Region};
use crate::state::read::CatalogReads;
use crate::state::{Command, Reader};
use crate::token::Call;

const INTERFACES: [&str; 3] = ["public", "internal", "admin"];
/// Keystone's URL rule: a scheme, a colon, something after it; at most 225 characters.
const MAX_URL: usize = 225;

fn load(node: &Core, id: &str) -> ApiResult<Endpoint> {
    node.engine.read().endpoint(id)?.ok_or_else(|| ApiError::not_found("endpoint", id))
}

fn target(e: &Endpoint) -> Value {
    json!({"endpoint": {"id": e.id, "service_id": e.service_id, "region_id": e.region_id, "interface": e.interface}})
}

fn shown(node: &Core, e: &Endpoint) -> Json<Value> {
    let endpoint = render::endpoint(e, &node.cfg.public_base());
    Json(to_json(&s::EndpointEnvelope { endpoint }))
}

fn check_interface(i: &str) -> ApiResult<()> {
    if INTERFACES.contains(&i) {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!(
            "Invalid input for field 'interface': '{}' is not one of public, internal, admin.",
            i.chars().take(16).collect::<String>()
        )))
    }
}

fn check_url(url: &str) -> ApiResult<()> {
    let scheme_ok = url.split_once(':').is_some_and(|(scheme, rest)| {
        !scheme.is_empty()
            && !rest.is_empty()
            && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'))
    });
    if scheme_ok {
        Ok(())
    } else {
        Err(ApiError::bad_request("Invalid input for field 'url': must look like scheme:rest."))
    }
}

/// `region_id`, or the deprecated `region` when `region_id` is not given.
fn region_of(region_id: &Sent<String>, region: &Sent<String>) -> ApiResult<Option<String>> {
    if region_id.is_present() {
        opt_ref(region_id, "region_id")
    } else {
        opt_ref(region, "region")
    }
}

/// Keystone's backward compatibility with v2 clients: an endpoint that names its region with
/// the deprecated `region` field (and no `region_id`) creates that region when it does not exist
/// yet, as a write of its own before the endpoint's (so does Keystone). `region_id` never does.
async fn ensure_legacy_region(node: &Core, region_id: &Sent<String>, region: &Sent<String>) -> ApiResult<()> {
    if region_id.is_present() {
        return Ok(());
    }
    let Some(id) = opt_ref(region, "region")? else { return Ok(()) };
    if node.engine.snapshot().region(&id)?.is_some() {
        return Ok(());
    }
    let r = Region { id, description: None, parent_region_id: None, extra: "{}".into() };
    match node.propose(Command::CreateRegion(r)).await {
        Err(e) if e.status != StatusCode::CONFLICT => Err(e),
        _ => Ok(()),
    }
}

#[utoipa::path(get, path = "/v3/endpoints", operation_id = "endpoints_list", tag = "catalog",
    params(("interface" = Option<String>, Query, description = "Only endpoints with this interface (public, internal or admin; others are 400)."),
           ("service_id" = Option<String>, Query, description = "Only endpoints of this service."),
           ("region_id" = Option<String>, Query, description = "Only endpoints in this region.")),
    responses((status = 200, description = "The endpoints.", body = s::EndpointList), E::BadRequest, E::Unauthorized, E::Forbidden, E::Internal))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    enforce("identity:list_endpoints", &ctx, &json!({}))?;
    if let Some(i) = q.get("interface") {
        check_interface(i)?;
    }
    let endpoints: Vec<Endpoint> = node.engine.read().endpoints()?;
    let base = node.cfg.public_base();
    let out = endpoints
        .iter()
        .filter(|e| q.get("interface").is_none_or(|i| &e.interface == i))
        .filter(|e| q.get("service_id").is_none_or(|s| &e.service_id == s))
        .filter(|e| q.get("region_id").is_none_or(|r| e.region_id.as_ref() == Some(r)))
        .map(|e| to_json(&render::endpoint(e, &base)))
        .collect();
    Ok(Json(page("endpoints", out, &base, "/v3/endpoints", &q)?))
}

#[utoipa::path(post, path = "/v3/endpoints", operation_id = "endpoints_create", tag = "catalog", description = "404 when the service or region does not exist.",
    request_body(content = s::EndpointCreateRequest, content_type = "application/json"),
    responses((status = 201, description = "The created endpoint.", body = s::EndpointEnvelope), E::Write))]
pub async fn create(
    Call(node, ctx): Call,
    JsonBody(body): JsonBody<Body<s::EndpointCreateRequest>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let b = body.object()?.endpoint.envelope("endpoint")?;
    let interface = b.interface.name("interface", 16)?;
    check_interface(&interface)?;
    let url = b.url.name("url", MAX_URL)?;
    check_url(&url)?;
    let e = Endpoint {
        id: new_id(),
        interface,
        service_id: b.service_id.name("service_id", 64)?,
        region_id: region_of(&b.fields.region_id, &b.fields.region)?,
        url,
        enabled: b.fields.enabled.flag("enabled")?.unwrap_or(true),
        extra: extra(&b.fields.extra, &[], "{}"),
    };
    enforce("identity:create_endpoint", &ctx, &target(&e))?;
    ensure_legacy_region(&node, &b.fields.region_id, &b.fields.region).await?;
    Ok((StatusCode::CREATED, shown(&node, &node.propose_as(Command::CreateEndpoint(e)).await?)))
}

#[utoipa::path(get, path = "/v3/endpoints/{id}", operation_id = "endpoints_get", tag = "catalog",
    params(("id" = String, Path, description = "The endpoint's id.")),
    responses((status = 200, description = "The endpoint.", body = s::EndpointEnvelope), E::Read))]
pub async fn get(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let e = enforce_found("identity:get_endpoint", &ctx, load(&node, &id), target, json!({}))?;
    Ok(shown(&node, &e))
}

#[utoipa::path(patch, path = "/v3/endpoints/{id}", operation_id = "endpoints_update", tag = "catalog",
    params(("id" = String, Path, description = "The endpoint's id.")),
    request_body(content = s::EndpointUpdateRequest, content_type = "application/json"),
    responses((status = 200, description = "The updated endpoint.", body = s::EndpointEnvelope), E::Write))]
pub async fn update(
    Call(node, ctx): Call,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Body<s::EndpointUpdateRequest>>,
) -> ApiResult<Json<Value>> {
    let b = body.object()?.endpoint.envelope("endpoint")?;
    let mut e = enforce_found("identity:update_endpoint", &ctx, load(&node, &id), target, json!({}))?;
    if b.id.is_present() && b.id.string("id", 64)?.as_deref() != Some(id.as_str()) {
        return Err(ApiError::bad_request("Cannot change ID."));
    }
    if let Some(i) = b.interface.opt_name("interface", 16)? {
        check_interface(&i)?;
        e.interface = i;
    }
    if let Some(u) = b.url.opt_name("url", MAX_URL)? {
        check_url(&u)?;
        e.url = u;
    }
    if let Some(s) = b.service_id.opt_name("service_id", 64)? {
        e.service_id = s;
    }
    if b.fields.region_id.is_present() || b.fields.region.is_present() {
        e.region_id = region_of(&b.fields.region_id, &b.fields.region)?;
    }
    if let Some(en) = b.fields.enabled.flag("enabled")? {
        e.enabled = en;
    }
    e.extra = extra(&b.fields.extra, &[], &e.extra);
    ensure_legacy_region(&node, &b.fields.region_id, &b.fields.region).await?;
    Ok(shown(&node, &node.propose_as(Command::UpdateEndpoint(e)).await?))
}

#[utoipa::path(delete, path = "/v3/endpoints/{id}", operation_id = "endpoints_delete", tag = "catalog",
    params(("id" = String, Path, description = "The endpoint's id.")),
    responses((status = 204, description = "Deleted."), E::Change))]
pub async fn delete(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<StatusCode> {
    let e = enforce_found("identity:delete_endpoint", &ctx, load(&node, &id), target, json!({}))?;
    node.propose(Command::DeleteEndpoint { id: e.id }).await?;
    Ok(StatusCode::NO_CONTENT)
}
