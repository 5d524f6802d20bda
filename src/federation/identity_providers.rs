//! `/v3/OS-FEDERATION/identity_providers`: identity providers by client-chosen id. One
//! created without a domain gets a new domain of its own (in the same command), which
//! outlives it as in Keystone.

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::schemas as s;
use super::{bool_like, check_path_id};
use crate::clock::now_micros;
use crate::context::Core;
use crate::http::body::Sent;
use crate::http::docs::{body, DocApi};
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{JsonBody, OptionalJson};
use crate::http::fields::{new_id, Obj};
use crate::http::openapi::errors as E;
use crate::policy::enforce;
use crate::state::model::{Doc, DocKind, Project, Ref};
use crate::state::{Command, Reader};
use crate::token::Call;

pub const API: DocApi = DocApi {
    kind: DocKind::IdentityProvider,
    member: "identity_provider",
    collection: "identity_providers",
    path: |id| format!("/v3/OS-FEDERATION/identity_providers/{id}"),
};

fn remote_ids(o: &Obj) -> Vec<String> {
    o.get("remote_ids")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

/// A stored provider with its remote ids unique across providers.
fn doc(id: &str, o: Obj) -> crate::state::model::Doc {
    let unique = remote_ids(&o);
    let mut d = API.doc(id, o);
    d.unique = unique;
    d
}

/// Keystone's message for a taken remote id (it does not say which).
fn remote_id_conflict(e: ApiError) -> ApiError {
    if e.status == StatusCode::CONFLICT && e.message.contains("Duplicate entry:") {
        ApiError::new(
            StatusCode::CONFLICT,
            "Conflict occurred attempting to store identity_provider - Duplicate remote ID: None.",
        )
    } else {
        e
    }
}

/// A list item also links the provider's protocols.
fn list_item(node: &Core, d: &crate::state::model::Doc) -> Value {
    let mut v = API.render(node, d);
    if let Some(links) = v.get_mut("links").and_then(Value::as_object_mut) {
        let base = node.cfg.public_base();
        links.insert("protocols".into(), json!(format!("{base}{}/protocols", (API.path)(&d.id))));
    }
    v
}

#[utoipa::path(get, path = "/v3/OS-FEDERATION/identity_providers", operation_id = "identity_providers_list", tag = "federation",
    params(("id" = Option<String>, Query, description = "Only this provider."),
           ("enabled" = Option<bool>, Query, description = "Only enabled (or disabled) providers."),
           ("limit" = Option<u32>, Query, description = "At most this many."), ("marker" = Option<String>, Query, description = "Start after this id.")),
    responses((status = 200, description = "The identity providers.", body = s::IdentityProviderList), E::BadRequest, E::Unauthorized, E::Forbidden,
              E::Internal))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    enforce("identity:list_identity_providers", &ctx, &json!({}))?;
    let enabled = bool_like(&Sent::of(q.get("enabled").map(|e| json!(e)).as_ref()), "enabled")?;
    let items: Vec<Value> = node
        .engine
        .read()
        .docs(API.kind)?
        .iter()
        .filter(|d| q.get("id").is_none_or(|id| *id == d.id))
        .map(|d| list_item(&node, d))
        .filter(|v| enabled.is_none_or(|e| v.get("enabled").and_then(Value::as_bool) == Some(e)))
        .collect();
    let path = "/v3/OS-FEDERATION/identity_providers";
    Ok(Json(crate::http::pages::page(API.collection, items, &node.cfg.public_base(), path, &q)?))
}

#[utoipa::path(put, path = "/v3/OS-FEDERATION/identity_providers/{idp_id}", operation_id = "identity_providers_create", tag = "federation",
    params(("idp_id" = String, Path, description = "The new provider's id.")),
    request_body(content = s::IdentityProviderRequest, content_type = "application/json"),
    responses((status = 201, description = "The created provider; without `domain_id` a new domain was created for it.", body = s::IdentityProviderEnvelope),
              E::Change))]
