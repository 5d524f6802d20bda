//! `/v3/domains/{domain_id}/config`: per-domain identity settings (Keystone's domain
//! configuration API), limited to Keystone's whitelist of `identity` and `ldap` options.
//! idnode stores and serves them (Keystone does the same unless domain-specific drivers are
//! on); its own identity backend is the replicated store whatever they say. `ldap.password` is
//! kept sealed and never shown.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Map, Value};

use super::schemas as s;
use crate::context::Core;
use crate::http::body::{Body, Sent};
use crate::http::docs::DocApi;
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{json_obj, Obj};
use crate::http::openapi::{errors as E, to_json};
use crate::http::JsonBody;
use crate::policy::enforce;
use crate::state::model::{Doc, DocKind, Ref};
use crate::state::Reader;
use crate::token::{Call, Caller};

const API: DocApi = DocApi {
    kind: DocKind::DomainConfig,
    member: "config",
    collection: "configs",
    path: |id| format!("/v3/domains/{id}/config"),
};

/// The options a domain's configuration takes (Keystone's built-in whitelist); also what
/// `idnode import keystone` moves.
pub(crate) const IDENTITY_OPTIONS: &[&str] = &["driver", "list_limit"];
pub(crate) const LDAP_OPTIONS: &[&str] = &[
    "url",
    "user",
    "suffix",
    "query_scope",
    "page_size",
    "alias_dereferencing",
    "debug_level",
    "chase_referrals",
    "user_tree_dn",
    "user_filter",
    "user_objectclass",
    "user_id_attribute",
    "user_name_attribute",
    "user_mail_attribute",
    "user_description_attribute",
    "user_pass_attribute",
    "user_enabled_attribute",
    "user_enabled_invert",
    "user_enabled_mask",
    "user_enabled_default",
    "user_attribute_ignore",
    "user_default_project_id_attribute",
    "user_enabled_emulation",
    "user_enabled_emulation_dn",
    "user_enabled_emulation_use_group_config",
    "user_additional_attribute_mapping",
    "group_tree_dn",
    "group_filter",
    "group_objectclass",
    "group_id_attribute",
    "group_name_attribute",
    "group_members_are_ids",
    "group_member_attribute",
    "group_desc_attribute",
    "group_attribute_ignore",
    "group_additional_attribute_mapping",
    "tls_cacertfile",
    "tls_cacertdir",
    "use_tls",
    "tls_req_cert",
    "use_pool",
    "pool_size",
    "pool_retry_max",
    "pool_retry_delay",
    "pool_connection_timeout",
    "pool_connection_lifetime",
    "use_auth_pool",
    "auth_pool_size",
    "auth_pool_connection_lifetime",
];
/// Stored but never shown.
pub(crate) const SENSITIVE: &[(&str, &str)] = &[("ldap", "password")];

/// The defaults a domain without its own value gets (Keystone's option defaults).
const DEFAULTS: &str = r#"{
        "identity": {"driver": "sql", "list_limit": null},
        "ldap": {"url": "ldap://localhost", "user": null, "suffix": "cn=example,cn=com", "query_scope": "one",
            "page_size": 0, "alias_dereferencing": "default", "debug_level": null, "chase_referrals": null,
            "user_tree_dn": null, "user_filter": null, "user_objectclass": "inetOrgPerson",
            "user_id_attribute": "cn", "user_name_attribute": "sn", "user_mail_attribute": "mail",
            "user_description_attribute": "description", "user_pass_attribute": "userPassword",
            "user_enabled_attribute": "enabled", "user_enabled_invert": false, "user_enabled_mask": 0,
            "user_enabled_default": "True", "user_attribute_ignore": ["default_project_id"],
            "user_default_project_id_attribute": null, "user_enabled_emulation": false,
            "user_enabled_emulation_dn": null, "user_enabled_emulation_use_group_config": false,
            "user_additional_attribute_mapping": [], "group_tree_dn": null, "group_filter": null,
            "group_objectclass": "groupOfNames", "group_id_attribute": "cn", "group_name_attribute": "ou",
            "group_members_are_ids": false, "group_member_attribute": "member",
            "group_desc_attribute": "description", "group_attribute_ignore": [],
            "group_additional_attribute_mapping": [], "tls_cacertfile": null, "tls_cacertdir": null,
            "use_tls": false, "tls_req_cert": "demand", "use_pool": true, "pool_size": 10, "pool_retry_max": 3,
            "pool_retry_delay": 0.1, "pool_connection_timeout": -1, "pool_connection_lifetime": 600,
            "use_auth_pool": true, "auth_pool_size": 100, "auth_pool_connection_lifetime": 60}
    }"#;

