//! `/v4/api-keys` (spec "API keys (v4)", api-shapes §8.2). Every operation names the key's
//! domain (`domain_id` query, or body for create and simulate) and is authorized against it:
//! policy `identity/api_key/*`, an admin or a manager of that domain. A key of another domain
//! is not found (404), whatever its id.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::schemas::{
    ApiKeyCreated, ApiKeyList, ApiKeyOne, ApiKeyView, CreateEnvelope, SimulateAnswer, SimulateBody, UpdateEnvelope,
};
use super::{secret, simulate};
use crate::context::Core;
use crate::http::client_ip::Cidr;
use crate::http::error::{ApiError, ApiResult};
use crate::http::openapi::errors as E;
use crate::http::pages::page_by;
use crate::http::JsonBody;
use crate::mapped_auth::MappedAuth;
use crate::policy::enforce;
use crate::providers::registry::handle;
use crate::state::api_keys::{ApiKey, ApiKeyCommand};
use crate::state::read::ApiKeyReads;
use crate::token::render::iso_seconds;
use crate::token::Call;
use crate::token::Caller;
use crate::token::{Tokens, ValidToken};

const MAX_DESCRIPTION: usize = 255;
const MAX_ALLOWED_IPS: usize = 64;

fn bad(field: &str, why: &str) -> ApiError {
    ApiError::bad_request(format!("Invalid input for field '{field}': {why}"))
}

fn authorize(action: &str, ctx: &ValidToken, domain_id: &str) -> ApiResult<()> {
    enforce(&format!("identity/api_key/{action}"), ctx, &json!({"api_key": {"domain_id": domain_id}}))
}

fn domain_query(q: &HashMap<String, String>) -> ApiResult<String> {
    q.get("domain_id")
        .filter(|d| !d.is_empty())
        .cloned()
        .ok_or_else(|| bad("domain_id", "the query parameter is required."))
}

pub fn view(k: &ApiKey) -> ApiKeyView {
    ApiKeyView {
        client_id: k.client_id.clone(),
        domain_id: k.domain_id.clone(),
        provider_id: k.provider_id.clone(),
        enabled: k.enabled,
        created_at: iso_seconds(k.created_at),
        expires_at: iso_seconds(k.expires_at),
        allowed_ips: k.allowed_ips.clone(),
        description: k.description.clone(),
        last_used_at: k.last_used_at.map(iso_seconds),
        revoked_at: k.revoked_at.map(iso_seconds),
        revoked_by: k.revoked_by.clone(),
    }
}

fn one(k: &ApiKey) -> Json<ApiKeyOne> {
    Json(ApiKeyOne { api_key: view(k) })
}

/// The key of `domain_id` (404 for an unknown one or one of another domain).
/// The key a request names by path, in the domain its query names, once policy allows
/// `action` on that domain: the domain and the key.
fn named(
    node: &Core,
    ctx: &ValidToken,
    action: &str,
    client_id: &str,
    q: &HashMap<String, String>,
) -> ApiResult<(String, ApiKey)> {
    let domain = domain_query(q)?;
    authorize(action, ctx, &domain)?;
    let key = load(node, client_id, &domain)?;
    Ok((domain, key))
}

fn load(node: &Core, client_id: &str, domain_id: &str) -> ApiResult<ApiKey> {
    node.engine
        .read()
        .api_key(client_id)?
        .filter(|k| k.domain_id == domain_id)
        .ok_or_else(|| ApiError::not_found("api_key", client_id))
}

fn allowed_ips(v: Option<Vec<String>>) -> ApiResult<Option<Vec<String>>> {
    let Some(list) = v else { return Ok(None) };
    if list.len() > MAX_ALLOWED_IPS {
        return Err(bad("allowed_ips", &format!("at most {MAX_ALLOWED_IPS} blocks.")));
    }
    for c in &list {
        c.parse::<Cidr>()
            .map_err(|e| bad("allowed_ips", &format!("{c:?} is not an IP address or CIDR block ({e}).")))?;
    }
    Ok(Some(list))
}

