//! `/v3/users/{user_id}/application_credentials`: create (the secret is shown once), list,
//! show, delete.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::Json;
use base64::Engine;
use serde_json::{json, Value};

use super::schemas as s;
use super::{find, id_term, name_term, render, AppCred};
use crate::clock::now_micros;
use crate::context::Core;
use crate::federation::{invalid, named_role_ids, only_keys};
use crate::http::body::{Body, Sent};
use crate::http::docs::DocApi;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::Below;
use crate::http::fields::{future_time, new_id, Obj};
use crate::http::openapi::{errors as E, to_json};
use crate::http::pages::page;
use crate::http::JsonBody;
use crate::policy::{enforce, enforce_found, guard};
use crate::reads::listing::implied_closure;
use crate::state::model::{Doc, DocKind, Ref};
use crate::state::{Command, Reader};
use crate::token::Call;
use crate::token::{TokenScope, ValidToken};

const API: DocApi = DocApi {
    kind: DocKind::ApplicationCredential,
    member: "application_credential",
    collection: "application_credentials",
    path: |id| format!("/v3/application_credentials/{id}"),
};
const RULES: DocApi = DocApi {
    kind: DocKind::AccessRule,
    member: "access_rule",
    collection: "access_rules",
    path: |id| format!("/v3/access_rules/{}", id.rsplit('/').next().unwrap_or(id)),
};
const METHODS: [&str; 6] = ["DELETE", "GET", "HEAD", "PATCH", "POST", "PUT"];

/// Delegated tokens manage no credentials; a restricted credential's token creates or deletes
/// none (Keystone's rules).
pub(crate) fn refuse_delegated(ctx: &ValidToken, managing: bool) -> ApiResult<()> {
    ctx.refuse_credential_creation()?;
    if ctx.payload.is_delegated() {
        return Err(ApiError::forbidden("You are not authorized to perform the requested action."));
    }
    if managing && ctx.app_cred.as_ref().is_some_and(|a| !a.unrestricted) {
        return Err(ApiError::forbidden(
            "You are not authorized to perform the requested action: Using method 'application_credential' is not \
             allowed for managing additional application credentials..",
        ));
    }
    Ok(())
}

fn target(user_id: &str) -> Value {
    json!({"user_id": user_id, "application_credential": {"user_id": user_id}})
}

/// The credential `id`, whoever owns it: the policy then judges the caller against its real
/// owner (Keystone's order), so a path naming the caller's own user id reaches nothing of
/// anyone else's.
fn load_by_id(node: &Core, id: &str) -> ApiResult<(Doc, AppCred)> {
    let doc = find(&node.engine.read(), id)?.ok_or_else(|| ApiError::not_found("Application Credential", id))?;
    let c = AppCred::of(&doc)?;
    Ok((doc, c))
}

/// A 64-byte random secret, URL-safe base64 without padding (Keystone's shape).
fn generate_secret() -> String {
    let mut bytes = [0u8; 64];
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut bytes);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The role ids a body asks for (by id or by name), with what they imply.
fn requested_roles(node: &Core, roles: &[Value]) -> ApiResult<Vec<String>> {
    let view = node.engine.read();
    let ids = named_role_ids(&view, roles)?;
    Ok(implied_closure(&view, &ids)?.into_iter().collect())
}

