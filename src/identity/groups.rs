//! `/v3/groups`, group membership (`/v3/groups/{id}/users[/{user_id}]`) and
//! `/v3/users/{id}/groups`.

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::schemas as s;
use super::users::user_json;
use crate::clock::now_micros;
use crate::context::Core;
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{Below, JsonBody};
use crate::http::fields::*;
use crate::http::listing::{found, of_domain};
use crate::http::openapi::errors as E;
use crate::http::pages::page;
use crate::openfga::forget::{forget_in, Gone};
use crate::policy::{enforce, enforce_found, guard, Persona};
use crate::state::keys::ns;
use crate::state::model::{Group, User};
use crate::state::read::IdentityReads;
use crate::state::{Command, Reader};
use crate::token::render::iso_micros;
use crate::token::Call;
use crate::token::ValidToken;

const KNOWN: &[&str] = &["id", "name", "domain_id", "description"];

pub fn group_json(g: &Group, base: &str) -> Value {
    with_extra(
        json!({
            "id": g.id, "name": g.name, "domain_id": g.domain_id, "description": g.description,
            "links": {"self": format!("{base}/v3/groups/{}", g.id)},
        }),
        &g.extra,
    )
}

fn load(node: &Core, id: &str) -> ApiResult<Group> {
    node.engine.read().group(id)?.ok_or_else(|| ApiError::not_found("group", id))
}

fn load_user(node: &Core, id: &str) -> ApiResult<User> {
    node.engine.read().user(id)?.ok_or_else(|| ApiError::not_found("user", id))
}

fn target(g: &Group) -> Value {
    json!({"group": {"id": g.id, "domain_id": g.domain_id}})
}

/// A membership's group and user, the policy asked first (Keystone's order): on what was found
/// of the two, so a caller who may not change the group hears 403 even when one is missing.
fn membership(name: &str, node: &Core, ctx: &ValidToken, id: &str, user_id: &str) -> ApiResult<(Group, User)> {
    let (g, u) = (load(node, id), load_user(node, user_id));
    let mut known = serde_json::Map::new();
    if let Ok(g) = &g {
        known.insert("group".into(), json!({"id": g.id, "domain_id": g.domain_id}));
    }
    if let Ok(u) = &u {
        known.insert("user".into(), json!({"id": u.id, "domain_id": u.domain_id}));
    }
    let (known, both) = (Value::Object(known), g.and_then(|g| u.map(|u| (g, u))));
    enforce_found(name, ctx, both, |_| known.clone(), known.clone())
}

fn respond(node: &Core, status: StatusCode, g: Group) -> ApiResult<(StatusCode, Json<Value>)> {
    Ok((status, Json(json!({"group": group_json(&g, &node.cfg.public_base())}))))
}

#[utoipa::path(get, path = "/v3/groups", operation_id = "groups_list", tag = "groups",
    params(("domain_id" = Option<String>, Query, description = "Only groups of this domain (default for a domain-scoped caller: its domain)."),
           ("name" = Option<String>, Query, description = "Only the group with this name (case-insensitive).")),
    responses((status = 200, description = "The groups the caller may see.", body = s::GroupList), E::List))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    // A domain-scoped caller lists its own domain only (Keystone).
    let persona = Persona { ctx: &ctx };
    let domain = match q.get("domain_id") {
        Some(d) => Some(d.clone()),
        None => persona.listing_domain().map(str::to_string),
    };
    enforce("identity:list_groups", &ctx, &json!({"domain_id": domain}))?;
    let view = node.engine.snapshot();
    let indexes = (ns::GROUP_NAME, ns::GROUPS_OF_DOMAIN);
    let groups = of_domain(&view, indexes, (domain.as_ref(), q.get("name")), |id| view.group(id), || view.groups())?;
    let name = q.get("name").map(|n| n.to_lowercase());
    let base = node.cfg.public_base();
    let out: Vec<Value> = groups
        .iter()
        .filter(|g| name.as_ref().is_none_or(|n| &g.name.to_lowercase() == n))
        .map(|g| group_json(g, &base))
        .collect();
    Ok(Json(page("groups", out, &base, "/v3/groups", &q)?))
}

#[utoipa::path(post, path = "/v3/groups", operation_id = "groups_create", tag = "groups",
    request_body(content = s::GroupCreateRequest, content_type = "application/json"),
    responses((status = 201, description = "The created group.", body = s::GroupEnvelope), E::Write))]