fn description(v: Option<String>) -> ApiResult<Option<String>> {
    match v {
        Some(d) if d.chars().count() > MAX_DESCRIPTION => {
            Err(bad("description", &format!("at most {MAX_DESCRIPTION} characters.")))
        }
        other => Ok(other),
    }
}

async fn write(node: &Core, cmd: ApiKeyCommand) -> ApiResult<ApiKey> {
    let (index, key) = node.propose_at_as(cmd).await?;
    // A disabled or revoked key is refused everywhere once this answers.
    node.wait_cluster_applied(index).await;
    Ok(key)
}

#[utoipa::path(get, path = "/v4/api-keys", operation_id = "v4_api_keys_list", tag = "api_keys",
    params(("domain_id" = String, Query, description = "The domain whose keys to list (required)."),
           ("enabled" = Option<bool>, Query, description = "Only enabled (true) or disabled (false) keys."),
           ("provider_id" = Option<String>, Query, description = "Only the keys of this provider."),
           ("limit" = Option<u32>, Query, description = "At most this many."), ("marker" = Option<String>, Query, description = "Start after this client_id.")),
    responses((status = 200, description = "The domain's keys, in client_id order.", body = ApiKeyList), E::BadRequest, E::Unauthorized, E::Forbidden,
              E::Internal))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    let domain = domain_query(&q)?;
    authorize("list", &ctx, &domain)?;
    let enabled = match q.get("enabled").map(|v| v.to_lowercase()) {
        None => None,
        Some(v) if ["true", "1", "yes", "on"].contains(&v.as_str()) => Some(true),
        Some(v) if ["false", "0", "no", "off"].contains(&v.as_str()) => Some(false),
        Some(_) => return Err(bad("enabled", "a boolean.")),
    };
    let all: Vec<ApiKey> = node.engine.read().api_keys()?;
    let items = all
        .iter()
        .filter(|k| k.domain_id == domain)
        .filter(|k| enabled.is_none_or(|e| k.enabled == e))
        .filter(|k| q.get("provider_id").is_none_or(|p| *p == k.provider_id))
        .map(|k| (k.client_id.clone(), json!(view(k))))
        .collect();
    Ok(Json(page_by("api_keys", items, &node.cfg.public_base(), "/v4/api-keys", &q)?))
}

#[utoipa::path(post, path = "/v4/api-keys", operation_id = "v4_api_keys_create", tag = "api_keys",
    request_body(content = CreateEnvelope, content_type = "application/json"),
    responses((status = 201, description = "The key and its bearer token (shown only here).", body = ApiKeyCreated), E::Change))]
pub async fn create(
    Call(node, ctx): Call,
    JsonBody(b): JsonBody<CreateEnvelope>,
) -> ApiResult<(StatusCode, Json<ApiKeyCreated>)> {
    let b = b.api_key;
    authorize("create", &ctx, &b.domain_id)?;
    ctx.refuse_confined("create API keys")?;
    let provider_id = handle(b.provider_id)?;
    let now = crate::clock::now_secs();
    let expires_at = chrono::DateTime::parse_from_rfc3339(&b.expires_at)
        .map_err(|_| bad("expires_at", "an RFC 3339 time, e.g. 2027-01-31T00:00:00Z."))?
        .timestamp();
    if expires_at <= now {
        return Err(bad("expires_at", "must be in the future."));
    }
    let secret = secret::new_secret();
    let key = ApiKey {
        client_id: uuid::Uuid::new_v4().to_string(),
        domain_id: b.domain_id,
        provider_id,
        enabled: true,
        created_at: now,
        expires_at,
        allowed_ips: allowed_ips(b.allowed_ips)?,
        description: description(b.description)?,
        last_used_at: None,
        revoked_at: None,
        revoked_by: None,
        secret_hash: secret::hash(&node, &secret)?,
    };
    let key = write(&node, ApiKeyCommand::Create(Box::new(key))).await?;
    Ok((StatusCode::CREATED, Json(ApiKeyCreated { api_key: view(&key), token: secret::bearer(&secret) })))
}