/// The access rules of a body: existing rules of the user are reused (by id, or by the same
/// service, path and method); the others are new records.
fn access_rules(node: &Core, user_id: &str, rules: &[Value]) -> ApiResult<(Vec<String>, Vec<Doc>, Vec<Ref>)> {
    let existing: Vec<Obj> = node
        .engine
        .read()
        .child_docs(DocKind::AccessRule, user_id)?
        .iter()
        .filter_map(|d| serde_json::from_str::<Obj>(&d.body).ok())
        .collect();
    let (mut ids, mut new, mut requires) = (Vec::new(), Vec::new(), Vec::new());
    for r in rules {
        let o = r.as_object().ok_or_else(|| invalid("access_rules", r, "each rule must be an object"))?;
        only_keys(o, &["id", "path", "service", "method"], "access_rules", false)?;
        let field = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
        let same = |e: &Obj| {
            ["service", "path", "method"]
                .iter()
                .all(|k| e.get(*k).and_then(Value::as_str) == o.get(*k).and_then(Value::as_str))
        };
        if let Some(id) = field("id") {
            if let Some(e) = existing.iter().find(|e| e.get("id").and_then(Value::as_str) == Some(id.as_str())) {
                requires.push(Ref::Doc(DocKind::AccessRule, format!("{user_id}/{id}")));
                ids.push(e.get("id").and_then(Value::as_str).unwrap_or(&id).to_string());
                continue;
            }
            if !o.contains_key("path") {
                return Err(ApiError::not_found("Access Rule", &id));
            }
        }
        if let Some(e) = existing.iter().find(|e| same(e)) {
            let id = e.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
            requires.push(Ref::Doc(DocKind::AccessRule, format!("{user_id}/{id}")));
            ids.push(id);
            continue;
        }
        let path = field("path").filter(|p| p.starts_with('/') && p.chars().count() <= 225);
        let service = field("service").filter(|s| !s.is_empty() && s.len() <= 64);
        let method = field("method").filter(|m| METHODS.contains(&m.as_str()));
        let (Some(path), Some(service), Some(method)) = (path, service, method) else {
            return Err(invalid(
                "access_rules",
                r,
                "a rule needs a 'path' starting with '/', a 'service' and a 'method' (one of DELETE, GET, HEAD, PATCH, POST, PUT)",
            ));
        };
        let id = new_id();
        let mut body = Obj::new();
        body.insert("id".into(), json!(id));
        body.insert("service".into(), json!(service));
        body.insert("path".into(), json!(path));
        body.insert("method".into(), json!(method));
        body.insert("user_id".into(), json!(user_id));
        new.push(RULES.record(&format!("{user_id}/{id}"), body));
        ids.push(id);
    }
    Ok((ids, new, requires))
}

/// The body's credential, as Keystone's schema wants it: nothing else in the body.
fn member(b: Body<s::AppCredRequest>) -> ApiResult<s::AppCredBody> {
    const KEY: &str = "application_credential";
    let Some(top) = b.into_inner() else {
        return Err(ApiError::bad_request(format!("'{KEY}' is a required property")));
    };
    if let Some(k) = top.extra.keys().next() {
        return Err(ApiError::bad_request(format!("Additional properties are not allowed ('{k}' was unexpected)")));
    }
    match top.application_credential {
        Sent::Is(o) => Ok(o),
        Sent::Absent => Err(ApiError::bad_request(format!("'{KEY}' is a required property"))),
        Sent::Null => Err(invalid(KEY, &Value::Null, "null is not of type 'object'")),
        Sent::Wrong(v) => Err(invalid(KEY, &v, &format!("{v} is not of type 'object'"))),
    }
}

/// The credential as sent, shown in the messages about its properties.
fn whole(o: &s::AppCredBody) -> Value {
    let mut w = o.extra.clone();
    o.name.put(&mut w, "name");
    o.description.put(&mut w, "description");
    o.secret.put(&mut w, "secret");
    o.expires_at.put(&mut w, "expires_at");
    o.unrestricted.put(&mut w, "unrestricted");
    o.roles.put(&mut w, "roles");
    o.access_rules.put(&mut w, "access_rules");
    o.id.put(&mut w, "id");
    o.project_id.put(&mut w, "project_id");
    o.system.put(&mut w, "system");
    Value::Object(w)
}

/// A string field's value when it is a non-empty string.
fn non_empty(field: &Sent<String>) -> Option<&str> {
    match field {
        Sent::Is(s) if !s.is_empty() => Some(s),
        _ => None,
    }
}

#[utoipa::path(post, path = "/v3/users/{user_id}/application_credentials", operation_id = "application_credentials_create", tag = "application_credentials",
    params(("user_id" = String, Path, description = "The owner: the caller itself.")),
    request_body(content = s::AppCredRequest, content_type = "application/json"),
    responses((status = 201, description = "The credential with its secret (shown only here).", body = s::AppCredCreated), E::Change))]
