//! `/v4/scim-realms` (api-shapes §11.10): create, list (`domain_id` required), show and PATCH
//! at `/v4/scim-realms/{domain_id}/{provider_id}`. Policy `identity/scim_realm/*`: an
//! administrator, or a manager of the realm's domain; PATCH is `disable` (the spec names no
//! update policy, and disabling is what a PATCH is for). `idp_id` must name a registered OIDC
//! identity provider, global or of the realm's domain (404 otherwise).

use std::collections::HashMap;

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::ToSchema;

use crate::audit::event::{scim_write, Action, Outcome, ScimInitiator, ScimWrite};
use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::http::openapi::errors as E;
use crate::http::pages::page_by;
use crate::http::JsonBody;
use crate::openfga::forget::{forget_in, Gone};
use crate::policy::{enforce, guard};
use crate::providers::registry::{find, handle, text};
use crate::state::providers::ProviderKind;
use crate::state::read::ScimReads;
use crate::state::scim::{Kind, RealmRef, ScimCommand, ScimRealm, ScimResourceIndex};
use crate::token::Call;
use crate::token::ValidToken;

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateBody {
    pub domain_id: String,
    /// The provider coordinate the realm's API keys and mapping ruleset share.
    pub provider_id: String,
    /// A registered OIDC identity provider (global or of the domain).
    pub idp_id: String,
    pub display_name: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEnvelope {
    pub scim_realm: CreateBody,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchBody {
    pub idp_id: Option<String>,
    pub display_name: Option<String>,
    pub enabled: Option<bool>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchEnvelope {
    pub scim_realm: PatchBody,
}

/// A realm as the API shows it (times: unix seconds).
#[derive(Serialize, ToSchema)]
pub struct RealmView {
    pub domain_id: String,
    pub provider_id: String,
    pub idp_id: String,
    pub display_name: String,
    pub enabled: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Serialize, ToSchema)]
pub struct RealmOne {
    pub scim_realm: RealmView,
}

/// Schema only.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct RealmList {
    pub scim_realms: Vec<RealmView>,
    pub links: crate::http::openapi::CollectionLinks,
}

fn view(r: &ScimRealm) -> RealmView {
    RealmView {
        domain_id: r.domain_id.clone(),
        provider_id: r.provider_id.clone(),
        idp_id: r.idp_id.clone(),
        display_name: r.display_name.clone(),
        enabled: r.enabled,
        created_at: r.created_at,
        updated_at: r.updated_at,
    }
}

fn authorize(action: &str, ctx: &ValidToken, domain_id: &str) -> ApiResult<()> {
    enforce(&format!("identity/scim_realm/{action}"), ctx, &json!({"scim_realm": {"domain_id": domain_id}}))
}

/// The identity provider a realm of `domain_id` may name: registered, and global or of the
/// domain.
fn resolve_idp(node: &Core, idp_id: &str, domain_id: &str) -> ApiResult<()> {
    let idp = find(node, ProviderKind::Oidc, idp_id)?;
    if idp.domain_id.as_deref().is_some_and(|d| d != domain_id) {
        return Err(ApiError::not_found(ProviderKind::Oidc.resource(), idp_id));
    }
    Ok(())
}

/// The realm of a provider coordinate (404 when none).
pub fn load(node: &Core, domain_id: &str, provider_id: &str) -> ApiResult<ScimRealm> {
    node.engine.read().scim_realm(domain_id, provider_id)?.ok_or_else(|| ApiError::not_found("scim_realm", provider_id))
}

async fn save(node: &Core, realm: ScimRealm, create: bool) -> ApiResult<ScimRealm> {
    let (index, realm) = node.propose_at_as(ScimCommand::PutRealm { realm: Box::new(realm), create }).await?;
    // A disabled realm refuses SCIM everywhere once this answers.
    node.wait_cluster_applied(index).await;
    Ok(realm)
}

#[utoipa::path(post, path = "/v4/scim-realms", operation_id = "v4_scim_realms_create", tag = "scim",
    request_body(content = CreateEnvelope, content_type = "application/json"),
    responses((status = 201, description = "The realm.", body = RealmOne), E::BadRequest, E::Unauthorized, E::Forbidden,
              (status = 404, description = "The domain or the identity provider does not exist.", body = crate::http::openapi::ErrorBody), E::Conflict,
              E::Internal, E::Unavailable))]
pub async fn create(
    Call(node, ctx): Call,
    JsonBody(b): JsonBody<CreateEnvelope>,
) -> ApiResult<(StatusCode, Json<RealmOne>)> {
    let b = b.scim_realm;
    authorize("create", &ctx, &b.domain_id)?;
    let provider_id = handle(b.provider_id)?;
    let display_name = text("display_name", b.display_name, 255)?;
    resolve_idp(&node, &b.idp_id, &b.domain_id)?;
    let now = crate::clock::now_secs();
    let realm = ScimRealm {
        domain_id: b.domain_id,
        provider_id,
        idp_id: b.idp_id,
        display_name,
        enabled: true,
        created_at: now,
        updated_at: now,
    };
    let realm = save(&node, realm, true).await?;
    Ok((StatusCode::CREATED, Json(RealmOne { scim_realm: view(&realm) })))
}

