//! `/v3/OS-TRUST/trusts`: create (by the trustor), list (by filter and policy), show, the
//! trust's roles, delete (with the trusts redelegated from it).

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::schemas as s;
use super::{load, render, roles, Trust};
use crate::assignment::roles::role;
use crate::assignment::schemas::{RoleEnvelope, RoleList};
use crate::clock::now_micros;
use crate::context::Core;
use crate::federation::{invalid, named_role_ids};
use crate::http::body::{Body, Sent};
use crate::http::docs::DocApi;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{future_time, new_id};
use crate::http::openapi::{errors as E, to_json, CollectionLinks};
use crate::http::pages::page;
use crate::http::JsonBody;
use crate::policy::enforce;
use crate::reads::effective;
use crate::state::model::{Doc, DocKind, Ref, Target};
use crate::state::{Command, Reader};
use crate::token::Call;
use crate::token::ValidToken;

const API: DocApi = DocApi {
    kind: DocKind::Trust,
    member: "trust",
    collection: "trusts",
    path: |id| format!("/v3/OS-TRUST/trusts/{id}"),
};
/// Keystone's `[trust] max_redelegation_count`.
const MAX_REDELEGATION: i64 = 3;

/// Tokens from signed requests and application credentials manage no trusts.
fn refuse_delegated(ctx: &ValidToken) -> ApiResult<()> {
    ctx.refuse_credential_creation()?;
    if ctx.payload.is_delegated() || ctx.payload.app_cred().is_some() {
        return Err(ApiError::forbidden(
            "You are not authorized to perform the requested action: Delegated tokens cannot manage trusts..",
        ));
    }
    Ok(())
}

fn parties(t: &Trust) -> Value {
    json!({"trust": {"trustor_user_id": t.trustor_user_id, "trustee_user_id": t.trustee_user_id}})
}

/// The trust as sent, shown in the messages about a missing property.
fn whole(b: &s::TrustBody) -> Value {
    let mut o = b.extra.clone();
    b.trustor_user_id.put(&mut o, "trustor_user_id");
    b.trustee_user_id.put(&mut o, "trustee_user_id");
    b.impersonation.put(&mut o, "impersonation");
    b.project_id.put(&mut o, "project_id");
    b.roles.put(&mut o, "roles");
    b.expires_at.put(&mut o, "expires_at");
    b.remaining_uses.put(&mut o, "remaining_uses");
    b.allow_redelegation.put(&mut o, "allow_redelegation");
    b.redelegation_count.put(&mut o, "redelegation_count");
    b._redelegated_trust_id.put(&mut o, "redelegated_trust_id");
    b._id.put(&mut o, "id");
    Value::Object(o)
}

/// A present field's JSON as sent.
fn raw<T: serde::Serialize>(field: &Sent<T>) -> Value {
    field.value().unwrap_or(Value::Null)
}

fn opt_int(field: &Sent<i64>, key: &str, min: i64) -> ApiResult<Option<i64>> {
    match field {
        Sent::Absent | Sent::Null => Ok(None),
        Sent::Is(n) if *n >= min => Ok(Some(*n)),
        Sent::Is(n) => Err(invalid(key, &raw(field), &format!("{n} is less than the minimum of {min}"))),
        Sent::Wrong(v) => Err(invalid(key, v, &format!("{v} is not of type 'integer', 'null'"))),
    }
}

fn req_str(b: &s::TrustBody, field: &Sent<String>, key: &str) -> ApiResult<String> {
    match field {
        Sent::Is(s) if !s.is_empty() && s.len() <= 64 => Ok(s.clone()),
        Sent::Absent => Err(invalid("trust", &whole(b), &format!("'{key}' is a required property"))),
        _ => Err(invalid(key, &raw(field), "must be a string of 1 to 64 characters")),
    }
}

