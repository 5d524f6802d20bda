//! `/v3/OS-FEDERATION/service_providers`: other clouds a user may take a token to (K2K).
//! Enabled ones are listed in every token, as Keystone does.

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::check_path_id;
use super::schemas as s;
use crate::http::body::Sent;
use crate::http::docs::{body, DocApi};
use crate::http::error::ApiResult;
use crate::http::extract::JsonBody;
use crate::http::openapi::errors as E;
use crate::policy::enforce;
use crate::state::model::DocKind;
use crate::state::Reader;
use crate::token::Call;

pub const API: DocApi = DocApi {
    kind: DocKind::ServiceProvider,
    member: "service_provider",
    collection: "service_providers",
    path: |id| format!("/v3/OS-FEDERATION/service_providers/{id}"),
};

/// Keystone's `[saml] relay_state_prefix` default.
const RELAY_STATE_PREFIX: &str = "ss:mem:";

/// The `service_providers` of a token: `{auth_url, id, sp_url}` of each enabled one.
pub fn in_token(r: &impl Reader) -> ApiResult<Vec<Value>> {
    Ok(r.docs(DocKind::ServiceProvider)?
        .iter()
        .map(body)
        .filter(|b| b.get("enabled").and_then(Value::as_bool) == Some(true))
        .map(|b| json!({"auth_url": b.get("auth_url"), "id": b.get("id"), "sp_url": b.get("sp_url")}))
        .collect())
}

#[utoipa::path(get, path = "/v3/OS-FEDERATION/service_providers", operation_id = "service_providers_list", tag = "federation",
    params(("id" = Option<String>, Query, description = "Only this provider."),
           ("enabled" = Option<bool>, Query, description = "Only enabled (or disabled) providers."),
           ("limit" = Option<u32>, Query, description = "At most this many."), ("marker" = Option<String>, Query, description = "Start after this id.")),
    responses((status = 200, description = "The service providers.", body = s::ServiceProviderList), E::List))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    enforce("identity:list_service_providers", &ctx, &json!({}))?;
    let docs = node.engine.read().docs(API.kind)?;
    Ok(Json(API.list(&node, docs, &q, &["id", "enabled"], "/v3/OS-FEDERATION/service_providers")?))
}

#[utoipa::path(put, path = "/v3/OS-FEDERATION/service_providers/{sp_id}", operation_id = "service_providers_create", tag = "federation",
    params(("sp_id" = String, Path, description = "The new provider's id.")),
    request_body(content = s::ServiceProviderRequest, content_type = "application/json"),
    responses((status = 201, description = "The created provider.", body = s::ServiceProviderEnvelope), E::BadRequest, E::Unauthorized, E::Forbidden,
              E::Conflict, E::Internal, E::Unavailable))]
pub async fn create(
    Call(node, ctx): Call,
    Path(sp_id): Path<String>,
    JsonBody(req): JsonBody<Sent<s::ServiceProviderRequest>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let mut f = s::ServiceProviderRequest::checked(req)?;
    enforce("identity:create_service_provider", &ctx, &json!({}))?;
    check_path_id(&sp_id, "service provider")?;
    f.entry("enabled").or_insert(json!(false));
    f.entry("description").or_insert(Value::Null);
    f.entry("relay_state_prefix").or_insert(json!(RELAY_STATE_PREFIX));
    let duplicate =
        format!("Conflict occurred attempting to store service_provider - Duplicate entry found with ID {sp_id}.");
    let saved = API.save(&node, API.doc(&sp_id, f), true, vec![]).await.map_err(|e| e.duplicate(duplicate))?;
    Ok((StatusCode::CREATED, Json(API.one(&node, &saved))))
}

#[utoipa::path(get, path = "/v3/OS-FEDERATION/service_providers/{sp_id}", operation_id = "service_providers_get", tag = "federation",
    params(("sp_id" = String, Path, description = "The provider's id.")),
    responses((status = 200, description = "The provider.", body = s::ServiceProviderEnvelope), E::Read))]
pub async fn get(Call(node, ctx): Call, Path(sp_id): Path<String>) -> ApiResult<Json<Value>> {
    enforce("identity:get_service_provider", &ctx, &json!({}))?;
    Ok(Json(API.one(&node, &API.load(&node, &sp_id)?)))
}

#[utoipa::path(patch, path = "/v3/OS-FEDERATION/service_providers/{sp_id}", operation_id = "service_providers_update", tag = "federation",
    params(("sp_id" = String, Path, description = "The provider's id.")),
    request_body(content = s::ServiceProviderUpdateRequest, content_type = "application/json"),
    responses((status = 200, description = "The updated provider.", body = s::ServiceProviderEnvelope), E::Edit))]
pub async fn update(
    Call(node, ctx): Call,
    Path(sp_id): Path<String>,
    JsonBody(req): JsonBody<Sent<s::ServiceProviderUpdateRequest>>,
) -> ApiResult<Json<Value>> {
    let f = s::ServiceProviderUpdateRequest::checked(req)?;
    enforce("identity:update_service_provider", &ctx, &json!({}))?;
    let saved = API.update(&node, API.load(&node, &sp_id)?, f).await?;
    Ok(Json(API.one(&node, &saved)))
}

#[utoipa::path(delete, path = "/v3/OS-FEDERATION/service_providers/{sp_id}", operation_id = "service_providers_delete", tag = "federation",
    params(("sp_id" = String, Path, description = "The provider's id.")),
    responses((status = 204, description = "Deleted."), E::Remove))]
pub async fn delete(Call(node, ctx): Call, Path(sp_id): Path<String>) -> ApiResult<StatusCode> {
    enforce("identity:delete_service_provider", &ctx, &json!({}))?;
    API.delete(&node, &sp_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