fn defaults() -> Value {
    serde_json::from_str(DEFAULTS).unwrap_or_else(|_| json!({}))
}

fn options_of(group: &str) -> Option<&'static [&'static str]> {
    match group {
        "identity" => Some(IDENTITY_OPTIONS),
        "ldap" => Some(LDAP_OPTIONS),
        _ => None,
    }
}

/// `{"config": ...}`, the body of every answer here.
fn config_body(config: impl Into<Value>) -> Json<Value> {
    Json(to_json(&s::DomainConfig { config: config.into() }))
}

fn forbidden(what: String) -> ApiError {
    ApiError::forbidden(format!("Invalid domain specific configuration: {what}."))
}

/// A `{group: {option: value}}` object with only whitelisted groups and options.
fn checked(config: &Value) -> ApiResult<Obj> {
    let groups = config
        .as_object()
        .ok_or_else(|| ApiError::bad_request("Invalid input for field 'config': must be an object."))?;
    if groups.is_empty() {
        return Err(ApiError::bad_request("Invalid input for field 'config': must have at least 1 property."));
    }
    for (g, opts) in groups {
        let allowed = options_of(g)
            .ok_or_else(|| forbidden(format!("Group {g} is not supported for domain specific configurations")))?;
        let opts = opts
            .as_object()
            .ok_or_else(|| ApiError::bad_request(format!("Invalid input for field '{g}': must be an object.")))?;
        for o in opts.keys() {
            if !allowed.contains(&o.as_str()) && !SENSITIVE.contains(&(g.as_str(), o.as_str())) {
                return Err(forbidden(format!(
                    "Option {o} in group {g} is not supported for domain specific configurations"
                )));
            }
        }
    }
    Ok(groups.clone())
}

/// Merges `new` into the stored config, sensitive options into `secrets`.
fn merge(base: &mut Obj, secrets: &mut Obj, new: Obj) {
    for (g, opts) in new {
        let Value::Object(opts) = opts else { continue };
        for (o, v) in opts {
            let target = if SENSITIVE.contains(&(g.as_str(), o.as_str())) { &mut *secrets } else { &mut *base };
            if let Some(group) = target.entry(g.clone()).or_insert_with(|| json!({})).as_object_mut() {
                group.insert(o, v);
            }
        }
    }
}

fn load_domain(node: &Core, id: &str) -> ApiResult<()> {
    node.engine.read().domain(id)?.map(|_| ()).ok_or_else(|| ApiError::not_found("domain", id))
}

fn stored(node: &Core, domain_id: &str) -> ApiResult<Option<Doc>> {
    Ok(node.engine.read().doc(API.kind, domain_id)?)
}

fn no_config(domain_id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!("Could not find Domain Config: No options specified for domain {domain_id}."),
    )
}

fn config_of(d: &Doc) -> Obj {
    match json_obj(&d.body) {
        Value::Object(o) => o,
        _ => Obj::new(),
    }
}

async fn save(node: &Core, domain_id: &str, config: Obj, secrets: Obj, create: bool) -> ApiResult<Obj> {
    let mut doc = API.record(domain_id, config);
    doc.private = Value::Object(secrets).to_string();
    let saved = API.save(node, doc, create, vec![Ref::Domain(domain_id.to_string())]).await?;
    Ok(config_of(&saved))
}

