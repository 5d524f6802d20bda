//! `/v3/credentials`.

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::schemas as s;
use super::{credential_json, ec2_id, EC2};
use crate::context::Core;
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::JsonBody;
use crate::http::fields::*;
use crate::http::listing::found;
use crate::http::openapi::errors as E;
use crate::policy::{enforce, guard, Persona};
use crate::state::keys::ns;
use crate::state::model::Credential;
use crate::state::read::CredentialReads;
use crate::state::{Command, Reader};
use crate::token::Call;
use crate::token::ValidToken;

const KNOWN: &[&str] = &["id", "type", "blob", "user_id", "project_id"];

fn target(c: &Credential) -> Value {
    json!({"credential": {"id": c.id, "user_id": c.user_id, "project_id": c.project_id, "type": c.cred_type}})
}

fn respond(node: &Core, status: StatusCode, c: Credential) -> ApiResult<(StatusCode, Json<Value>)> {
    Ok((status, Json(json!({"credential": credential_json(&c, &node.cfg.public_base())}))))
}

/// Loads a credential after authorizing `action` on it. A missing credential is checked
/// against an empty target, so only callers who could see any credential learn it is absent
/// (Keystone's order); everyone else gets 403.
fn load_authorized(node: &Core, ctx: &ValidToken, action: &str, id: &str) -> ApiResult<Credential> {
    let found = node.engine.read().credential(id)?;
    enforce(action, ctx, &found.as_ref().map(target).unwrap_or_else(|| json!({})))?;
    found.ok_or_else(|| ApiError::not_found("credential", id))
}

#[utoipa::path(get, path = "/v3/credentials", operation_id = "credentials_list", tag = "credentials",
    params(("user_id" = Option<String>, Query, description = "Only credentials of this user (default for a caller without system reader: itself)."),
           ("type" = Option<String>, Query, description = "Only credentials of this type.")),
    responses((status = 200, description = "The credentials (with decrypted blobs) the caller may see.", body = s::CredentialList), E::List))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    let system = Persona { ctx: &ctx }.cloud_reader();
    let list_target = if system { json!({}) } else { json!({"credential": {"user_id": ctx.user.id}}) };
    enforce("identity:list_credentials", &ctx, &list_target)?;
    ctx.refuse_secret_read()?;
    let view = node.engine.snapshot();
    let owner = q.get("user_id").cloned().or_else(|| (!system).then(|| ctx.user.id.clone()));
    let creds: Vec<Credential> = match &owner {
        Some(u) => found(view.member_ids(ns::CREDENTIALS_OF_USER, u)?, |id| view.credential(id))?,
        None => view.credentials()?,
    };
    let base = node.cfg.public_base();
    let out: Vec<Value> = creds
        .iter()
        .filter(|c| q.get("type").is_none_or(|t| &c.cred_type == t))
        .filter(|c| enforce("identity:get_credential", &ctx, &target(c)).is_ok())
        .map(|c| credential_json(c, &base))
        .collect();
    Ok(Json(crate::http::pages::page("credentials", out, &base, "/v3/credentials", &q)?))
}

#[utoipa::path(post, path = "/v3/credentials", operation_id = "credentials_create", tag = "credentials",
    request_body(content = s::CredentialCreateRequest, content_type = "application/json"),
    responses((status = 201, description = "The created credential.", body = s::CredentialEnvelope), E::Write))]
pub async fn create(
    Call(node, ctx): Call,
    JsonBody(body): JsonBody<Body<s::CredentialCreateRequest>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    ctx.refuse_credential_creation()?;
    let b = body.object()?.credential.envelope("credential")?;
    let cred_type = b.cred_type.name("type", 255)?;
    let blob = s::blob(&b.blob)?;
    let project_id = b.fields.project_id.string("project_id", 64)?;
    let id = if cred_type == EC2 {
        if project_id.is_none() {
            return Err(ApiError::bad_request("'project_id' is a required property of an ec2 credential."));
        }
        ec2_id(&s::ec2_access(&blob)?)
    } else {
        new_id()
    };
    let user_id = b.fields.user_id.opt_name("user_id", 64)?;
    let c = Credential {
        id,
        // Defaults to the caller, like Keystone-NG; Keystone requires it.
        user_id: user_id.unwrap_or_else(|| ctx.user.id.clone()),
        project_id,
        cred_type,
        blob,
        extra: extra(&b.fields.extra, KNOWN, "{}"),
    };
    enforce("identity:create_credential", &ctx, &target(&c))?;
    guard::add_authenticator(&node.engine.read(), node.fga.as_deref(), &ctx, &c.user_id)?;
    respond(&node, StatusCode::CREATED, node.propose_as(Command::CreateCredential(c)).await?)
}