pub async fn create(
    Call(node, ctx): Call,
    JsonBody(body): JsonBody<Body<s::GroupCreateRequest>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let b = body.object()?.group.envelope("group")?;
    let domain_id = b.domain_id.string("domain_id", 64)?;
    let name = b.name.name("name", 64)?;
    let description = b.fields.description.string("description", 65535)?;
    let domain_id =
        domain_id.or_else(|| ctx.scope_domain.as_ref().map(|d| d.id.clone())).unwrap_or_else(|| "default".into());
    let g = Group { id: new_id(), name, domain_id, description, extra: extra(&b.fields.extra, KNOWN, "{}") };
    enforce("identity:create_group", &ctx, &target(&g))?;
    respond(&node, StatusCode::CREATED, node.propose_as(Command::CreateGroup(g)).await?)
}

#[utoipa::path(get, path = "/v3/groups/{id}", operation_id = "groups_get", tag = "groups",
    params(("id" = String, Path, description = "The group's id.")),
    responses((status = 200, description = "The group.", body = s::GroupEnvelope), E::Read))]
pub async fn get(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let g = enforce_found("identity:get_group", &ctx, load(&node, &id), target, json!({}))?;
    Ok(Json(json!({"group": group_json(&g, &node.cfg.public_base())})))
}

#[utoipa::path(patch, path = "/v3/groups/{id}", operation_id = "groups_update", tag = "groups",
    params(("id" = String, Path, description = "The group's id.")),
    request_body(content = s::GroupUpdateRequest, content_type = "application/json"),
    responses((status = 200, description = "The updated group.", body = s::GroupEnvelope), E::Write))]
pub async fn update(
    Call(node, ctx): Call,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Body<s::GroupUpdateRequest>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let b = body.object()?.group.envelope("group")?;
    let mut g = enforce_found("identity:update_group", &ctx, load(&node, &id), target, json!({}))?;
    guard::change_group(&node.engine.read(), node.fga.as_deref(), &ctx, &g.id)?;
    if b.fields.extra.contains_key("domain_id")
        && opt_str(&b.fields.extra, "domain_id", 64)?.as_deref() != Some(g.domain_id.as_str())
    {
        return Err(ApiError::bad_request("Update of `domain_id` is not allowed."));
    }
    if let Some(n) = b.name.opt_name("name", 64)? {
        g.name = n;
    }
    if let Some(d) = b.fields.description.nullable("description", 65535)? {
        g.description = d;
    }
    g.extra = extra(&b.fields.extra, KNOWN, &g.extra);
    respond(&node, StatusCode::OK, node.propose_as(Command::UpdateGroup(g)).await?)
}

#[utoipa::path(delete, path = "/v3/groups/{id}", operation_id = "groups_delete", tag = "groups",
    params(("id" = String, Path, description = "The group's id.")),
    responses((status = 204, description = "Deleted, with its memberships and grants."), E::Change))]
pub async fn delete(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<StatusCode> {
    // Keystone looks the group up before it asks the policy here (404 to anyone for a
    // missing one), unlike the group's other operations.
    let g = load(&node, &id)?;
    enforce("identity:delete_group", &ctx, &target(&g))?;
    guard::change_group(&node.engine.read(), node.fga.as_deref(), &ctx, &g.id)?;
    forget_in(node.fga.as_deref(), Some(Gone::group(&g.id))).await?;
    node.propose(Command::DeleteGroup { id: g.id }).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/v3/groups/{id}/users", operation_id = "groups_list_users", tag = "groups",
    params(("id" = String, Path, description = "The group's id.")),
    responses((status = 200, description = "The group's members.", body = s::UserList), E::Read))]
pub async fn list_users(Call(node, ctx): Call, Below(id, q): Below) -> ApiResult<Json<Value>> {
    let g = enforce_found("identity:list_users_in_group", &ctx, load(&node, &id), target, json!({}))?;
    let view = node.engine.snapshot();
    let base = node.cfg.public_base();
    // A domain-scoped caller sees the members of its own domain only (Keystone filters so).
    let persona = Persona { ctx: &ctx };
    let domain = persona.listing_domain();
    let out = found(view.member_user_ids(&g.id)?, |id| view.user(id))?
        .iter()
        .filter(|u| domain.is_none_or(|d| u.domain_id == d))
        .map(|u| user_json(u, &base))
        .collect();
    Ok(Json(page("users", out, &base, &format!("/v3/groups/{}/users", g.id), &q)?))
}