/// The `{group: ...}` or `{option: value}` part a path names.
fn pick(config: &Obj, group: Option<&str>, option: Option<&str>, missing: impl Fn() -> ApiError) -> ApiResult<Value> {
    let Some(g) = group else { return Ok(Value::Object(config.clone())) };
    let opts = config.get(g).and_then(Value::as_object).ok_or_else(&missing)?;
    match option {
        None => Ok(json!({g: opts})),
        Some(o) => opts.get(o).map(|v| json!({o: v})).ok_or_else(&missing),
    }
}

fn missing_in(domain_id: &str, group: &str, option: Option<&str>) -> impl Fn() -> ApiError {
    let what = match option {
        Some(o) => format!("option {o} in group {group}"),
        None => format!("group {group}"),
    };
    let domain_id = domain_id.to_string();
    move || {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("Could not find {what} in domain configuration for domain {domain_id}."),
        )
    }
}

fn check_path(group: Option<&str>, option: Option<&str>) -> ApiResult<()> {
    if let Some(g) = group {
        let allowed = options_of(g)
            .ok_or_else(|| forbidden(format!("Group {g} is not supported for domain specific configurations")))?;
        if let Some(o) = option {
            if !allowed.contains(&o) && !SENSITIVE.contains(&(g, o)) {
                return Err(forbidden(format!(
                    "Option {o} in group {g} is not supported for domain specific configurations"
                )));
            }
        }
    }
    Ok(())
}

async fn show(
    node: &Core,
    ctx: &crate::token::ValidToken,
    domain_id: &str,
    group: Option<&str>,
    option: Option<&str>,
) -> ApiResult<Json<Value>> {
    enforce("identity:get_domain_config", ctx, &json!({"domain_id": domain_id}))?;
    check_path(group, option)?;
    load_domain(node, domain_id)?;
    let d = stored(node, domain_id)?.ok_or_else(|| no_config(domain_id))?;
    let config = config_of(&d);
    let part = match group {
        Some(g) => pick(&config, Some(g), option, missing_in(domain_id, g, option))?,
        None => Value::Object(config),
    };
    Ok(config_body(part))
}

/// The body's `config`, which must be there (a body that is not an object has none).
fn sent_config(body: Body<s::DomainConfigEnvelope>) -> ApiResult<Value> {
    match body.into_inner().map(|b| b.config) {
        Some(Sent::Is(v) | Sent::Wrong(v)) => Ok(v),
        Some(Sent::Null) => Ok(Value::Null),
        Some(Sent::Absent) | None => Err(ApiError::bad_request("'config' is a required property.")),
    }
}

async fn update_at(
    node: &Core,
    ctx: &crate::token::ValidToken,
    domain_id: &str,
    group: Option<&str>,
    option: Option<&str>,
    body: Body<s::DomainConfigEnvelope>,
) -> ApiResult<Json<Value>> {
    enforce("identity:update_domain_config", ctx, &json!({"domain_id": domain_id}))?;
    let sent = sent_config(body)?;
    let new = match (group, option) {
        (Some(g), Some(o)) => {
            let only = sent.as_object().filter(|m| m.len() == 1 && m.contains_key(o));
            let v = only.and_then(|m| m.get(o)).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "Invalid domain specific configuration: the body must name option {o} only."
                ))
            })?;
            checked(&json!({g: {o: v}}))?
        }
        (Some(g), None) => {
            if sent.as_object().is_none_or(|m| m.len() != 1 || !m.contains_key(g)) {
                return Err(ApiError::bad_request(format!(
                    "Invalid domain specific configuration: the body must name group {g} only."
                )));
            }
            checked(&sent)?
        }
        _ => checked(&sent)?,
    };
    load_domain(node, domain_id)?;
    let d = stored(node, domain_id)?.ok_or_else(|| no_config(domain_id))?;
    let mut config = config_of(&d);
    if let Some(g) = group {
        pick(&config, Some(g), option, missing_in(domain_id, g, option))?;
    }
    let mut secrets = match json_obj(&d.private) {
        Value::Object(o) => o,
        _ => Obj::new(),
    };
    merge(&mut config, &mut secrets, new);
    Ok(config_body(save(node, domain_id, config, secrets, false).await?))
}