#[utoipa::path(get, path = "/v4/api-keys/{client_id}", operation_id = "v4_api_keys_get", tag = "api_keys",
    params(("client_id" = String, Path, description = "The key."), ("domain_id" = String, Query, description = "The key's domain (required).")),
    responses((status = 200, description = "The key.", body = ApiKeyOne), E::BadRequest, E::Unauthorized, E::Forbidden, E::NotFound, E::Internal))]
pub async fn get(
    Call(node, ctx): Call,
    Path(client_id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<ApiKeyOne>> {
    Ok(one(&named(&node, &ctx, "show", &client_id, &q)?.1))
}

#[utoipa::path(put, path = "/v4/api-keys/{client_id}", operation_id = "v4_api_keys_update", tag = "api_keys",
    params(("client_id" = String, Path, description = "The key."), ("domain_id" = String, Query, description = "The key's domain (required).")),
    request_body(content = UpdateEnvelope, content_type = "application/json"),
    responses((status = 200, description = "The key as changed.", body = ApiKeyOne),
              (status = 409, description = "Re-enabling a revoked key.", body = crate::http::openapi::ErrorBody), E::Edit))]
pub async fn update(
    Call(node, ctx): Call,
    Path(client_id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    JsonBody(b): JsonBody<UpdateEnvelope>,
) -> ApiResult<Json<ApiKeyOne>> {
    let (domain, _) = named(&node, &ctx, "update", &client_id, &q)?;
    let b = b.api_key;
    let cmd = ApiKeyCommand::Update {
        client_id,
        domain_id: domain,
        allowed_ips: b.allowed_ips.map(allowed_ips).transpose()?,
        description: b.description.map(description).transpose()?,
        enabled: b.enabled,
    };
    Ok(one(&write(&node, cmd).await?))
}

#[utoipa::path(post, path = "/v4/api-keys/{client_id}/revoke", operation_id = "v4_api_keys_revoke", tag = "api_keys",
    params(("client_id" = String, Path, description = "The key."), ("domain_id" = String, Query, description = "The key's domain (required).")),
    responses((status = 200, description = "The revoked key: disabled, with revoked_at and revoked_by; refused everywhere once this answers.", body = ApiKeyOne),
              E::Edit))]
pub async fn revoke(
    Call(node, ctx): Call,
    Path(client_id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<ApiKeyOne>> {
    let (domain, _) = named(&node, &ctx, "revoke", &client_id, &q)?;
    let cmd =
        ApiKeyCommand::Revoke { client_id, domain_id: domain, by: ctx.user.id.clone(), at: crate::clock::now_secs() };
    Ok(one(&write(&node, cmd).await?))
}

#[utoipa::path(post, path = "/v4/api-keys/simulate-access", operation_id = "v4_api_keys_simulate", tag = "api_keys",
    request_body(content = SimulateBody, content_type = "application/json"),
    responses((status = 200, description = "What the key would be granted (its secret is not needed).", body = SimulateAnswer), E::BadRequest, E::Unauthorized,
              E::Forbidden, E::NotFound, E::Internal))]
pub async fn simulate_access(
    State(node): State<Arc<Tokens>>,
    State(mapped): State<Arc<MappedAuth>>,
    Caller(ctx): Caller,
    JsonBody(b): JsonBody<SimulateBody>,
) -> ApiResult<Json<Value>> {
    // The mapping engine's regex cache, which the mapped logins keep.
    authorize("simulate", &ctx, &b.domain_id)?;
    let key = load(&node, &b.client_id, &b.domain_id)?;
    Ok(Json(simulate::simulate(&node, &mapped.regexes, mapped.regex_deadline, &key)?))
}