#[utoipa::path(get, path = "/v3/credentials/{id}", operation_id = "credentials_get", tag = "credentials",
    params(("id" = String, Path, description = "The credential's id.")),
    responses((status = 200, description = "The credential.", body = s::CredentialEnvelope), E::Read))]
pub async fn get(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    ctx.refuse_secret_read()?;
    let c = load_authorized(&node, &ctx, "identity:get_credential", &id)?;
    Ok(Json(json!({"credential": credential_json(&c, &node.cfg.public_base())})))
}

/// Accepts `type`, `blob`, `user_id`, `project_id` (Keystone) and extras. The result is
/// authorized again, so an owner cannot hand a credential to someone else. A signature
/// credential keeps its access key (its id is derived from it).
#[utoipa::path(patch, path = "/v3/credentials/{id}", operation_id = "credentials_update", tag = "credentials",
    params(("id" = String, Path, description = "The credential's id.")),
    request_body(content = s::CredentialUpdateRequest, content_type = "application/json"),
    responses((status = 200, description = "The updated credential.", body = s::CredentialEnvelope), E::Write))]
pub async fn update(
    Call(node, ctx): Call,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Body<s::CredentialUpdateRequest>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    ctx.refuse_credential_creation()?;
    let b = body.object()?.credential.envelope("credential")?;
    let mut c = load_authorized(&node, &ctx, "identity:update_credential", &id)?;
    let before = c.clone();
    if b.fields.extra.contains_key("id") && opt_str(&b.fields.extra, "id", 64)?.as_deref() != Some(id.as_str()) {
        return Err(ApiError::bad_request("Cannot change ID."));
    }
    if let Some(t) = b.cred_type.opt_name("type", 255)? {
        c.cred_type = t;
    }
    let old_blob = c.blob.clone();
    if b.blob.is_present() {
        c.blob = s::blob(&b.blob)?;
    }
    if let Some(u) = b.fields.user_id.opt_name("user_id", 64)? {
        c.user_id = u;
    }
    if let Some(p) = b.fields.project_id.nullable("project_id", 64)? {
        c.project_id = p;
    }
    if c.cred_type == EC2 {
        ec2_scope_unchanged(&old_blob, &c.blob)?;
    }
    c.extra = extra(&b.fields.extra, KNOWN, &c.extra);
    enforce("identity:update_credential", &ctx, &target(&c))?;
    // A new owner, secret or type is a new way to sign in as the owner; taking a credential
    // away from its owner rewrites theirs.
    if c.user_id != before.user_id || c.blob != before.blob || c.cred_type != before.cred_type {
        let view = node.engine.read();
        guard::add_authenticator(&view, node.fga.as_deref(), &ctx, &c.user_id)?;
        guard::add_authenticator(&view, node.fga.as_deref(), &ctx, &before.user_id)?;
    }
    respond(&node, StatusCode::OK, node.propose_as(Command::UpdateCredential(c)).await?)
}

/// Keystone lets an EC2 blob change (its id stays the hash of the first access key) but not
/// the delegation it is bound to.
fn ec2_scope_unchanged(old: &str, new: &str) -> ApiResult<()> {
    let parse = |b: &str| serde_json::from_str::<Value>(b).unwrap_or(Value::Null);
    let (old, new) = (parse(old), parse(new));
    for key in ["trust_id", "app_cred_id", "access_token_id", "access_id"] {
        if old.get(key) != new.get(key) {
            return Err(ApiError::bad_request(format!("{key} can not be updated for credential.")));
        }
    }
    Ok(())
}

#[utoipa::path(delete, path = "/v3/credentials/{id}", operation_id = "credentials_delete", tag = "credentials",
    params(("id" = String, Path, description = "The credential's id.")),
    responses((status = 204, description = "Deleted."), E::Change))]
pub async fn delete(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<StatusCode> {
    let c = load_authorized(&node, &ctx, "identity:delete_credential", &id)?;
    node.propose(Command::DeleteCredential { id: c.id }).await?;
    Ok(StatusCode::NO_CONTENT)
}
