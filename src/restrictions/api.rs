//! `/v4/tokens/restrictions` (api-shapes §13.3). Policy `identity:token_restriction:*`: an
//! admin, or a manager of the restriction's domain; then the guard rails
//! (`policy::guard::change_restriction`). A restriction of a domain the caller may not manage
//! is refused before it is looked up, so its existence is not told. A write answers once every
//! reachable member applied it: from then on every node validates the restriction's tokens
//! against the new record (or refuses them, once it is deleted).

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::schemas::{CreateEnvelope, RestrictionList, RestrictionOne, RestrictionView, RoleRef, UpdateEnvelope};
use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::http::openapi::errors as E;
use crate::http::pages::page;
use crate::http::JsonBody;
use crate::policy::{enforce, guard, Persona};
use crate::state::keys::ns;
use crate::state::read::RestrictionReads;
use crate::state::restrictions::{RestrictionCommand, TokenRestriction};
use crate::state::Reader;
use crate::token::{Call, ValidToken};

const MAX_ID: usize = 64;
/// A confined token (`token::confined`) changes no restriction: not the one it carries, which
/// it would widen, nor another, which a ruleset could then hand it.
const RESHAPE: &str = "change token restrictions";
const MAX_ROLES: usize = 100;

fn bad(field: &str, why: &str) -> ApiError {
    ApiError::bad_request(format!("Invalid input for field '{field}': {why}"))
}

fn authorize(action: &str, ctx: &ValidToken, domain_id: Option<&str>) -> ApiResult<()> {
    enforce(&format!("identity:token_restriction:{action}"), ctx, &json!({"restriction": {"domain_id": domain_id}}))
}

fn id_field(field: &str, v: Option<String>) -> ApiResult<Option<String>> {
    match v {
        Some(s) if s.is_empty() || s.len() > MAX_ID => Err(bad(field, &format!("1 to {MAX_ID} characters."))),
        other => Ok(other),
    }
}

