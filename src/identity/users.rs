//! `/v3/users`.

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::schemas as s;
use crate::clock::now_micros;
use crate::context::Core;
use crate::http::body::Body;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::{query_flag, JsonBody};
use crate::http::fields::*;
use crate::http::listing::{found, of_domain};
use crate::http::openapi::errors as E;
use crate::openfga::forget::{forget_in, Gone};
use crate::policy::{enforce, enforce_found, guard};
use crate::state::command::UserPatch;
use crate::state::keys::ns;
use crate::state::model::{FederatedIdentity, User};
use crate::state::read::IdentityReads;
use crate::state::{Command, Reader};
use crate::token::render::iso_micros_naive;
use crate::token::Call;

const KNOWN: &[&str] =
    &["id", "name", "domain_id", "enabled", "password", "default_project_id", "options", "federated"];

pub fn user_json(u: &User, base: &str) -> Value {
    let mut v = json!({
        "id": u.id, "name": u.name, "domain_id": u.domain_id, "enabled": u.enabled,
        "password_expires_at": u.password_expires_at.map(iso_micros_naive),
        "options": json_obj(&u.options),
        "links": {"self": format!("{base}/v3/users/{}", u.id)},
    });
    if let Some(o) = v.as_object_mut() {
        if let Some(pid) = &u.default_project_id {
            o.insert("default_project_id".into(), json!(pid));
        }
        if !u.federated.is_empty() {
            o.insert("federated".into(), federated_json(&u.federated));
        }
    }
    with_extra(v, &u.extra)
}

fn federated_json(f: &[FederatedIdentity]) -> Value {
    f.iter()
        .map(|i| {
            let protocols: Vec<Value> =
                i.protocols.iter().map(|p| json!({"protocol_id": p.protocol_id, "unique_id": p.unique_id})).collect();
            json!({"idp_id": i.idp_id, "protocols": protocols})
        })
        .collect()
}

fn load(node: &Core, id: &str) -> ApiResult<User> {
    node.engine.read().user(id)?.ok_or_else(|| ApiError::not_found("user", id))
}

fn target(u: &User) -> Value {
    json!({"user": {"id": u.id, "domain_id": u.domain_id}})
}

fn respond(node: &Core, status: StatusCode, u: User) -> ApiResult<(StatusCode, Json<Value>)> {
    Ok((status, Json(json!({"user": user_json(&u, &node.cfg.public_base())}))))
}

#[utoipa::path(get, path = "/v3/users", operation_id = "users_list", tag = "users",
    params(("domain_id" = Option<String>, Query, description = "Only users of this domain (default for a domain-scoped caller: its domain)."),
           ("name" = Option<String>, Query, description = "Only the user with this name (case-insensitive)."),
           ("unique_id" = Option<String>, Query, description = "Only the user linked to this federated unique id."),
           ("enabled" = Option<bool>, Query, description = "Only enabled (true) or disabled (false) users.")),
    responses((status = 200, description = "The users the caller may see.", body = s::UserList), E::List))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    let persona = crate::policy::Persona { ctx: &ctx };
    let domain = match q.get("domain_id") {
        Some(d) => Some(d.clone()),
        None => persona.listing_domain().map(str::to_string),
    };
    enforce("identity:list_users", &ctx, &json!({"domain_id": domain}))?;
    let view = node.engine.snapshot();
    let users = match q.get("unique_id") {
        Some(unique_id) => found(view.member_ids(ns::USER_UNIQUE_ID, unique_id)?, |id| view.user(id))?,
        None => {
            let indexes = (ns::USER_NAME, ns::USERS_OF_DOMAIN);
            of_domain(&view, indexes, (domain.as_ref(), q.get("name")), |id| view.user(id), || view.users())?
        }
    };
    let name = q.get("name").map(|n| n.to_lowercase());
    let enabled = q.get("enabled").map(|v| query_flag(Some(v)));
    let base = node.cfg.public_base();
    let out: Vec<Value> = users
        .iter()
        .filter(|u| domain.as_ref().is_none_or(|d| &u.domain_id == d))
        .filter(|u| name.as_ref().is_none_or(|n| &u.name.to_lowercase() == n))
        .filter(|u| enabled.is_none_or(|e| u.enabled == e))
        .map(|u| user_json(u, &base))
        .collect();
    Ok(Json(crate::http::pages::page("users", out, &base, "/v3/users", &q)?))
}

#[utoipa::path(post, path = "/v3/users", operation_id = "users_create", tag = "users",
    request_body(content = s::UserCreateRequest, content_type = "application/json"),
    responses((status = 201, description = "The created user (never with its password).", body = s::UserEnvelope), E::Write))]