/// The role ids a create body names, by id or by name.
fn named_roles(node: &Core, roles: &Sent<Vec<Value>>) -> ApiResult<Vec<String>> {
    let list = match roles {
        Sent::Absent | Sent::Null => return Ok(Vec::new()),
        Sent::Wrong(v) => return Err(invalid("roles", v, "must be an array")),
        Sent::Is(list) => list,
    };
    let mut ids = named_role_ids(&node.engine.read(), list)?;
    ids.sort();
    ids.dedup();
    Ok(ids)
}

#[utoipa::path(post, path = "/v3/OS-TRUST/trusts", operation_id = "trusts_create", tag = "trusts",
    request_body(content = s::TrustRequest, content_type = "application/json"),
    responses((status = 201, description = "The trust.", body = s::TrustEnvelope), E::Edit))]
pub async fn create(
    Call(node, ctx): Call,
    JsonBody(b): JsonBody<Body<s::TrustRequest>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let b = b.object()?.trust.envelope("trust")?;
    let trustor = req_str(&b, &b.trustor_user_id, "trustor_user_id")?;
    let trustee = req_str(&b, &b.trustee_user_id, "trustee_user_id")?;
    let impersonation = match &b.impersonation {
        Sent::Is(i) => *i,
        Sent::Absent => return Err(invalid("trust", &whole(&b), "'impersonation' is a required property")),
        v => {
            let v = raw(v);
            return Err(invalid("impersonation", &v, &format!("{v} is not of type 'boolean'")));
        }
    };
    let project_id = match &b.project_id {
        Sent::Absent | Sent::Null => None,
        Sent::Is(p) => Some(p.clone()),
        Sent::Wrong(v) => return Err(invalid("project_id", v, "must be a string or null")),
    };
    let mut remaining_uses = opt_int(&b.remaining_uses, "remaining_uses", 1)?;
    let allow_redelegation = match &b.allow_redelegation {
        Sent::Absent | Sent::Null => false,
        Sent::Is(a) => *a,
        Sent::Wrong(v) => return Err(invalid("allow_redelegation", v, "must be a boolean or null")),
    };
    let requested_count = opt_int(&b.redelegation_count, "redelegation_count", 0)?;
    enforce("identity:create_trust", &ctx, &json!({"trust": {"trustor_user_id": trustor}}))?;
    refuse_delegated(&ctx)?;
    let role_ids = named_roles(&node, &b.roles)?;
    if project_id.is_some() && role_ids.is_empty() {
        return Err(ApiError::forbidden(
            "You are not authorized to perform the requested action: At least one role should be specified.",
        ));
    }
    if ctx.user.id != trustor {
        return Err(ApiError::forbidden(
            "You are not authorized to perform the requested action: The authenticated user should match the trustor.",
        ));
    }
    let now = now_micros();
    let mut expires_at = match &b.expires_at {
        Sent::Is(t) => Some(future_time(t, now)?),
        _ => None,
    };
    if node.engine.read().user(&trustee)?.is_none() {
        return Err(ApiError::not_found("user", &trustee));
    }
    if let Some(p) = &project_id {
        node.engine.read().project(p)?.filter(|p| !p.is_domain).ok_or_else(|| ApiError::not_found("project", p))?;
        let held: Vec<String> = effective::user_roles(&node, &trustor, &Target::Project(p.clone()))
            .await?
            .into_iter()
            .map(|r| r.id)
            .collect();
        if let Some(missing) = role_ids.iter().find(|r| !held.contains(r)) {
            return Err(ApiError::not_found("role", missing));
        }
    }
    let (redelegation_count, redelegated_trust_id) = match ctx.payload.trust() {
        // Redelegation: only within what the token's own trust allows.
        Some(parent_id) => {
            let parent = load(&node, parent_id)?;
            let within = parent.redelegation_count > 0
                && role_ids.iter().all(|r| parent.role_ids.contains(r))
                && (parent.impersonation || !impersonation)
                && remaining_uses.is_none();
            if !within {
                return Err(ApiError::forbidden("You are not authorized to perform the requested action."));
            }
            match (parent.expires_at, expires_at) {
                (Some(p), Some(e)) if e > p => {
                    return Err(ApiError::forbidden("You are not authorized to perform the requested action."))
                }
                (Some(p), None) => expires_at = Some(p),
                _ => {}
            }
            (parent.redelegation_count - 1, Some(parent.id))
        }
        None if allow_redelegation => {
            if remaining_uses.is_some() {
                return Err(ApiError::bad_request("remaining_uses must not be set if redelegation is allowed"));
            }
            let count = requested_count.unwrap_or(MAX_REDELEGATION);
            if count > MAX_REDELEGATION {
                return Err(ApiError::forbidden("You are not authorized to perform the requested action."));
            }
            (count, None)
        }
        None => (0, None),
    };
    if redelegated_trust_id.is_some() {
        remaining_uses = None;
    }
    let extra = b.extra;
    let id = new_id();
    let body = json!({
        "id": id, "trustor_user_id": trustor, "trustee_user_id": trustee, "project_id": project_id,
        "impersonation": impersonation, "expires_at": expires_at, "remaining_uses": remaining_uses,
        "redelegated_trust_id": redelegated_trust_id, "redelegation_count": redelegation_count,
        "role_ids": role_ids, "extra": extra,
    });
    let Value::Object(body) = body else { return Err(ApiError::internal("trust body")) };
    let mut requires = vec![Ref::User(trustor), Ref::User(trustee)];
    requires.extend(project_id.map(Ref::Project));
    let saved: Doc = node.propose_as(Command::PutDoc { doc: API.record(&id, body), create: true, requires }).await?;
    let trust = render(&node, &Trust::of(&saved)?, true)?;
    Ok((StatusCode::CREATED, Json(to_json(&s::TrustEnvelope { trust }))))
}

