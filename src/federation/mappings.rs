//! `/v3/OS-FEDERATION/mappings`: rules turning a provider's assertion into a local user and
//! groups, stored as given (after the schema check) with their `schema_version`.

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::schemas as s;
use super::{check_path_id, mapping_rules};
use crate::http::body::{Body, Sent};
use crate::http::docs::{body, DocApi};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::OptionalJson;
use crate::http::fields::Obj;
use crate::http::openapi::errors as E;
use crate::policy::enforce;
use crate::state::model::DocKind;
use crate::state::Reader;
use crate::token::Call;

pub const API: DocApi = DocApi {
    kind: DocKind::Mapping,
    member: "mapping",
    collection: "mappings",
    path: |id| format!("/v3/OS-FEDERATION/mappings/{id}"),
};

/// The version a body asks for, Keystone's default (1.0) when it names none.
fn version(sent: &Sent<String>, stored: Option<&str>) -> ApiResult<String> {
    match sent {
        Sent::Absent | Sent::Null => Ok(stored.unwrap_or("1.0").to_string()),
        Sent::Is(v) if v.is_empty() => Ok(stored.unwrap_or("1.0").to_string()),
        Sent::Is(v) => Ok(v.clone()),
        Sent::Wrong(v) => Err(ApiError::bad_request(format!("{v} is not of type 'string'\n"))),
    }
}

/// `rules` and `schema_version` of a body (anything else is dropped, as Keystone does).
fn checked(b: Option<Body<s::MappingRequest>>, stored: Option<&Obj>) -> ApiResult<Obj> {
    let m = s::MappingRequest::mapping(b)?;
    let version = version(&m.schema_version, stored.and_then(|s| s.get("schema_version")).and_then(Value::as_str))?;
    let rules = m.rules.value().or_else(|| stored.and_then(|s| s.get("rules")).cloned());
    mapping_rules::check(rules.as_ref(), &version)?;
    let mut out = Obj::new();
    out.insert("rules".into(), rules.unwrap_or(Value::Null));
    out.insert("schema_version".into(), json!(version));
    Ok(out)
}

#[utoipa::path(get, path = "/v3/OS-FEDERATION/mappings", operation_id = "mappings_list", tag = "federation",
    params(("limit" = Option<u32>, Query, description = "At most this many."), ("marker" = Option<String>, Query, description = "Start after this id.")),
    responses((status = 200, description = "The mappings.", body = s::MappingList), E::List))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    enforce("identity:list_mappings", &ctx, &json!({}))?;
    let docs = node.engine.read().docs(API.kind)?;
    Ok(Json(API.list(&node, docs, &q, &[], "/v3/OS-FEDERATION/mappings")?))
}

#[utoipa::path(put, path = "/v3/OS-FEDERATION/mappings/{mapping_id}", operation_id = "mappings_create", tag = "federation",
    params(("mapping_id" = String, Path, description = "The new mapping's id.")),
    request_body(content = s::MappingRequest, content_type = "application/json"),
    responses((status = 201, description = "The created mapping.", body = s::MappingEnvelope), E::BadRequest, E::Unauthorized, E::Forbidden, E::Conflict,
              E::Internal, E::Unavailable))]
pub async fn create(
    Call(node, ctx): Call,
    Path(mapping_id): Path<String>,
    OptionalJson(b): OptionalJson<Body<s::MappingRequest>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let o = checked(b, None)?;
    enforce("identity:create_mapping", &ctx, &json!({}))?;
    check_path_id(&mapping_id, "mapping")?;
    let duplicate = "Conflict occurred attempting to store mapping - Duplicate entry.";
    let saved = API.save(&node, API.doc(&mapping_id, o), true, vec![]).await.map_err(|e| e.duplicate(duplicate))?;
    Ok((StatusCode::CREATED, Json(API.one(&node, &saved))))
}

#[utoipa::path(get, path = "/v3/OS-FEDERATION/mappings/{mapping_id}", operation_id = "mappings_get", tag = "federation",
    params(("mapping_id" = String, Path, description = "The mapping's id.")),
    responses((status = 200, description = "The mapping.", body = s::MappingEnvelope), E::Read))]
pub async fn get(Call(node, ctx): Call, Path(mapping_id): Path<String>) -> ApiResult<Json<Value>> {
    enforce("identity:get_mapping", &ctx, &json!({}))?;
    Ok(Json(API.one(&node, &API.load(&node, &mapping_id)?)))
}

#[utoipa::path(patch, path = "/v3/OS-FEDERATION/mappings/{mapping_id}", operation_id = "mappings_update", tag = "federation",
    params(("mapping_id" = String, Path, description = "The mapping's id.")),
    request_body(content = s::MappingRequest, content_type = "application/json"),
    responses((status = 200, description = "The updated mapping.", body = s::MappingEnvelope), E::Edit))]
pub async fn update(
    Call(node, ctx): Call,
    Path(mapping_id): Path<String>,
    OptionalJson(b): OptionalJson<Body<s::MappingRequest>>,
) -> ApiResult<Json<Value>> {
    let stored = node.engine.read().doc(API.kind, &mapping_id)?.map(|d| body(&d));
    let o = checked(b, stored.as_ref())?;
    enforce("identity:update_mapping", &ctx, &json!({}))?;
    API.load(&node, &mapping_id)?;
    let saved = API.save(&node, API.doc(&mapping_id, o), false, vec![]).await?;
    Ok(Json(API.one(&node, &saved)))
}

#[utoipa::path(delete, path = "/v3/OS-FEDERATION/mappings/{mapping_id}", operation_id = "mappings_delete", tag = "federation",
    params(("mapping_id" = String, Path, description = "The mapping's id.")),
    responses((status = 204, description = "Deleted (protocols naming it keep the id)."), E::Remove))]
pub async fn delete(Call(node, ctx): Call, Path(mapping_id): Path<String>) -> ApiResult<StatusCode> {
    enforce("identity:delete_mapping", &ctx, &json!({}))?;
    API.delete(&node, &mapping_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
