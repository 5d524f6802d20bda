//! `/v3/users/{user_id}/OS-OAUTH1/access_tokens`: the access tokens a user authorized, their
//! roles, and revocation.

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::request_tokens::{refuse, refuse_delegated};
use super::schemas as s;
use super::tokens::{self, AccessToken};
use crate::assignment::roles::role_json;
use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::Below;
use crate::http::openapi::errors as E;
use crate::http::pages::page;
use crate::policy::enforce;
use crate::state::model::{Doc, DocKind};
use crate::state::{Command, Reader};
use crate::token::Call;

const MANAGE: &str = "manage OAuth access tokens";

fn not_found() -> ApiError {
    ApiError::not_found_msg("Access token not found")
}

fn load(node: &Core, id: &str) -> ApiResult<(Doc, AccessToken)> {
    let doc = tokens::find(&node.engine.read(), DocKind::OAuthAccessToken, id)?.ok_or_else(not_found)?;
    let token = tokens::body(&doc)?;
    Ok((doc, token))
}

/// A token of this user; another user's looks like none (as in Keystone, a 404).
fn load_for(node: &Core, user_id: &str, id: &str) -> ApiResult<AccessToken> {
    let (_, token) = load(node, id)?;
    if token.authorizing_user_id != user_id {
        return Err(not_found());
    }
    Ok(token)
}

/// A delegated role as Keystone shows it: the role without `description`.
fn role_ref(node: &Core, role_id: &str) -> ApiResult<Option<Value>> {
    let Some(role) = node.engine.read().role(role_id)? else { return Ok(None) };
    let mut v = role_json(&role, &node.cfg.public_base());
    if let Some(o) = v.as_object_mut() {
        o.remove("description");
        o.remove("enabled");
    }
    Ok(Some(v))
}

#[utoipa::path(get, path = "/v3/users/{user_id}/OS-OAUTH1/access_tokens", operation_id = "oauth1_access_tokens_list", tag = "oauth1",
    params(("user_id" = String, Path, description = "The authorizing user."), ("limit" = Option<u32>, Query, description = "At most this many."),
           ("marker" = Option<String>, Query, description = "Start after this id.")),
    responses((status = 200, description = "The access tokens the user authorized.", body = s::AccessTokenList), E::List))]
pub async fn list(Call(node, ctx): Call, Below(user_id, q): Below) -> ApiResult<Json<Value>> {
    enforce("identity:list_access_tokens", &ctx, &json!({"user_id": user_id}))?;
    refuse_delegated(&ctx, MANAGE)?;
    let base = node.cfg.public_base();
    let mut items = Vec::new();
    for doc in node.engine.read().docs(DocKind::OAuthAccessToken)? {
        let t: AccessToken = tokens::body(&doc)?;
        if t.authorizing_user_id == user_id {
            items.push(tokens::render_access(&base, &t));
        }
    }
    items.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    let path = format!("/v3/users/{user_id}/OS-OAUTH1/access_tokens");
    Ok(Json(page("access_tokens", items, &base, &path, &q)?))
}

#[utoipa::path(get, path = "/v3/users/{user_id}/OS-OAUTH1/access_tokens/{access_token_id}", operation_id = "oauth1_access_tokens_get", tag = "oauth1",
    params(("user_id" = String, Path, description = "The authorizing user."), ("access_token_id" = String, Path, description = "The access token's id.")),
    responses((status = 200, description = "The access token (without its secret).", body = s::AccessTokenEnvelope), E::Read))]
pub async fn get(Call(node, ctx): Call, Path((user_id, id)): Path<(String, String)>) -> ApiResult<Json<Value>> {
    enforce("identity:get_access_token", &ctx, &json!({"user_id": user_id}))?;
    refuse_delegated(&ctx, MANAGE)?;
    let t = load_for(&node, &user_id, &id)?;
    Ok(Json(json!({"access_token": tokens::render_access(&node.cfg.public_base(), &t)})))
}

#[utoipa::path(delete, path = "/v3/users/{user_id}/OS-OAUTH1/access_tokens/{access_token_id}", operation_id = "oauth1_access_tokens_delete", tag = "oauth1", description = "Decided by `identity:ec2_delete_credential`, as in Keystone.",
    params(("user_id" = String, Path, description = "The authorizing user."), ("access_token_id" = String, Path, description = "The access token's id.")),
    responses((status = 204, description = "Revoked."), E::Remove))]
pub async fn delete(Call(node, ctx): Call, Path((user_id, id)): Path<(String, String)>) -> ApiResult<StatusCode> {
    enforce("identity:ec2_delete_credential", &ctx, &json!({"user_id": user_id}))?;
    refuse_delegated(&ctx, MANAGE)?;
    let (doc, t) = load(&node, &id)?;
    if t.authorizing_user_id != user_id {
        return Err(refuse("access token of another user"));
    }
    node.propose(Command::DeleteDoc { kind: DocKind::OAuthAccessToken, id: doc.id }).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/v3/users/{user_id}/OS-OAUTH1/access_tokens/{access_token_id}/roles", operation_id = "oauth1_access_token_roles_list", tag = "oauth1",
    params(("user_id" = String, Path, description = "The authorizing user."), ("access_token_id" = String, Path, description = "The access token's id."),
           ("limit" = Option<u32>, Query, description = "At most this many."), ("marker" = Option<String>, Query, description = "Start after this id.")),
    responses((status = 200, description = "The roles delegated to the token.", body = s::AccessTokenRoleList), E::Read))]
pub async fn roles(
    Call(node, ctx): Call,
    Path((user_id, id)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Json<Value>> {
    enforce("identity:list_access_token_roles", &ctx, &json!({"user_id": user_id}))?;
    refuse_delegated(&ctx, MANAGE)?;
    let t = load_for(&node, &user_id, &id)?;
    let mut items = Vec::new();
    for role_id in &t.role_ids {
        items.extend(role_ref(&node, role_id)?);
    }
    let path = format!("/v3/users/{user_id}/OS-OAUTH1/access_tokens/{id}/roles");
    Ok(Json(page("roles", items, &node.cfg.public_base(), &path, &q)?))
}

#[utoipa::path(get, path = "/v3/users/{user_id}/OS-OAUTH1/access_tokens/{access_token_id}/roles/{role_id}", operation_id = "oauth1_access_token_roles_get", tag = "oauth1",
    params(("user_id" = String, Path, description = "The authorizing user."), ("access_token_id" = String, Path, description = "The access token's id."),
           ("role_id" = String, Path, description = "A role delegated to the token.")),
    responses((status = 200, description = "The role.", body = s::AccessTokenRoleEnvelope), E::Read))]
pub async fn role(
    Call(node, ctx): Call,
    Path((user_id, id, role_id)): Path<(String, String, String)>,
) -> ApiResult<Json<Value>> {
    enforce("identity:get_access_token_role", &ctx, &json!({"user_id": user_id}))?;
    refuse_delegated(&ctx, MANAGE)?;
    let (_, t) = load(&node, &id)?;
    if t.authorizing_user_id != user_id {
        return Err(refuse("access token of another user"));
    }
    let role = match t.role_ids.contains(&role_id) {
        true => role_ref(&node, &role_id)?,
        false => None,
    };
    let role = role.ok_or_else(|| ApiError::not_found("role", &role_id))?;
    Ok(Json(json!({"role": role})))
}
