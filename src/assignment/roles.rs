//! `/v3/roles`: global roles, and domain-specific roles (`domain_id` set), which Keystone
//! authorizes under separate `*_domain_role` policy names.

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::schemas as s;
use crate::context::Core;
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{extra, json_obj, new_id};
use crate::http::openapi::{errors as E, extras, to_json, SelfLink};
use crate::http::JsonBody;
use crate::policy::enforce;
use crate::state::keys::ns;
use crate::state::model::Role;
use crate::state::read::AssignmentReads;
use crate::state::{Command, Reader};
use crate::token::Call;

/// A role as the API shows it.
pub fn role(r: &Role, base: &str) -> s::Role {
    s::Role {
        extra: extras(&r.extra),
        id: r.id.clone(),
        name: r.name.clone(),
        domain_id: r.domain_id.clone(),
        description: r.description.clone(),
        options: json_obj(&r.options),
        links: SelfLink::new(base, &format!("/v3/roles/{}", r.id)),
    }
}

pub fn role_json(r: &Role, base: &str) -> Value {
    to_json(&role(r, base))
}

pub fn load(node: &Core, id: &str) -> ApiResult<Role> {
    node.engine.read().role(id)?.ok_or_else(|| ApiError::not_found("role", id))
}

/// The policy target of a role (also used by grants and implication rules).
pub fn target(r: &Role) -> Value {
    json!({"role": {"id": r.id, "name": r.name, "domain_id": r.domain_id}})
}

/// Keystone's policy name for `action` on this kind of role.
fn action(r: &Role, global: &'static str, domain: &'static str) -> &'static str {
    if r.domain_id.is_some() {
        domain
    } else {
        global
    }
}

fn shown(node: &Core, r: &Role) -> Json<Value> {
    let role = role(r, &node.cfg.public_base());
    Json(to_json(&s::RoleEnvelope { role }))
}

/// Without `domain_id` only global roles are listed (as Keystone does).
#[utoipa::path(get, path = "/v3/roles", operation_id = "roles_list", tag = "roles",
    params(("domain_id" = Option<String>, Query, description = "List the roles of this domain (domain-specific roles) instead of the global roles."),
           ("name" = Option<String>, Query, description = "Only the role with this name.")),
    responses((status = 200, description = "The roles.", body = s::RoleList), E::List))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    let domain = q.get("domain_id").filter(|d| !d.is_empty());
    match domain {
        Some(d) => enforce("identity:list_domain_roles", &ctx, &json!({"domain_id": d}))?,
        None => enforce("identity:list_roles", &ctx, &json!({}))?,
    }
    let view = node.engine.snapshot();
    let roles: Vec<Role> = match q.get("name") {
        Some(name) => view
            .id_by_name(ns::ROLE_NAME, domain.map(String::as_str).unwrap_or(""), name)?
            .map(|id| view.role(&id))
            .transpose()?
            .flatten()
            .into_iter()
            .collect(),
        None => view.roles()?,
    };
    let base = node.cfg.public_base();
    let out: Vec<Value> =
        roles.iter().filter(|r| r.domain_id.as_ref() == domain).map(|r| role_json(r, &base)).collect();
    Ok(Json(crate::http::pages::page("roles", out, &base, "/v3/roles", &q)?))
}

#[utoipa::path(post, path = "/v3/roles", operation_id = "roles_create", tag = "roles",
    request_body(content = s::RoleCreateRequest, content_type = "application/json"),
    responses((status = 201, description = "The created role.", body = s::RoleEnvelope), E::Write))]
pub async fn create(
    Call(node, ctx): Call,
    JsonBody(body): JsonBody<Body<s::RoleCreateRequest>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let b = body.object()?.role.envelope("role")?;
    let r = Role {
        id: new_id(),
        name: b.name.name("name", 255)?,
        domain_id: b.domain_id.string("domain_id", 64)?,
        description: b.fields.description.string("description", 255)?,
        extra: extra(&b.fields.extra, &[], "{}"),
        options: b.fields.options.options()?.unwrap_or_else(|| "{}".into()),
    };
    enforce(action(&r, "identity:create_role", "identity:create_domain_role"), &ctx, &target(&r))?;
    Ok((StatusCode::CREATED, shown(&node, &node.propose_as(Command::CreateRole(r)).await?)))
}

#[utoipa::path(get, path = "/v3/roles/{id}", operation_id = "roles_get", tag = "roles",
    params(("id" = String, Path, description = "The role's id.")),
    responses((status = 200, description = "The role.", body = s::RoleEnvelope), E::Read))]
pub async fn get(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let r = load(&node, &id)?;
    enforce(action(&r, "identity:get_role", "identity:get_domain_role"), &ctx, &target(&r))?;
    Ok(shown(&node, &r))
}

#[utoipa::path(patch, path = "/v3/roles/{id}", operation_id = "roles_update", tag = "roles",
    params(("id" = String, Path, description = "The role's id.")),
    request_body(content = s::RoleUpdateRequest, content_type = "application/json"),
    responses((status = 200, description = "The updated role.", body = s::RoleEnvelope), E::Write))]
pub async fn update(
    Call(node, ctx): Call,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Body<s::RoleUpdateRequest>>,
) -> ApiResult<Json<Value>> {
    let b = body.object()?.role.envelope("role")?;
    let mut r = load(&node, &id)?;
    enforce(action(&r, "identity:update_role", "identity:update_domain_role"), &ctx, &target(&r))?;
    if b.domain_id.is_present() && b.domain_id.string("domain_id", 64)? != r.domain_id {
        return Err(ApiError::bad_request("Update of `domain_id` is not allowed."));
    }
    if let Some(n) = b.name.opt_name("name", 255)? {
        r.name = n;
    }
    if b.fields.description.is_present() {
        r.description = b.fields.description.string("description", 255)?;
    }
    if let Some(opts) = b.fields.options.options()? {
        r.options = opts;
    }
    r.extra = extra(&b.fields.extra, &[], &r.extra);
    Ok(shown(&node, &node.propose_as(Command::UpdateRole(r)).await?))
}

#[utoipa::path(delete, path = "/v3/roles/{id}", operation_id = "roles_delete", tag = "roles",
    params(("id" = String, Path, description = "The role's id.")),
    responses((status = 204, description = "Deleted, with its grants and inference rules."), E::Change))]
pub async fn delete(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<StatusCode> {
    let r = load(&node, &id)?;
    enforce(action(&r, "identity:delete_role", "identity:delete_domain_role"), &ctx, &target(&r))?;
    node.propose(Command::DeleteRole { id: r.id }).await?;
    Ok(StatusCode::NO_CONTENT)
}