#[utoipa::path(put, path = "/v3/groups/{id}/users/{user_id}", operation_id = "groups_add_user", tag = "groups",
    params(("id" = String, Path, description = "The group's id."), ("user_id" = String, Path, description = "The user's id.")),
    responses((status = 204, description = "The user is a member."), E::Change))]
pub async fn add_user(Call(node, ctx): Call, Path((id, user_id)): Path<(String, String)>) -> ApiResult<StatusCode> {
    let (g, u) = membership("identity:add_user_to_group", &node, &ctx, &id, &user_id)?;
    guard::change_group(&node.engine.read(), node.fga.as_deref(), &ctx, &g.id)?;
    node.propose(Command::AddGroupMember { group_id: g.id, user_id: u.id }).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// 204 when the user is a member, 404 otherwise.
#[utoipa::path(head, path = "/v3/groups/{id}/users/{user_id}", operation_id = "groups_check_user", tag = "groups", description = "404 when the user is not a member, or the group or user does not exist.",
    params(("id" = String, Path, description = "The group's id."), ("user_id" = String, Path, description = "The user's id.")),
    responses((status = 204, description = "The user is a member."), E::Read))]
pub async fn check_user(Call(node, ctx): Call, Path((id, user_id)): Path<(String, String)>) -> ApiResult<StatusCode> {
    let (g, u) = membership("identity:check_user_in_group", &node, &ctx, &id, &user_id)?;
    if crate::reads::groups::is_member(&node.engine.read(), &g.id, &u.id, now_micros())? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::new(StatusCode::NOT_FOUND, format!("User {} is not a member of group {}.", u.id, g.id)))
    }
}

#[utoipa::path(delete, path = "/v3/groups/{id}/users/{user_id}", operation_id = "groups_remove_user", tag = "groups",
    params(("id" = String, Path, description = "The group's id."), ("user_id" = String, Path, description = "The user's id.")),
    responses((status = 204, description = "The user is no longer a member."), E::Change))]
pub async fn remove_user(Call(node, ctx): Call, Path((id, user_id)): Path<(String, String)>) -> ApiResult<StatusCode> {
    let (g, u) = membership("identity:remove_user_from_group", &node, &ctx, &id, &user_id)?;
    guard::change_group(&node.engine.read(), node.fga.as_deref(), &ctx, &g.id)?;
    node.propose(Command::RemoveGroupMember { group_id: g.id, user_id: u.id }).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The groups of a user: its permanent memberships (`membership_expires_at` null) and the
/// expiring ones a federated login granted that are not over yet, with their end.
#[utoipa::path(get, path = "/v3/users/{id}/groups", operation_id = "groups_groups_of_user", tag = "users",
    params(("id" = String, Path, description = "The user's id.")),
    responses((status = 200, description = "The user's groups.", body = s::MemberGroupList), E::Read))]
pub async fn groups_of_user(Call(node, ctx): Call, Below(user_id, q): Below) -> ApiResult<Json<Value>> {
    let user_target = |u: &User| json!({"user": {"id": u.id, "domain_id": u.domain_id}});
    let u = enforce_found("identity:list_groups_for_user", &ctx, load_user(&node, &user_id), user_target, json!({}))?;
    let view = node.engine.snapshot();
    let base = node.cfg.public_base();
    // A domain-scoped caller sees the groups of its own domain only (Keystone filters so).
    let persona = Persona { ctx: &ctx };
    let domain = persona.listing_domain();
    let mut out = Vec::new();
    for (id, expires_at) in crate::reads::groups::of_user(&view, &u.id, now_micros())? {
        let Some(g) = view.group(&id)? else { continue };
        if domain.is_some_and(|d| g.domain_id != d) {
            continue;
        }
        let mut v = group_json(&g, &base);
        v["membership_expires_at"] = expires_at.map_or(Value::Null, |t| Value::from(iso_micros(t)));
        out.push(v);
    }
    Ok(Json(page("groups", out, &base, &format!("/v3/users/{}/groups", u.id), &q)?))
}