async fn list_trusts(node: &Core, ctx: &ValidToken, q: &HashMap<String, String>) -> ApiResult<Json<Value>> {
    let (action, target) = match (q.get("trustor_user_id"), q.get("trustee_user_id")) {
        (Some(tor), _) => ("identity:list_trusts_for_trustor", json!({"trust": {"trustor_user_id": tor}})),
        (None, Some(tee)) => ("identity:list_trusts_for_trustee", json!({"trust": {"trustee_user_id": tee}})),
        (None, None) => ("identity:list_trusts", json!({})),
    };
    enforce(action, ctx, &target)?;
    refuse_delegated(ctx)?;
    let mut items = Vec::new();
    for d in node.engine.read().docs(API.kind)? {
        let t = Trust::of(&d)?;
        let keep = q.get("trustor_user_id").is_none_or(|u| *u == t.trustor_user_id)
            && q.get("trustee_user_id").is_none_or(|u| *u == t.trustee_user_id);
        if keep {
            items.push(to_json(&render(node, &t, false)?));
        }
    }
    Ok(Json(page(API.collection, items, &node.cfg.public_base(), "/v3/OS-TRUST/trusts", q)?))
}

#[utoipa::path(get, path = "/v3/OS-TRUST/trusts", operation_id = "trusts_list", tag = "trusts",
    params(("trustor_user_id" = Option<String>, Query, description = "Trusts given by this user."),
           ("trustee_user_id" = Option<String>, Query, description = "Trusts held by this user."),
           ("limit" = Option<u32>, Query, description = "At most this many."), ("marker" = Option<String>, Query, description = "Start after this id.")),
    responses((status = 200, description = "The trusts (without their roles).", body = s::TrustList), E::List))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    list_trusts(&node, &ctx, &q).await
}

/// The same list at `trusts/`, where tempest's client asks.
#[utoipa::path(get, path = "/v3/OS-TRUST/trusts/", operation_id = "trusts_list_slash", tag = "trusts",
    params(("trustor_user_id" = Option<String>, Query, description = "Trusts given by this user."),
           ("trustee_user_id" = Option<String>, Query, description = "Trusts held by this user.")),
    responses((status = 200, description = "The trusts (without their roles).", body = s::TrustList), E::List))]