async fn delete_at(
    node: &Core,
    ctx: &crate::token::ValidToken,
    domain_id: &str,
    group: Option<&str>,
    option: Option<&str>,
) -> ApiResult<StatusCode> {
    enforce("identity:delete_domain_config", ctx, &json!({"domain_id": domain_id}))?;
    check_path(group, option)?;
    load_domain(node, domain_id)?;
    let Some(d) = stored(node, domain_id)? else {
        return match group {
            None => Ok(StatusCode::NO_CONTENT),
            Some(_) => Err(no_config(domain_id)),
        };
    };
    let Some(g) = group else {
        API.delete(node, domain_id).await?;
        return Ok(StatusCode::NO_CONTENT);
    };
    let mut config = config_of(&d);
    pick(&config, Some(g), option, missing_in(domain_id, g, option))?;
    match option {
        Some(o) => {
            if let Some(Value::Object(opts)) = config.get_mut(g) {
                opts.remove(o);
                if opts.is_empty() {
                    config.remove(g);
                }
            }
        }
        None => {
            config.remove(g);
        }
    }
    let secrets = match json_obj(&d.private) {
        Value::Object(o) => o,
        _ => Obj::new(),
    };
    save(node, domain_id, config, secrets, false).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(put, path = "/v3/domains/{domain_id}/config", operation_id = "domain_config_replace", tag = "domains",
    params(("domain_id" = String, Path, description = "The domain's id.")),
    request_body(content = s::DomainConfigEnvelope, content_type = "application/json"),
    responses((status = 201, description = "The domain's first configuration.", body = s::DomainConfig),
              (status = 200, description = "The configuration, replaced.", body = s::DomainConfig), E::Edit))]
pub async fn replace(
    Call(node, ctx): Call,
    Path(domain_id): Path<String>,
    JsonBody(b): JsonBody<Body<s::DomainConfigEnvelope>>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    enforce("identity:create_domain_config", &ctx, &json!({"domain_id": domain_id}))?;
    let sent = sent_config(b)?;
    let new = checked(&sent)?;
    load_domain(&node, &domain_id)?;
    let existed = stored(&node, &domain_id)?.is_some();
    let (mut config, mut secrets) = (Map::new(), Map::new());
    merge(&mut config, &mut secrets, new);
    let out = save(&node, &domain_id, config, secrets, !existed).await?;
    let status = if existed { StatusCode::OK } else { StatusCode::CREATED };
    Ok((status, config_body(out)))
}

#[utoipa::path(get, path = "/v3/domains/{domain_id}/config", operation_id = "domain_config_get", tag = "domains",
    params(("domain_id" = String, Path, description = "The domain's id.")),
    responses((status = 200, description = "The configuration (sensitive options left out).", body = s::DomainConfig), E::Read))]
pub async fn get(Call(node, ctx): Call, Path(domain_id): Path<String>) -> ApiResult<Json<Value>> {
    show(&node, &ctx, &domain_id, None, None).await
}

#[utoipa::path(patch, path = "/v3/domains/{domain_id}/config", operation_id = "domain_config_update", tag = "domains",
    params(("domain_id" = String, Path, description = "The domain's id.")),
    request_body(content = s::DomainConfigEnvelope, content_type = "application/json"),
    responses((status = 200, description = "The whole configuration after the merge.", body = s::DomainConfig), E::Edit))]
