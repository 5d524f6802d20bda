//! `/v3/policies`: Keystone's policy blobs (opaque documents services may fetch; idnode's own
//! authorization does not read them), kept as document records.

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::schemas as s;
use crate::context::Core;
use crate::http::body::{Body, Sent};
use crate::http::docs::{body, DocApi};
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{new_id, Obj};
use crate::http::openapi::{errors as E, to_json};
use crate::http::JsonBody;
use crate::policy::enforce;
use crate::state::model::{Doc, DocKind};
use crate::state::Reader;
use crate::token::Call;

pub const API: DocApi =
    DocApi { kind: DocKind::Policy, member: "policy", collection: "policies", path: |id| format!("/v3/policies/{id}") };

/// `blob` and `type` as Keystone's schema has them: strings, `type` at most 255 characters.
fn check(b: &s::PolicyBody, create: bool) -> ApiResult<()> {
    for (key, field, max) in [("blob", &b.blob, usize::MAX), ("type", &b.policy_type, 255)] {
        match field {
            Sent::Absent if create => return Err(ApiError::bad_request(format!("'{key}' is a required property."))),
            Sent::Absent => {}
            Sent::Is(v) if v.chars().count() <= max => {}
            Sent::Is(_) => return Err(ApiError::bad_request(format!("Invalid input for field '{key}': is too long."))),
            Sent::Null | Sent::Wrong(_) => {
                return Err(ApiError::bad_request(format!("Invalid input for field '{key}': must be a string.")))
            }
        }
    }
    if !create && !b.blob.is_present() && !b.policy_type.is_present() && b.extra.is_empty() {
        return Err(ApiError::bad_request("Invalid input for field 'policy': must have at least 1 property."));
    }
    Ok(())
}

/// The policy as the API shows it.
fn show(node: &Core, doc: &Doc) -> s::Policy {
    let mut extra = body(doc);
    let (id, blob, policy_type) = (extra.remove("id"), extra.remove("blob"), extra.remove("type"));
    s::Policy { extra, id, blob, policy_type, links: API.links(node, &doc.id) }
}

pub(super) fn respond(node: &Core, doc: &Doc) -> Json<Value> {
    Json(to_json(&s::PolicyEnvelope { policy: show(node, doc) }))
}

/// The record's body: the policy as sent.
fn into_obj(b: s::PolicyBody) -> Obj {
    let mut o = b.extra;
    b.blob.put(&mut o, "blob");
    b.policy_type.put(&mut o, "type");
    o
}

#[utoipa::path(get, path = "/v3/policies", operation_id = "policies_list", tag = "catalog",
    params(("type" = Option<String>, Query, description = "Only policies of this type."), ("limit" = Option<u32>, Query, description = "At most this many."),
           ("marker" = Option<String>, Query, description = "Start after this id.")),
    responses((status = 200, description = "The policies.", body = s::PolicyList), E::List))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    enforce("identity:list_policies", &ctx, &json!({}))?;
    let docs = node.engine.read().docs(API.kind)?;
    Ok(Json(API.list_as(&node, docs, |d| show(&node, d), &q, &["type"], "/v3/policies")?))
}

#[utoipa::path(post, path = "/v3/policies", operation_id = "policies_create", tag = "catalog",
    request_body(content = s::PolicyRequest, content_type = "application/json"),
    responses((status = 201, description = "The created policy.", body = s::PolicyEnvelope), E::BadRequest, E::Unauthorized, E::Forbidden, E::PayloadTooLarge,
              E::Internal, E::Unavailable))]
pub async fn create(
    Call(node, ctx): Call,
    JsonBody(b): JsonBody<Body<s::PolicyRequest>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let b = b.object()?.policy.envelope("policy")?;
    enforce("identity:create_policy", &ctx, &json!({"policy": {}}))?;
    check(&b, true)?;
    let mut o = into_obj(b);
    o.remove("links");
    let doc = API.save(&node, API.doc(&new_id(), o), true, vec![]).await?;
    Ok((StatusCode::CREATED, respond(&node, &doc)))
}

#[utoipa::path(get, path = "/v3/policies/{policy_id}", operation_id = "policies_get", tag = "catalog",
    params(("policy_id" = String, Path, description = "The policy's id.")),
    responses((status = 200, description = "The policy.", body = s::PolicyEnvelope), E::Read))]
pub async fn get(Call(node, ctx): Call, Path(policy_id): Path<String>) -> ApiResult<Json<Value>> {
    enforce("identity:get_policy", &ctx, &json!({}))?;
    Ok(respond(&node, &API.load(&node, &policy_id)?))
}

#[utoipa::path(patch, path = "/v3/policies/{policy_id}", operation_id = "policies_update", tag = "catalog",
    params(("policy_id" = String, Path, description = "The policy's id.")),
    request_body(content = s::PolicyRequest, content_type = "application/json"),
    responses((status = 200, description = "The updated policy.", body = s::PolicyEnvelope), E::Edit))]
pub async fn update(
    Call(node, ctx): Call,
    Path(policy_id): Path<String>,
    JsonBody(b): JsonBody<Body<s::PolicyRequest>>,
) -> ApiResult<Json<Value>> {
    let b = b.object()?.policy.envelope("policy")?;
    enforce("identity:update_policy", &ctx, &json!({}))?;
    check(&b, false)?;
    let doc = API.update(&node, API.load(&node, &policy_id)?, into_obj(b)).await?;
    Ok(respond(&node, &doc))
}

#[utoipa::path(delete, path = "/v3/policies/{policy_id}", operation_id = "policies_delete", tag = "catalog",
    params(("policy_id" = String, Path, description = "The policy's id.")),
    responses((status = 204, description = "Deleted."), E::Remove))]
pub async fn delete(Call(node, ctx): Call, Path(policy_id): Path<String>) -> ApiResult<StatusCode> {
    enforce("identity:delete_policy", &ctx, &json!({}))?;
    API.delete(&node, &policy_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