pub async fn create(
    Call(node, ctx): Call,
    Path(idp_id): Path<String>,
    OptionalJson(req): OptionalJson<Sent<s::IdentityProviderRequest>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let (mut f, domain_id) = s::IdentityProviderRequest::checked(req.unwrap_or_default())?;
    enforce("identity:create_identity_provider", &ctx, &json!({}))?;
    check_path_id(&idp_id, "identity provider")?;
    f.entry("enabled").or_insert(json!(false));
    f.entry("description").or_insert(Value::Null);
    f.entry("remote_ids").or_insert(json!([]));
    f.entry("authorization_ttl").or_insert(Value::Null);
    let (domain_id, new_domain) = match domain_id {
        Some(d) => (d, None),
        None => {
            let id = new_id();
            let domain = Project {
                id: id.clone(),
                name: id.clone(),
                domain_id: id.clone(),
                description: Some(format!("Auto generated federated domain for Identity Provider: {idp_id}")),
                enabled: true,
                is_domain: true,
                parent_id: None,
                tags: Vec::new(),
                extra: "{}".into(),
                options: "{}".into(),
                created_at: now_micros(),
            };
            (id, Some(domain))
        }
    };
    f.insert("domain_id".into(), json!(domain_id));
    let put = Command::PutDoc { doc: doc(&idp_id, f), create: true, requires: vec![Ref::Domain(domain_id)] };
    let cmd = match new_domain {
        Some(d) => Command::All(vec![Command::CreateProject(d), put]),
        None => put,
    };
    let saved: Doc = node.propose_as(cmd).await.map_err(remote_id_conflict)?;
    Ok((StatusCode::CREATED, Json(API.one(&node, &saved))))
}

#[utoipa::path(get, path = "/v3/OS-FEDERATION/identity_providers/{idp_id}", operation_id = "identity_providers_get", tag = "federation",
    params(("idp_id" = String, Path, description = "The provider's id.")),
    responses((status = 200, description = "The provider.", body = s::IdentityProviderEnvelope), E::Read))]
pub async fn get(Call(node, ctx): Call, Path(idp_id): Path<String>) -> ApiResult<Json<Value>> {
    enforce("identity:get_identity_provider", &ctx, &json!({}))?;
    let mut d = API.load(&node, &idp_id)?;
    // Keystone lists remote ids in order when reading them back.
    let mut b = body(&d);
    let mut ids = remote_ids(&b);
    ids.sort();
    b.insert("remote_ids".into(), json!(ids));
    d.body = Value::Object(b).to_string();
    Ok(Json(API.one(&node, &d)))
}

#[utoipa::path(patch, path = "/v3/OS-FEDERATION/identity_providers/{idp_id}", operation_id = "identity_providers_update", tag = "federation",
    params(("idp_id" = String, Path, description = "The provider's id.")),
    request_body(content = s::IdentityProviderUpdateRequest, content_type = "application/json"),
    responses((status = 200, description = "The updated provider.", body = s::IdentityProviderEnvelope), E::Change))]
pub async fn update(
    Call(node, ctx): Call,
    Path(idp_id): Path<String>,
    JsonBody(req): JsonBody<Sent<s::IdentityProviderUpdateRequest>>,
) -> ApiResult<Json<Value>> {
    let f = s::IdentityProviderUpdateRequest::checked(req)?;
    enforce("identity:update_identity_provider", &ctx, &json!({}))?;
    let old = API.load(&node, &idp_id)?;
    let mut merged = body(&old);
    merged.extend(f);
    let saved = API.save(&node, doc(&idp_id, merged), false, vec![]).await.map_err(remote_id_conflict)?;
    Ok(Json(API.one(&node, &saved)))
}

#[utoipa::path(delete, path = "/v3/OS-FEDERATION/identity_providers/{idp_id}", operation_id = "identity_providers_delete", tag = "federation",
    params(("idp_id" = String, Path, description = "The provider's id.")),
    responses((status = 204, description = "Deleted with its protocols; its domain stays."), E::Remove))]
pub async fn delete(Call(node, ctx): Call, Path(idp_id): Path<String>) -> ApiResult<StatusCode> {
    enforce("identity:delete_identity_provider", &ctx, &json!({}))?;
    API.delete(&node, &idp_id).await?;
    Ok(StatusCode::NO_CONTENT)
}