#[utoipa::path(get, path = "/v4/scim-realms", operation_id = "v4_scim_realms_list", tag = "scim",
    params(("domain_id" = String, Query, description = "The domain whose realms to list (required)."),
           ("enabled" = Option<bool>, Query, description = "Only enabled (true) or disabled (false) realms."),
           ("limit" = Option<u32>, Query, description = "At most this many."),
           ("marker" = Option<String>, Query, description = "Start after this provider_id.")),
    responses((status = 200, description = "The domain's realms, in provider_id order.", body = RealmList), E::BadRequest, E::Unauthorized, E::Forbidden,
              E::Internal))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    let domain = q.get("domain_id").filter(|d| !d.is_empty()).cloned().ok_or_else(|| {
        ApiError::bad_request("Invalid input for field 'domain_id': the query parameter is required.")
    })?;
    authorize("list", &ctx, &domain)?;
    let enabled = match q.get("enabled").map(String::as_str) {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(_) => return Err(ApiError::bad_request("Invalid input for field 'enabled': true or false.")),
    };
    let realms: Vec<ScimRealm> = node.engine.read().scim_realms_of_domain(&domain)?;
    let items = realms
        .iter()
        .filter(|r| enabled.is_none_or(|e| r.enabled == e))
        .map(|r| (r.provider_id.clone(), json!(view(r))))
        .collect();
    Ok(Json(page_by("scim_realms", items, &node.cfg.public_base(), "/v4/scim-realms", &q)?))
}

#[utoipa::path(get, path = "/v4/scim-realms/{domain_id}/{provider_id}", operation_id = "v4_scim_realms_get", tag = "scim",
    params(("domain_id" = String, Path, description = "The realm's domain."), ("provider_id" = String, Path, description = "The realm's provider coordinate.")),
    responses((status = 200, description = "The realm.", body = RealmOne), E::Read))]
pub async fn get(
    Call(node, ctx): Call,
    Path((domain_id, provider_id)): Path<(String, String)>,
) -> ApiResult<Json<RealmOne>> {
    authorize("show", &ctx, &domain_id)?;
    Ok(Json(RealmOne { scim_realm: view(&load(&node, &domain_id, &provider_id)?) }))
}

#[utoipa::path(patch, path = "/v4/scim-realms/{domain_id}/{provider_id}", operation_id = "v4_scim_realms_patch", tag = "scim",
    params(("domain_id" = String, Path, description = "The realm's domain."), ("provider_id" = String, Path, description = "The realm's provider coordinate.")),
    request_body(content = PatchEnvelope, content_type = "application/json"),
    responses((status = 200, description = "The realm as changed; a disabled realm refuses SCIM requests (403).", body = RealmOne), E::BadRequest,
              E::Unauthorized, E::Forbidden,
              (status = 404, description = "No such realm, or the new identity provider does not exist.", body = crate::http::openapi::ErrorBody), E::Internal,
              E::Unavailable))]
pub async fn patch(
    Call(node, ctx): Call,
    Path((domain_id, provider_id)): Path<(String, String)>,
    JsonBody(b): JsonBody<PatchEnvelope>,
) -> ApiResult<Json<RealmOne>> {
    authorize("disable", &ctx, &domain_id)?;
    let mut realm = load(&node, &domain_id, &provider_id)?;
    let b = b.scim_realm;
    if let Some(idp) = b.idp_id {
        resolve_idp(&node, &idp, &domain_id)?;
        realm.idp_id = idp;
    }
    if let Some(name) = b.display_name {
        realm.display_name = text("display_name", name, 255)?;
    }
    if let Some(enabled) = b.enabled {
        realm.enabled = enabled;
    }
    realm.updated_at = crate::clock::now_secs();
    Ok(Json(RealmOne { scim_realm: view(&save(&node, realm, false).await?) }))
}

#[utoipa::path(delete, path = "/v4/scim-realms/{domain_id}/{provider_id}/purge/{resource_type}/{keystone_id}", operation_id = "v4_scim_realms_purge", tag = "scim",
    params(("domain_id" = String, Path, description = "The realm's domain."), ("provider_id" = String, Path, description = "The realm's provider coordinate."),
           ("resource_type" = String, Path, description = "`user` or `group`."),
           ("keystone_id" = String, Path, description = "The user or group id (its SCIM id).")),
    responses((status = 204, description = "Hard-deleted, with its index entries; a `delete` audit event names the caller."), E::Unauthorized, E::Forbidden,
              (status = 404, description = "No such realm, resource type, or resource of this realm.", body = crate::http::openapi::ErrorBody),
              (status = 409, description = "The resource is not deprovisioned (DELETE it through SCIM first).", body = crate::http::openapi::ErrorBody),
              E::Internal, E::Unavailable))]
pub async fn purge(
    Call(node, ctx): Call,
    Path((domain_id, provider_id, resource_type, keystone_id)): Path<(String, String, String, String)>,
) -> ApiResult<StatusCode> {
    authorize("purge", &ctx, &domain_id)?;
    load(&node, &domain_id, &provider_id)?;
    let kind = Kind::parse(&resource_type).ok_or_else(|| ApiError::not_found("SCIM resource type", &resource_type))?;
    // The realm's own administrators may purge what it provisioned, but not a privileged
    // user or group: that stays with a cloud administrator.
    match kind {
        Kind::User => guard::change_user(&node.engine.read(), node.fga.as_deref(), &ctx, &keystone_id)?,
        Kind::Group => guard::change_group(&node.engine.read(), node.fga.as_deref(), &ctx, &keystone_id)?,
    }
    forget_in(node.fga.as_deref(), Gone::of_scim_purge(&node.engine.read(), kind, &keystone_id)?).await?;
    let realm = RealmRef { domain_id, provider_id };
    let cmd = ScimCommand::Purge { realm, kind, id: keystone_id, deprovisioned_by: None };
    let gone: ScimResourceIndex = node.propose_as(cmd).await?;
    node.audit.emit(scim_write(&ScimWrite {
        action: Action::Delete,
        kind,
        resource_id: &gone.keystone_id,
        realm_provider_id: &gone.provider_id,
        external_id: gone.external_id.as_deref(),
        initiator: ScimInitiator::User(&ctx.user.id),
        outcome: Outcome::Success,
    }));
    Ok(StatusCode::NO_CONTENT)
}