pub async fn update(
    Call(node, ctx): Call,
    Path(domain_id): Path<String>,
    JsonBody(b): JsonBody<Body<s::DomainConfigEnvelope>>,
) -> ApiResult<Json<Value>> {
    update_at(&node, &ctx, &domain_id, None, None, b).await
}

#[utoipa::path(delete, path = "/v3/domains/{domain_id}/config", operation_id = "domain_config_delete", tag = "domains",
    params(("domain_id" = String, Path, description = "The domain's id.")),
    responses((status = 204, description = "Deleted."), E::Remove))]
pub async fn delete(Call(node, ctx): Call, Path(domain_id): Path<String>) -> ApiResult<StatusCode> {
    delete_at(&node, &ctx, &domain_id, None, None).await
}

#[utoipa::path(get, path = "/v3/domains/{domain_id}/config/{group}", operation_id = "domain_config_group_get", tag = "domains",
    params(("domain_id" = String, Path, description = "The domain's id."), ("group" = String, Path, description = "identity or ldap.")),
    responses((status = 200, description = "The group.", body = s::DomainConfig), E::Read))]
pub async fn group_get(
    Call(node, ctx): Call,
    Path((domain_id, group)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    if group == "security_compliance" {
        return security_compliance(&node, &ctx, &domain_id, None);
    }
    show(&node, &ctx, &domain_id, Some(&group), None).await
}

#[utoipa::path(patch, path = "/v3/domains/{domain_id}/config/{group}", operation_id = "domain_config_group_update", tag = "domains",
    params(("domain_id" = String, Path, description = "The domain's id."), ("group" = String, Path, description = "identity or ldap.")),
    request_body(content = s::DomainConfigEnvelope, content_type = "application/json"),
    responses((status = 200, description = "The whole configuration after the merge.", body = s::DomainConfig), E::Edit))]
pub async fn group_update(
    Call(node, ctx): Call,
    Path((domain_id, group)): Path<(String, String)>,
    JsonBody(b): JsonBody<Body<s::DomainConfigEnvelope>>,
) -> ApiResult<Json<Value>> {
    update_at(&node, &ctx, &domain_id, Some(&group), None, b).await
}

#[utoipa::path(delete, path = "/v3/domains/{domain_id}/config/{group}", operation_id = "domain_config_group_delete", tag = "domains",
    params(("domain_id" = String, Path, description = "The domain's id."), ("group" = String, Path, description = "identity or ldap.")),
    responses((status = 204, description = "Deleted."), E::Remove))]
pub async fn group_delete(
    Call(node, ctx): Call,
    Path((domain_id, group)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    delete_at(&node, &ctx, &domain_id, Some(&group), None).await
}

#[utoipa::path(get, path = "/v3/domains/{domain_id}/config/{group}/{option}", operation_id = "domain_config_option_get", tag = "domains",
    params(("domain_id" = String, Path, description = "The domain's id."), ("group" = String, Path, description = "identity or ldap."),
           ("option" = String, Path, description = "The option.")),
    responses((status = 200, description = "`{option: value}`.", body = Object), E::Read))]
pub async fn option_get(
    Call(node, ctx): Call,
    Path((domain_id, group, option)): Path<(String, String, String)>,
) -> ApiResult<Json<Value>> {
    if group == "security_compliance" {
        return security_compliance(&node, &ctx, &domain_id, Some(&option));
    }
    show(&node, &ctx, &domain_id, Some(&group), Some(&option)).await
}

#[utoipa::path(patch, path = "/v3/domains/{domain_id}/config/{group}/{option}", operation_id = "domain_config_option_update", tag = "domains",
    params(("domain_id" = String, Path, description = "The domain's id."), ("group" = String, Path, description = "identity or ldap."),
           ("option" = String, Path, description = "The option.")),
    request_body(content = s::DomainConfigEnvelope, content_type = "application/json"),
    responses((status = 200, description = "The whole configuration after the change.", body = s::DomainConfig), E::Edit))]