pub async fn list_slash(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    list_trusts(&node, &ctx, &q).await
}

#[utoipa::path(get, path = "/v3/OS-TRUST/trusts/{trust_id}", operation_id = "trusts_get", tag = "trusts",
    params(("trust_id" = String, Path, description = "The trust's id.")),
    responses((status = 200, description = "The trust.", body = s::TrustEnvelope), E::Read))]
pub async fn get(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let t = load(&node, &id)?;
    enforce("identity:get_trust", &ctx, &parties(&t))?;
    refuse_delegated(&ctx)?;
    let trust = render(&node, &t, true)?;
    Ok(Json(to_json(&s::TrustEnvelope { trust })))
}

#[utoipa::path(get, path = "/v3/OS-TRUST/trusts/{trust_id}/roles", operation_id = "trusts_roles", tag = "trusts",
    params(("trust_id" = String, Path, description = "The trust's id.")),
    responses((status = 200, description = "The delegated roles.", body = RoleList), E::Read))]
pub async fn roles_list(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let t = load(&node, &id)?;
    enforce("identity:list_roles_for_trust", &ctx, &parties(&t))?;
    refuse_delegated(&ctx)?;
    let base = node.cfg.public_base();
    let roles = roles(&node.engine.read(), &t)?.iter().map(|r| role(r, &base)).collect();
    let links = CollectionLinks::whole(format!("{base}/v3/OS-TRUST/trusts/{id}/roles"));
    Ok(Json(to_json(&RoleList { roles, links })))
}

#[utoipa::path(get, path = "/v3/OS-TRUST/trusts/{trust_id}/roles/{role_id}", operation_id = "trusts_role_get", tag = "trusts",
    params(("trust_id" = String, Path, description = "The trust's id."), ("role_id" = String, Path, description = "The role's id.")),
    responses((status = 200, description = "The role, delegated by the trust (HEAD: whether it is).", body = RoleEnvelope), E::Read))]
pub async fn role_get(Call(node, ctx): Call, Path((id, role_id)): Path<(String, String)>) -> ApiResult<Json<Value>> {
    let t = load(&node, &id)?;
    enforce("identity:get_role_for_trust", &ctx, &parties(&t))?;
    refuse_delegated(&ctx)?;
    let found = roles(&node.engine.read(), &t)?
        .into_iter()
        .find(|r| r.id == role_id)
        .ok_or_else(|| ApiError::not_found("role", &role_id))?;
    let role = role(&found, &node.cfg.public_base());
    Ok(Json(to_json(&RoleEnvelope { role })))
}

#[utoipa::path(delete, path = "/v3/OS-TRUST/trusts/{trust_id}", operation_id = "trusts_delete", tag = "trusts",
    params(("trust_id" = String, Path, description = "The trust's id.")),
    responses((status = 204, description = "Deleted, with the trusts redelegated from it; their tokens stop validating."), E::Remove))]
pub async fn delete(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<StatusCode> {
    let doc = node.engine.read().doc(API.kind, &id)?.ok_or_else(|| ApiError::not_found("trust", &id))?;
    let t = Trust::of(&doc)?;
    enforce("identity:delete_trust", &ctx, &parties(&t))?;
    refuse_delegated(&ctx)?;
    // The chain redelegated from it goes too.
    let all: Vec<Trust> = node.engine.read().docs(API.kind)?.iter().map(Trust::of).collect::<ApiResult<_>>()?;
    let mut doomed = vec![t.id.clone()];
    let mut at = 0;
    while at < doomed.len() {
        let parent = doomed[at].clone();
        doomed.extend(all.iter().filter(|c| c.redelegated_trust_id.as_deref() == Some(&parent)).map(|c| c.id.clone()));
        at += 1;
    }
    let cmds = doomed.into_iter().map(|id| Command::DeleteDoc { kind: API.kind, id }).collect();
    node.propose(Command::All(cmds)).await?;
    Ok(StatusCode::NO_CONTENT)
}
