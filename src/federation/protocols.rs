//! `/v3/OS-FEDERATION/identity_providers/{idp_id}/protocols`: how a provider's assertions
//! arrive (saml2, openid, ...) and which mapping reads them. Stored with id
//! `{idp_id}/{protocol_id}`, so deleting the provider deletes them.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::check_path_id;
use super::schemas as s;
use crate::context::Core;
use crate::http::body::Sent;
use crate::http::docs::{body, DocApi};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{Below, JsonBody};
use crate::http::fields::Obj;
use crate::http::openapi::errors as E;
use crate::policy::enforce;
use crate::state::model::{DocKind, Ref};
use crate::state::Reader;
use crate::token::Call;

pub const API: DocApi = DocApi {
    kind: DocKind::FederationProtocol,
    member: "protocol",
    collection: "protocols",
    path: |id| format!("/v3/OS-FEDERATION/identity_providers/{}", id.replacen('/', "/protocols/", 1)),
};

/// Keystone checks the mapping before the provider, and answers 400 for an unknown one.
fn check_mapping(node: &Core, mapping_id: &str) -> ApiResult<()> {
    match node.engine.read().doc(DocKind::Mapping, mapping_id)? {
        Some(_) => Ok(()),
        None => Err(ApiError::bad_request(format!("Invalid mapping id: {mapping_id}"))),
    }
}

fn load_idp(node: &Core, idp_id: &str) -> ApiResult<()> {
    super::identity_providers::API.load(node, idp_id).map(|_| ())
}

fn load(node: &Core, idp_id: &str, protocol_id: &str) -> ApiResult<crate::state::model::Doc> {
    node.engine.read().doc(API.kind, &format!("{idp_id}/{protocol_id}"))?.ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("Could not find federated protocol {protocol_id} for Identity Provider: {idp_id}."),
        )
    })
}

fn with_links(node: &Core, d: &crate::state::model::Doc, idp_id: &str) -> Value {
    let mut v = API.render(node, d);
    if let Some(links) = v.get_mut("links").and_then(Value::as_object_mut) {
        let idp = format!("{}/v3/OS-FEDERATION/identity_providers/{idp_id}", node.cfg.public_base());
        links.insert("identity_provider".into(), json!(idp));
    }
    v
}

async fn save(
    node: &Core,
    idp_id: &str,
    protocol_id: &str,
    f: (String, Option<String>),
    create: bool,
) -> ApiResult<Value> {
    let mut o = Obj::new();
    o.insert("id".into(), json!(protocol_id));
    o.insert("idp_id".into(), json!(idp_id));
    o.insert("mapping_id".into(), json!(f.0));
    o.insert("remote_id_attribute".into(), json!(f.1));
    let requires = vec![Ref::Doc(DocKind::IdentityProvider, idp_id.to_string()), Ref::Doc(DocKind::Mapping, f.0)];
    let saved = API.save(node, API.record(&format!("{idp_id}/{protocol_id}"), o), create, requires).await?;
    Ok(json!({"protocol": with_links(node, &saved, idp_id)}))
}

#[utoipa::path(get, path = "/v3/OS-FEDERATION/identity_providers/{idp_id}/protocols", operation_id = "protocols_list", tag = "federation",
    params(("idp_id" = String, Path, description = "The provider's id."), ("limit" = Option<u32>, Query, description = "At most this many."),
           ("marker" = Option<String>, Query, description = "Start after this id.")),
    responses((status = 200, description = "The provider's protocols (none for an unknown provider).", body = s::ProtocolList), E::List))]
pub async fn list(Call(node, ctx): Call, Below(idp_id, q): Below) -> ApiResult<Json<Value>> {
    enforce("identity:list_protocols", &ctx, &json!({}))?;
    let items =
        node.engine.read().child_docs(API.kind, &idp_id)?.iter().map(|d| with_links(&node, d, &idp_id)).collect();
    let path = format!("/v3/OS-FEDERATION/identity_providers/{idp_id}/protocols");
    Ok(Json(crate::http::pages::page(API.collection, items, &node.cfg.public_base(), &path, &q)?))
}