pub async fn create(
    Call(node, ctx): Call,
    Path(user_id): Path<String>,
    JsonBody(b): JsonBody<Body<s::AppCredRequest>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let o = member(b)?;
    if let Some(k) = o.extra.keys().next() {
        let why = format!("Additional properties are not allowed ('{k}' was unexpected)");
        return Err(invalid("application_credential", &whole(&o), &why));
    }
    let name = match &o.name {
        Sent::Is(n) if !n.is_empty() && n.chars().count() <= 255 => n.clone(),
        Sent::Absent => return Err(invalid("application_credential", &whole(&o), "'name' is a required property")),
        v => return Err(invalid("name", &v.value().unwrap_or_default(), "must be a string of 1 to 255 characters")),
    };
    for (k, field) in [("description", &o.description), ("secret", &o.secret), ("expires_at", &o.expires_at)] {
        if let Sent::Wrong(v) = field {
            return Err(invalid(k, v, "must be a string or null"));
        }
    }
    let unrestricted = match &o.unrestricted {
        Sent::Absent | Sent::Null => None,
        Sent::Is(b) => Some(*b),
        Sent::Wrong(v) => return Err(invalid("unrestricted", v, "must be a boolean or null")),
    };
    enforce("identity:create_application_credential", &ctx, &target(&user_id))?;
    refuse_delegated(&ctx, true)?;
    if ctx.user.id != user_id {
        return Err(ApiError::forbidden(
            "You are not authorized to perform the requested action: Cannot create an application credential for another user.",
        ));
    }
    guard::add_authenticator(&node.engine.read(), node.fga.as_deref(), &ctx, &user_id)?;
    let TokenScope::Project(project_id) = &ctx.payload.scope else {
        return Err(ApiError::forbidden("Application credentials are created with a project-scoped token."));
    };
    let now = now_micros();
    let expires_at = match non_empty(&o.expires_at) {
        Some(t) => Some(future_time(t, now)?),
        None => None,
    };
    let token_roles: Vec<String> = ctx.roles.iter().map(|r| r.id.clone()).collect();
    let role_ids = match &o.roles {
        Sent::Absent | Sent::Null => token_roles.clone(),
        Sent::Is(a) if a.is_empty() => token_roles.clone(),
        Sent::Is(a) => requested_roles(&node, a)?,
        Sent::Wrong(v) => return Err(invalid("roles", v, "must be an array")),
    };
    if role_ids.iter().any(|r| !token_roles.contains(r)) {
        return Err(ApiError::bad_request(
            "Invalid application credential: Cannot create an application credential with unassigned role",
        ));
    }
    let (rule_ids, new_rules, mut requires) = match &o.access_rules {
        Sent::Absent | Sent::Null => (Vec::new(), Vec::new(), Vec::new()),
        Sent::Is(a) => access_rules(&node, &user_id, a)?,
        Sent::Wrong(v) => return Err(invalid("access_rules", v, "must be an array")),
    };
    let secret = match non_empty(&o.secret) {
        Some(s) => s.to_string(),
        None => generate_secret(),
    };
    let secret_hash = node.hash_password(secret.clone()).await?;
    let id = new_id();
    let body = json!({
        "id": id, "name": name, "description": o.description.value().unwrap_or_default(),
        "user_id": user_id, "project_id": project_id, "expires_at": expires_at, "unrestricted": unrestricted,
        "role_ids": role_ids, "access_rule_ids": rule_ids,
    });
    let Value::Object(body) = body else { return Err(ApiError::internal("credential body")) };
    let mut doc = API.record(&format!("{user_id}/{id}"), body);
    doc.private = json!({"secret_hash": secret_hash}).to_string();
    doc.unique = vec![id_term(&id), name_term(&user_id, &name)];
    requires.push(Ref::User(user_id.clone()));
    let mut cmds: Vec<Command> =
        new_rules.into_iter().map(|d| Command::PutDoc { doc: d, create: true, requires: vec![] }).collect();
    cmds.push(Command::PutDoc { doc, create: true, requires });
    let duplicate = format!(
        "Conflict occurred attempting to store application_credential - Duplicate entry found with name {name}."
    );
    let saved: Doc = node.propose_as(Command::All(cmds)).await.map_err(|e| e.duplicate(duplicate))?;
    let credential = render(&node, &AppCred::of(&saved)?)?;
    let application_credential = s::AppCredWithSecret { credential, secret };
    Ok((StatusCode::CREATED, Json(to_json(&s::AppCredCreated { application_credential }))))
}