/// The role ids the body names (by id, or by name within `domain_id` or globally), deduped
/// in order. An unknown name is a 404, as an unknown id is (from apply).
fn role_ids(view: &impl Reader, roles: Vec<RoleRef>) -> ApiResult<Vec<String>> {
    if roles.is_empty() || roles.len() > MAX_ROLES {
        return Err(bad("roles", &format!("1 to {MAX_ROLES} roles.")));
    }
    let mut ids: Vec<String> = Vec::new();
    for r in roles {
        let id = match (r.id, r.name) {
            (Some(id), _) => id_field("roles.id", Some(id))?.unwrap_or_default(),
            (None, Some(name)) => view
                .id_by_name(ns::ROLE_NAME, r.domain_id.as_deref().unwrap_or(""), &name)?
                .ok_or_else(|| ApiError::not_found("role", &name))?,
            (None, None) => return Err(bad("roles", "each role needs an 'id' or a 'name'.")),
        };
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    Ok(ids)
}

pub fn view(r: &TokenRestriction, roles: &impl Reader) -> ApiResult<RestrictionView> {
    let mut shown = Vec::new();
    for id in &r.role_ids {
        if let Some(role) = roles.role(id)? {
            shown.push(RoleRef { id: Some(role.id), name: Some(role.name), domain_id: role.domain_id });
        }
    }
    Ok(RestrictionView {
        id: r.id.clone(),
        domain_id: r.domain_id.clone(),
        user_id: r.user_id.clone(),
        project_id: r.project_id.clone(),
        allow_renew: r.allow_renew,
        allow_rescope: r.allow_rescope,
        roles: shown,
    })
}

fn one(node: &Core, r: &TokenRestriction) -> ApiResult<Json<RestrictionOne>> {
    Ok(Json(RestrictionOne { restriction: view(r, &node.engine.read())? }))
}

/// The restriction `id` once policy allows `action` on its domain (404 for none).
fn named(node: &Core, ctx: &ValidToken, action: &str, id: &str) -> ApiResult<TokenRestriction> {
    let found = node.engine.read().token_restriction(id)?;
    // Policy on the real domain first; an unknown id is asked about as a domain-less target,
    // which only an admin passes, so a manager learns nothing from 403 versus 404.
    authorize(action, ctx, found.as_ref().map(|r| r.domain_id.as_str()))?;
    found.ok_or_else(|| ApiError::not_found("token restriction", id))
}

/// The user, project and roles `r` names, each of its domain (a role may also be global), or
/// one answer, 404, for whatever is not: unknown, of another domain, or privileged there. A
/// manager thus learns nothing about other domains from a refusal (apply, which is the
/// authority, still checks the same against the state the write lands in). Runs before the
/// guard rails, whose 403 then concerns only the caller's own domain.
fn within_domain(view: &impl Reader, r: &TokenRestriction) -> ApiResult<()> {
    if let Some(uid) = &r.user_id {
        if view.user(uid)?.is_none_or(|u| u.domain_id != r.domain_id) {
            return Err(ApiError::not_found("user", uid));
        }
    }
    if let Some(pid) = &r.project_id {
        if view.project(pid)?.is_none_or(|p| p.is_domain || p.domain_id != r.domain_id) {
            return Err(ApiError::not_found("project", pid));
        }
    }
    for rid in &r.role_ids {
        if view.role(rid)?.is_none_or(|role| role.domain_id.as_ref().is_some_and(|d| *d != r.domain_id)) {
            return Err(ApiError::not_found("role", rid));
        }
    }
    Ok(())
}

fn guarded(node: &Core, ctx: &ValidToken, r: &TokenRestriction) -> ApiResult<()> {
    let view = node.engine.read();
    guard::change_restriction(
        &view,
        node.fga.as_deref(),
        ctx,
        r.user_id.as_deref(),
        r.project_id.as_deref(),
        &r.role_ids,
    )
}

async fn write(node: &Core, cmd: RestrictionCommand) -> ApiResult<TokenRestriction> {
    let (index, r) = node.propose_at_as(cmd).await?;
    node.wait_cluster_applied(index).await;
    Ok(r)
}

#[utoipa::path(get, path = "/v4/tokens/restrictions", operation_id = "v4_token_restrictions_list", tag = "token_restrictions",
    params(("domain_id" = Option<String>, Query, description = "Only this domain's (a manager without it sees its own domain's)."),
           ("user_id" = Option<String>, Query, description = "Only those bound to this user."),
           ("project_id" = Option<String>, Query, description = "Only those bound to this project."),
           ("limit" = Option<u32>, Query, description = "At most this many."), ("marker" = Option<String>, Query, description = "Start after this id.")),
    responses((status = 200, description = "The restrictions, in id order.", body = RestrictionList), E::List))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    let domain = match q.get("domain_id") {
        Some(d) => Some(d.clone()),
        None if guard::cloud_admin(&ctx) => None,
        None => Persona { ctx: &ctx }.scope_domain().map(str::to_string).or_else(|| Some(ctx.user.domain_id.clone())),
    };
    authorize("list", &ctx, domain.as_deref())?;
    let view = node.engine.read();
    let mut items = Vec::new();
    for r in view.token_restrictions()? {
        let keep = domain.as_ref().is_none_or(|d| *d == r.domain_id)
            && q.get("user_id").is_none_or(|u| r.user_id.as_ref() == Some(u))
            && q.get("project_id").is_none_or(|p| r.project_id.as_ref() == Some(p));
        if keep {
            items.push(json!(self::view(&r, &view)?));
        }
    }
    Ok(Json(page("restrictions", items, &node.cfg.public_base(), "/v4/tokens/restrictions", &q)?))
}

#[utoipa::path(post, path = "/v4/tokens/restrictions", operation_id = "v4_token_restrictions_create", tag = "token_restrictions",
    request_body(content = CreateEnvelope, content_type = "application/json"),
    responses((status = 201, description = "The restriction.", body = RestrictionOne), E::Change))]