pub async fn create(
    Call(node, ctx): Call,
    JsonBody(body): JsonBody<Body<s::UserCreateRequest>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let b = body.object()?.user.envelope("user")?;
    let domain_id = b.domain_id.string("domain_id", 64)?;
    let name = b.name.name("name", 255)?;
    let enabled = b.fields.enabled.flag("enabled")?;
    let default_project_id = b.fields.default_project_id.string("default_project_id", 64)?;
    let options = b.fields.options.options()?.map(|o| super::options::merged("{}", &o)).transpose()?;
    let federated = s::federated(&b.fields.federated)?.flatten();
    if domain_id.is_none() {
        // Keystone asks the policy about the user as sent, before it fills in the domain: a
        // domain manager must name its domain.
        enforce("identity:create_user", &ctx, &json!({"user": {"name": name}}))?;
    }
    let domain_id =
        domain_id.or_else(|| ctx.scope_domain.as_ref().map(|d| d.id.clone())).unwrap_or_else(|| "default".into());
    let mut u = User {
        id: new_id(),
        name,
        domain_id,
        enabled: enabled.unwrap_or(true),
        password_hash: None,
        default_project_id,
        password_expires_at: None,
        extra: extra(&b.fields.extra, KNOWN, "{}"),
        options: options.unwrap_or_else(|| "{}".into()),
        created_at: now_micros(),
        tokens_valid_after: 0,
        federated: federated.map(|f| f.into_iter().map(Into::into).collect()).unwrap_or_default(),
    };
    enforce("identity:create_user", &ctx, &target(&u))?;
    let mut cmds = Vec::new();
    if let Some(pw) = b.fields.password.string("password", s::MAX_PASSWORD)? {
        node.cfg.security.check_pattern(&pw)?;
        let hash = node.hash_password(pw).await?;
        u.password_hash = Some(hash.clone());
        // Keystone decides first-use expiry before it reads the create body's options.
        let mut plain = u.clone();
        plain.options = "{}".into();
        cmds.push(node.cfg.security.record(&plain, hash, u.created_at, false));
    }
    cmds.insert(0, Command::CreateUser(u));
    // Every reachable node knows the user before the caller hears of it, so a login through
    // any of them needs no catch-up (which would make unknown users slower to refuse).
    let (index, user) = node.propose_at_as::<User>(Command::All(cmds)).await?;
    node.wait_cluster_applied(index).await;
    respond(&node, StatusCode::CREATED, user)
}

#[utoipa::path(get, path = "/v3/users/{id}", operation_id = "users_get", tag = "users",
    params(("id" = String, Path, description = "The user's id.")),
    responses((status = 200, description = "The user.", body = s::UserEnvelope), E::Read))]
pub async fn get(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let u = enforce_found("identity:get_user", &ctx, load(&node, &id), target, json!({}))?;
    Ok(Json(json!({"user": user_json(&u, &node.cfg.public_base())})))
}

#[utoipa::path(patch, path = "/v3/users/{id}", operation_id = "users_update", tag = "users",
    params(("id" = String, Path, description = "The user's id.")),
    request_body(content = s::UserUpdateRequest, content_type = "application/json"),
    responses((status = 200, description = "The updated user.", body = s::UserEnvelope), E::Write))]
pub async fn update(
    Call(node, ctx): Call,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Body<s::UserUpdateRequest>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let b = body.object()?.user.envelope("user")?;
    let u = enforce_found("identity:update_user", &ctx, load(&node, &id), target, json!({}))?;
    guard::change_user(&node.engine.read(), node.fga.as_deref(), &ctx, &u.id)?;
    if b.fields.extra.contains_key("domain_id")
        && opt_str(&b.fields.extra, "domain_id", 64)?.as_deref() != Some(u.domain_id.as_str())
    {
        return Err(ApiError::bad_request("Update of `domain_id` is not allowed."));
    }
    let now = now_micros();
    let mut patch = UserPatch { id: u.id.clone(), now, ..UserPatch::default() };
    patch.name = b.name.opt_name("name", 255)?;
    patch.enabled = b.fields.enabled.flag("enabled")?;
    patch.default_project_id = b.fields.default_project_id.nullable("default_project_id", 64)?;
    patch.options = b.fields.options.options()?.map(|o| super::options::merged(&u.options, &o)).transpose()?;
    patch.federated =
        s::federated(&b.fields.federated)?.map(|f| f.unwrap_or_default().into_iter().map(Into::into).collect());
    let password = b.fields.password.nullable("password", s::MAX_PASSWORD)?;
    let mut cmds = Vec::new();
    if let Some(pw) = password {
        patch.password_hash = Some(match pw {
            Some(pw) => {
                node.cfg.security.check_pattern(&pw)?;
                let hash = node.hash_password(pw).await?;
                cmds.push(node.cfg.security.record(&u, hash.clone(), now, false));
                Some(hash)
            }
            None => None,
        });
    }
    if patch.enabled.unwrap_or(u.enabled) {
        // As in Keystone, an administrator's update of an enabled user ends a lockout.
        cmds.push(Command::ClearAuthFailures { user_id: u.id.clone() });
    }
    // The merged attributes as they stand now, for the size limit's message (apply holds
    // the limit against the record as it stands then).
    crate::http::limits::check_extra("user", &extra(&b.fields.extra, KNOWN, &u.extra))?;
    let set = extra(&b.fields.extra, KNOWN, "{}");
    patch.extra = (set != "{}").then_some(set);
    // Password set, disabled or deleted: acknowledged once every reachable node applied it.
    let severs = patch.password_hash.is_some() || patch.enabled == Some(false);
    cmds.insert(0, Command::PatchUser(patch));
    let (index, user) = node.propose_at_as::<User>(Command::All(cmds)).await?;
    if severs {
        node.wait_cluster_applied(index).await;
    }
    respond(&node, StatusCode::OK, user)
}

#[utoipa::path(delete, path = "/v3/users/{id}", operation_id = "users_delete", tag = "users",
    params(("id" = String, Path, description = "The user's id.")),
    responses((status = 204, description = "Deleted, with its memberships, grants and credentials; its tokens stop validating."), E::Change))]
pub async fn delete(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<StatusCode> {
    let u = enforce_found("identity:delete_user", &ctx, load(&node, &id), target, json!({}))?;
    guard::change_user(&node.engine.read(), node.fga.as_deref(), &ctx, &u.id)?;
    forget_in(node.fga.as_deref(), Some(Gone::user(&u.id))).await?;
    let (index, _) = node.propose_at(Command::DeleteUser { id: u.id, now: now_micros() }).await?;
    node.wait_cluster_applied(index).await;
    Ok(StatusCode::NO_CONTENT)
}