#[utoipa::path(get, path = "/v3/users/{user_id}/application_credentials", operation_id = "application_credentials_list", tag = "application_credentials",
    params(("user_id" = String, Path, description = "The owner."), ("name" = Option<String>, Query, description = "Only the credential of this name."),
           ("limit" = Option<u32>, Query, description = "At most this many."), ("marker" = Option<String>, Query, description = "Start after this id.")),
    responses((status = 200, description = "The user's credentials (without secrets).", body = s::AppCredList), E::List))]
pub async fn list(Call(node, ctx): Call, Below(user_id, q): Below) -> ApiResult<Json<Value>> {
    enforce("identity:list_application_credentials", &ctx, &target(&user_id))?;
    refuse_delegated(&ctx, false)?;
    let docs = node.engine.read().child_docs(API.kind, &user_id)?;
    let mut items = Vec::new();
    for d in &docs {
        let c = AppCred::of(d)?;
        if q.get("name").is_none_or(|n| *n == c.name) {
            items.push(to_json(&render(&node, &c)?));
        }
    }
    let path = format!("/v3/users/{user_id}/application_credentials");
    Ok(Json(page(API.collection, items, &node.cfg.public_base(), &path, &q)?))
}

#[utoipa::path(get, path = "/v3/users/{user_id}/application_credentials/{application_credential_id}", operation_id = "application_credentials_get", tag = "application_credentials",
    params(("user_id" = String, Path, description = "The owner."), ("application_credential_id" = String, Path, description = "The credential's id.")),
    responses((status = 200, description = "The credential (without its secret).", body = s::AppCredEnvelope), E::Read))]
pub async fn get(Call(node, ctx): Call, Path((user_id, id)): Path<(String, String)>) -> ApiResult<Json<Value>> {
    // As Keystone: the policy is asked about the credential's own user, or, when there is no
    // such credential, about the user the path names, before the 404.
    let found = load_by_id(&node, &id);
    let (_, c) = enforce_found(
        "identity:get_application_credential",
        &ctx,
        found,
        |(_, c)| target(&c.user_id),
        target(&user_id),
    )?;
    refuse_delegated(&ctx, false)?;
    let application_credential = render(&node, &c)?;
    Ok(Json(to_json(&s::AppCredEnvelope { application_credential })))
}

#[utoipa::path(delete, path = "/v3/users/{user_id}/application_credentials/{application_credential_id}", operation_id = "application_credentials_delete", tag = "application_credentials",
    params(("user_id" = String, Path, description = "The owner."), ("application_credential_id" = String, Path, description = "The credential's id.")),
    responses((status = 204, description = "Deleted; tokens from it stop validating. Its access rules stay."), E::Remove))]
pub async fn delete(Call(node, ctx): Call, Path((user_id, id)): Path<(String, String)>) -> ApiResult<StatusCode> {
    // As Keystone: the policy is asked about the credential's own user, or, when there is no
    // such credential, about the user the path names, before the 404.
    let found = load_by_id(&node, &id);
    let (doc, _) = enforce_found(
        "identity:delete_application_credential",
        &ctx,
        found,
        |(_, c)| target(&c.user_id),
        target(&user_id),
    )?;
    refuse_delegated(&ctx, true)?;
    API.delete(&node, &doc.id).await?;
    Ok(StatusCode::NO_CONTENT)
}