pub async fn create(
    Call(node, ctx): Call,
    JsonBody(b): JsonBody<CreateEnvelope>,
) -> ApiResult<(StatusCode, Json<RestrictionOne>)> {
    let b = b.restriction;
    let domain_id = id_field("domain_id", Some(b.domain_id))?.unwrap_or_default();
    authorize("create", &ctx, Some(&domain_id))?;
    ctx.refuse_confined(RESHAPE)?;
    let r = TokenRestriction {
        id: uuid::Uuid::new_v4().simple().to_string(),
        domain_id,
        user_id: id_field("user_id", b.user_id)?,
        project_id: id_field("project_id", b.project_id)?,
        allow_renew: b.allow_renew,
        allow_rescope: b.allow_rescope,
        role_ids: role_ids(&node.engine.read(), b.roles)?,
    };
    within_domain(&node.engine.read(), &r)?;
    guarded(&node, &ctx, &r)?;
    let r = write(&node, RestrictionCommand::Put { restriction: Box::new(r), create: true }).await?;
    Ok((StatusCode::CREATED, one(&node, &r)?))
}

#[utoipa::path(get, path = "/v4/tokens/restrictions/{id}", operation_id = "v4_token_restrictions_get", tag = "token_restrictions",
    params(("id" = String, Path, description = "The restriction.")),
    responses((status = 200, description = "The restriction.", body = RestrictionOne), E::Read))]
pub async fn get(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<Json<RestrictionOne>> {
    one(&node, &named(&node, &ctx, "show", &id)?)
}

#[utoipa::path(put, path = "/v4/tokens/restrictions/{id}", operation_id = "v4_token_restrictions_update", tag = "token_restrictions",
    params(("id" = String, Path, description = "The restriction.")),
    request_body(content = UpdateEnvelope, content_type = "application/json"),
    responses((status = 200, description = "The restriction as changed; its tokens are narrowed accordingly on every node once this answers.", body = RestrictionOne), E::Edit))]
pub async fn update(
    Call(node, ctx): Call,
    Path(id): Path<String>,
    JsonBody(b): JsonBody<UpdateEnvelope>,
) -> ApiResult<Json<RestrictionOne>> {
    let mut r = named(&node, &ctx, "update", &id)?;
    ctx.refuse_confined(RESHAPE)?;
    guarded(&node, &ctx, &r)?;
    let b = b.restriction;
    if let Some(v) = b.user_id {
        r.user_id = id_field("user_id", v)?;
    }
    if let Some(v) = b.project_id {
        r.project_id = id_field("project_id", v)?;
    }
    r.allow_renew = b.allow_renew.unwrap_or(r.allow_renew);
    r.allow_rescope = b.allow_rescope.unwrap_or(r.allow_rescope);
    if let Some(roles) = b.roles {
        r.role_ids = role_ids(&node.engine.read(), roles)?;
    }
    within_domain(&node.engine.read(), &r)?;
    guarded(&node, &ctx, &r)?;
    let r = write(&node, RestrictionCommand::Put { restriction: Box::new(r), create: false }).await?;
    one(&node, &r)
}

#[utoipa::path(delete, path = "/v4/tokens/restrictions/{id}", operation_id = "v4_token_restrictions_delete", tag = "token_restrictions",
    params(("id" = String, Path, description = "The restriction.")),
    responses((status = 204, description = "Deleted; its tokens stop validating on every node once this answers."), E::Remove))]
pub async fn delete(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<StatusCode> {
    let r = named(&node, &ctx, "delete", &id)?;
    ctx.refuse_confined(RESHAPE)?;
    guarded(&node, &ctx, &r)?;
    let (index, ()) = node.propose_at_as(RestrictionCommand::Delete { id, domain_id: r.domain_id }).await?;
    node.wait_cluster_applied(index).await;
    Ok(StatusCode::NO_CONTENT)
}