#[utoipa::path(put, path = "/v3/OS-FEDERATION/identity_providers/{idp_id}/protocols/{protocol_id}", operation_id = "protocols_create", tag = "federation",
    params(("idp_id" = String, Path, description = "The provider's id."), ("protocol_id" = String, Path, description = "The protocol's id.")),
    request_body(content = s::ProtocolRequest, content_type = "application/json"),
    responses((status = 201, description = "The created protocol.", body = s::ProtocolEnvelope), E::Change))]
pub async fn create(
    Call(node, ctx): Call,
    Path((idp_id, protocol_id)): Path<(String, String)>,
    JsonBody(req): JsonBody<Sent<s::ProtocolRequest>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let (mapping_id, remote) = s::ProtocolRequest::checked(req)?;
    let f = (mapping_id, remote.flatten());
    enforce("identity:create_protocol", &ctx, &json!({}))?;
    check_path_id(&protocol_id, "protocol")?;
    check_mapping(&node, &f.0)?;
    load_idp(&node, &idp_id)?;
    let duplicate = format!(
        "Conflict occurred attempting to store federation_protocol - Duplicate entry found with ID {protocol_id}."
    );
    let out = save(&node, &idp_id, &protocol_id, f, true).await.map_err(|e| e.duplicate(duplicate))?;
    Ok((StatusCode::CREATED, Json(out)))
}

#[utoipa::path(get, path = "/v3/OS-FEDERATION/identity_providers/{idp_id}/protocols/{protocol_id}", operation_id = "protocols_get", tag = "federation",
    params(("idp_id" = String, Path, description = "The provider's id."), ("protocol_id" = String, Path, description = "The protocol's id.")),
    responses((status = 200, description = "The protocol.", body = s::ProtocolEnvelope), E::Read))]
pub async fn get(Call(node, ctx): Call, Path((idp_id, protocol_id)): Path<(String, String)>) -> ApiResult<Json<Value>> {
    enforce("identity:get_protocol", &ctx, &json!({}))?;
    load_idp(&node, &idp_id)?;
    let d = load(&node, &idp_id, &protocol_id)?;
    Ok(Json(json!({"protocol": with_links(&node, &d, &idp_id)})))
}

#[utoipa::path(patch, path = "/v3/OS-FEDERATION/identity_providers/{idp_id}/protocols/{protocol_id}", operation_id = "protocols_update", tag = "federation",
    params(("idp_id" = String, Path, description = "The provider's id."), ("protocol_id" = String, Path, description = "The protocol's id.")),
    request_body(content = s::ProtocolUpdateRequest, content_type = "application/json"),
    responses((status = 200, description = "The updated protocol.", body = s::ProtocolEnvelope), E::Edit))]
pub async fn update(
    Call(node, ctx): Call,
    Path((idp_id, protocol_id)): Path<(String, String)>,
    JsonBody(req): JsonBody<Sent<s::ProtocolUpdateRequest>>,
) -> ApiResult<Json<Value>> {
    let (mapping_id, remote_id_attribute) = s::ProtocolUpdateRequest::checked(req)?;
    enforce("identity:update_protocol", &ctx, &json!({}))?;
    check_mapping(&node, &mapping_id)?;
    load_idp(&node, &idp_id)?;
    let old = load(&node, &idp_id, &protocol_id)?;
    // An absent remote_id_attribute keeps the stored one.
    let remote = match remote_id_attribute {
        Some(remote) => remote,
        None => body(&old).get("remote_id_attribute").and_then(Value::as_str).map(str::to_string),
    };
    Ok(Json(save(&node, &idp_id, &protocol_id, (mapping_id, remote), false).await?))
}

#[utoipa::path(delete, path = "/v3/OS-FEDERATION/identity_providers/{idp_id}/protocols/{protocol_id}", operation_id = "protocols_delete", tag = "federation",
    params(("idp_id" = String, Path, description = "The provider's id."), ("protocol_id" = String, Path, description = "The protocol's id.")),
    responses((status = 204, description = "Deleted."), E::Remove))]
pub async fn delete(
    Call(node, ctx): Call,
    Path((idp_id, protocol_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    enforce("identity:delete_protocol", &ctx, &json!({}))?;
    load_idp(&node, &idp_id)?;
    load(&node, &idp_id, &protocol_id)?;
    API.delete(&node, &format!("{idp_id}/{protocol_id}")).await?;
    Ok(StatusCode::NO_CONTENT)
}