pub async fn option_update(
    Call(node, ctx): Call,
    Path((domain_id, group, option)): Path<(String, String, String)>,
    JsonBody(b): JsonBody<Body<s::DomainConfigEnvelope>>,
) -> ApiResult<Json<Value>> {
    update_at(&node, &ctx, &domain_id, Some(&group), Some(&option), b).await
}

#[utoipa::path(delete, path = "/v3/domains/{domain_id}/config/{group}/{option}", operation_id = "domain_config_option_delete", tag = "domains",
    params(("domain_id" = String, Path, description = "The domain's id."), ("group" = String, Path, description = "identity or ldap."),
           ("option" = String, Path, description = "The option.")),
    responses((status = 204, description = "Deleted."), E::Remove))]
pub async fn option_delete(
    Call(node, ctx): Call,
    Path((domain_id, group, option)): Path<(String, String, String)>,
) -> ApiResult<StatusCode> {
    delete_at(&node, &ctx, &domain_id, Some(&group), Some(&option)).await
}

/// Keystone lets any user read the password rules that apply to them.
fn security_compliance(
    node: &Core,
    ctx: &crate::token::ValidToken,
    domain_id: &str,
    option: Option<&str>,
) -> ApiResult<Json<Value>> {
    enforce("identity:get_security_compliance_domain_config", ctx, &json!({"domain_id": domain_id}))?;
    load_domain(node, domain_id)?;
    let sc = &node.cfg.security;
    let all = json!({
        "password_regex": sc.password_regex.as_ref().map(|r| r.as_str().trim_start_matches("^(?:").trim_end_matches(')').to_string()),
        "password_regex_description": sc.password_regex_description,
    });
    match option {
        None => Ok(config_body(all)),
        Some(o) => match all.get(o) {
            Some(v) => Ok(config_body(json!({o: v}))),
            None => Err(forbidden(format!("Reading security compliance information for any domain other than the default is not supported, nor is reading option {o}"))),
        },
    }
}

fn default_part(group: Option<&str>, option: Option<&str>) -> ApiResult<Json<Value>> {
    check_path(group, option)?;
    let d = match defaults() {
        Value::Object(o) => o,
        _ => Obj::new(),
    };
    let missing = || ApiError::not_found("default configuration option", option.or(group).unwrap_or(""));
    Ok(config_body(pick(&d, group, option, missing)?))
}

#[utoipa::path(get, path = "/v3/domains/config/default", operation_id = "domain_config_default", tag = "domains",
    responses((status = 200, description = "The defaults a domain's configuration starts from.", body = s::DomainConfig), E::List))]
pub async fn default_get(Caller(ctx): Caller) -> ApiResult<Json<Value>> {
    enforce("identity:get_domain_config_default", &ctx, &json!({}))?;
    default_part(None, None)
}

#[utoipa::path(get, path = "/v3/domains/config/{group}/default", operation_id = "domain_config_default_group", tag = "domains",
    params(("group" = String, Path, description = "identity or ldap.")),
    responses((status = 200, description = "A group's defaults.", body = s::DomainConfig), E::List))]
pub async fn default_group(Caller(ctx): Caller, Path(group): Path<String>) -> ApiResult<Json<Value>> {
    enforce("identity:get_domain_config_default", &ctx, &json!({}))?;
    default_part(Some(&group), None)
}

#[utoipa::path(get, path = "/v3/domains/config/{group}/{option}/default", operation_id = "domain_config_default_option", tag = "domains",
    params(("group" = String, Path, description = "identity or ldap."), ("option" = String, Path, description = "The option.")),
    responses((status = 200, description = "An option's default.", body = Object), E::List))]
pub async fn default_option(
    Caller(ctx): Caller,
    Path((group, option)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    enforce("identity:get_domain_config_default", &ctx, &json!({}))?;
    default_part(Some(&group), Some(&option))
}
