//! `/v3/OS-OAUTH1/consumers`: a consumer's secret is generated on create, shown that once,
//! and kept sealed for checking the consumer's signatures.

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::schemas as s;
use crate::context::Core;
use crate::http::body::Body;
use crate::http::docs::DocApi;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::fields::new_id;
use crate::http::openapi::errors as E;
use crate::policy::enforce;
use crate::state::model::DocKind;
use crate::state::Reader;
use crate::token::Call;

pub const API: DocApi = DocApi {
    kind: DocKind::OAuthConsumer,
    member: "consumer",
    collection: "consumers",
    path: |id| format!("/v3/OS-OAUTH1/consumers/{id}"),
};

fn load(node: &Core, id: &str) -> ApiResult<crate::state::model::Doc> {
    node.engine.read().doc(API.kind, id)?.ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, "Consumer not found"))
}

#[utoipa::path(get, path = "/v3/OS-OAUTH1/consumers", operation_id = "consumers_list", tag = "oauth1",
    params(("limit" = Option<u32>, Query, description = "At most this many."), ("marker" = Option<String>, Query, description = "Start after this id.")),
    responses((status = 200, description = "The consumers (without secrets).", body = s::ConsumerList), E::List))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    enforce("identity:list_consumers", &ctx, &json!({}))?;
    let docs = node.engine.read().docs(API.kind)?;
    Ok(Json(API.list(&node, docs, &q, &[], "/v3/OS-OAUTH1/consumers")?))
}

#[utoipa::path(post, path = "/v3/OS-OAUTH1/consumers", operation_id = "consumers_create", tag = "oauth1",
    request_body(content = s::ConsumerRequest, content_type = "application/json"),
    responses((status = 201, description = "The consumer with its secret (shown only here).", body = s::ConsumerCreated), E::BadRequest, E::Unauthorized,
              E::Forbidden, E::Internal, E::Unavailable))]
pub async fn create(
    Call(node, ctx): Call,
    JsonBody(body): JsonBody<Body<s::ConsumerRequest>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let b = body.object()?.consumer.envelope("consumer")?;
    enforce("identity:create_consumer", &ctx, &json!({}))?;
    ctx.refuse_confined("create OAuth1 consumers")?;
    if b.secret.is_present() {
        return Err(ApiError::bad_request("Invalid input for field/attribute secret: the server chooses secrets."));
    }
    let mut o = b.stored()?;
    o.entry("description").or_insert(Value::Null);
    let secret = new_id();
    let mut doc = API.doc(&new_id(), o);
    doc.private = json!({"secret": secret}).to_string();
    let saved = API.save(&node, doc, true, vec![]).await?;
    let mut out = API.render(&node, &saved);
    if let Some(obj) = out.as_object_mut() {
        obj.insert("secret".into(), json!(secret));
    }
    Ok((StatusCode::CREATED, Json(json!({"consumer": out}))))
}

#[utoipa::path(get, path = "/v3/OS-OAUTH1/consumers/{consumer_id}", operation_id = "consumers_get", tag = "oauth1",
    params(("consumer_id" = String, Path, description = "The consumer's id.")),
    responses((status = 200, description = "The consumer.", body = s::ConsumerEnvelope), E::Read))]
pub async fn get(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    enforce("identity:get_consumer", &ctx, &json!({}))?;
    Ok(Json(API.one(&node, &load(&node, &id)?)))
}

#[utoipa::path(patch, path = "/v3/OS-OAUTH1/consumers/{consumer_id}", operation_id = "consumers_update", tag = "oauth1",
    params(("consumer_id" = String, Path, description = "The consumer's id.")),
    request_body(content = s::ConsumerUpdateRequest, content_type = "application/json"),
    responses((status = 200, description = "The updated consumer.", body = s::ConsumerEnvelope), E::Edit))]
pub async fn update(
    Call(node, ctx): Call,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Body<s::ConsumerUpdateRequest>>,
) -> ApiResult<Json<Value>> {
    let b = body.object()?.consumer.envelope("consumer")?;
    enforce("identity:update_consumer", &ctx, &json!({}))?;
    b.check_update()?;
    if b.extra.get("id").is_some_and(|v| v.as_str() != Some(id.as_str())) {
        return Err(ApiError::bad_request("Cannot change ID"));
    }
    let f = b.stored()?;
    let saved = API.update(&node, load(&node, &id)?, f).await?;
    Ok(Json(API.one(&node, &saved)))
}

#[utoipa::path(delete, path = "/v3/OS-OAUTH1/consumers/{consumer_id}", operation_id = "consumers_delete", tag = "oauth1",
    params(("consumer_id" = String, Path, description = "The consumer's id.")),
    responses((status = 204, description = "Deleted."), E::Remove))]
pub async fn delete(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<StatusCode> {
    enforce("identity:delete_consumer", &ctx, &json!({}))?;
    load(&node, &id)?;
    API.delete(&node, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
