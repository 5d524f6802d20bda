//! `/v4/mappings`: mapping rulesets' administration (spec "Mapping administration (v4)",
//! api-shapes §12.2). Bodies are the ruleset of §12.1 in a `mapping` envelope; every write
//! is validated (`validate`), checked against the caller (`checks`), stamped with a fresh
//! `ruleset_version` and applied by `state::apply::mappings`. Errors carry the spec's key in
//! a top-level `detail` field. Policy `identity/mapping/*`: admin, or manager of the
//! mapping's domain (global mappings: admin only).

use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::HashMap;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::model::{MappingRuleSet, RulesetVersion};
use super::mutate::{self, MutateBody};
use super::{checks, is_system, validate, MappingError};
use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::http::openapi::{errors as E, CollectionLinks};
use crate::http::pages::page_by;
use crate::http::JsonBody;
use crate::policy::{enforce, guard, Persona};
use crate::state::mapping::{MappingCommand, MappingRecord};
use crate::state::read::MappingReads;
use crate::state::Command;
use crate::token::Call;
use crate::token::{Tokens, ValidToken};

crate::http::openapi::feature_routes! {
    pub fn routes() over [Core, Tokens] {
        OpenApiRouter::new().routes(routes!(list, create)).routes(routes!(get, put, delete)).routes(routes!(mutate_rules))
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MappingEnvelope {
    pub mapping: MappingRuleSet,
}

/// Schema only (the handlers render with `json!`).
#[derive(Serialize, ToSchema)]
pub struct MappingOne {
    pub mapping: MappingRuleSet,
}

/// Schema only.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct MappingList {
    pub mappings: Vec<MappingRuleSet>,
    pub links: CollectionLinks,
}

fn authorize(action: &str, ctx: &ValidToken, domain_id: Option<&str>) -> ApiResult<()> {
    enforce(action, ctx, &json!({"mapping": {"domain_id": domain_id}}))
}

/// [`authorize`] for a write. A ruleset decides which restriction a login's tokens carry, so a
/// confined token (`token::confined`) never writes one: it could drop its own restriction.
fn authorize_change(action: &str, ctx: &ValidToken, domain_id: Option<&str>) -> ApiResult<()> {
    authorize(action, ctx, domain_id)?;
    ctx.refuse_confined("change mapping rulesets")
}

fn not_found(id: &str) -> ApiError {
    MappingError::new(404, "mapping_not_found", format!("Could not find mapping: {id}.")).into()
}

fn parse(record: &MappingRecord) -> ApiResult<MappingRuleSet> {
    MappingRuleSet::from_stored(&record.ruleset).map_err(ApiError::internal)
}

fn load(node: &Core, id: &str) -> ApiResult<MappingRuleSet> {
    let record: Option<MappingRecord> = node.engine.read().mapping_record(id)?;
    parse(&record.ok_or_else(|| not_found(id))?)
}

fn valid_id(id: &str) -> ApiResult<()> {
    let ok =
        !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        return Ok(());
    }
    Err(ApiError::bad_request("Invalid input for field 'mapping_id': 1 to 64 letters, digits, '_' or '-'."))
}

fn immutable(id: &str) -> ApiError {
    MappingError::invalid(
        "system_mapping_immutable",
        format!("Mapping {id} is a system mapping: it cannot be changed, only deleted."),
    )
    .into()
}

/// The checks of every write, in the order that names the most specific problem: the modes
/// only an admin may use (before validation forces `domain_id` null in them), the stateless
/// validation, then both tiers.
fn prepare(node: &Core, ctx: &ValidToken, rs: &mut MappingRuleSet) -> ApiResult<()> {
    checks::mode(ctx, rs)?;
    validate::validate(rs)?;
    let view = node.engine.read();
    checks::tiers(&view, node.fga.as_deref(), ctx, rs)?;
    checks::scim_realm(&view, rs)?;
    checks::restrictions(&view, rs)
}

/// Stamps a fresh version and applies; answers once every reachable member has the change
/// (tokens minted from the old version stop validating everywhere at once).
async fn save(
    node: &Core,
    mut rs: MappingRuleSet,
    create: bool,
    expected: Option<RulesetVersion>,
) -> ApiResult<MappingRuleSet> {
    rs.ruleset_version = Some(RulesetVersion::fresh());
    let ruleset = rs.to_stored().map_err(ApiError::internal)?;
    let cmd = MappingCommand::Put { ruleset, create, expected_version: expected.map(|v| v.to_string()) };
    let (index, record) = node.propose_at_as::<MappingRecord>(cmd).await?;
    node.wait_cluster_applied(index).await;
    parse(&record)
}

fn one(rs: MappingRuleSet) -> Json<Value> {
    Json(json!({ "mapping": rs }))
}

#[utoipa::path(get, path = "/v4/mappings", operation_id = "v4_mappings_list", tag = "mappings",
    params(("domain_id" = Option<String>, Query, description = "Only the rulesets of this domain (default for a domain-scoped caller: its domain)."),
           ("limit" = Option<u32>, Query, description = "At most this many."),
           ("marker" = Option<String>, Query, description = "Start after this mapping id.")),
    responses((status = 200, description = "The rulesets, in mapping id order.", body = MappingList), E::BadRequest, E::Unauthorized, E::Forbidden,
              E::Internal))]
pub async fn list(Call(node, ctx): Call, Query(q): Query<HashMap<String, String>>) -> ApiResult<Json<Value>> {
    let domain = match q.get("domain_id") {
        Some(d) => Some(d.clone()),
        None if checks::is_admin(&ctx) => None,
        None => Persona { ctx: &ctx }.listing_domain().map(str::to_string),
    };
    authorize("identity/mapping/list", &ctx, domain.as_deref())?;
    let records: Vec<MappingRecord> = node.engine.read().mapping_records()?;
    let mut items = Vec::new();
    for r in records.iter().filter(|r| domain.is_none() || r.domain_id == domain) {
        items.push((r.mapping_id.clone(), json!(parse(r)?)));
    }
    Ok(Json(page_by("mappings", items, &node.cfg.public_base(), "/v4/mappings", &q)?))
}

#[utoipa::path(post, path = "/v4/mappings", operation_id = "v4_mappings_create", tag = "mappings",
    request_body(content = MappingEnvelope, content_type = "application/json"),
    responses((status = 201, description = "The ruleset, with its mapping_id (assigned when absent) and ruleset_version.", body = MappingOne), E::BadRequest,
              E::Unauthorized, E::Forbidden, E::NotFound, E::Conflict, E::Unprocessable, E::Internal, E::Unavailable))]
pub async fn create(
    Call(node, ctx): Call,
    JsonBody(b): JsonBody<MappingEnvelope>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let mut rs = b.mapping;
    // A non-admin targeting another domain: named as such, not as a bare policy refusal.
    if let Some(d) = rs.domain_id.as_deref().filter(|d| !checks::is_admin(&ctx) && *d != checks::own_domain(&ctx)) {
        return Err(MappingError::new(
            403,
            "cross_domain_mapping",
            format!("Only an administrator may create a mapping in domain {d}."),
        )
        .into());
    }
    authorize_change("identity/mapping/create", &ctx, rs.domain_id.as_deref())?;
    let id = rs.mapping_id.get_or_insert_with(|| uuid::Uuid::new_v4().simple().to_string()).clone();
    valid_id(&id)?;
    prepare(&node, &ctx, &mut rs)?;
    Ok((StatusCode::CREATED, one(save(&node, rs, true, None).await?)))
}

#[utoipa::path(get, path = "/v4/mappings/{mapping_id}", operation_id = "v4_mappings_get", tag = "mappings",
    params(("mapping_id" = String, Path, description = "The ruleset.")),
    responses((status = 200, description = "The ruleset.", body = MappingOne), E::Read))]
pub async fn get(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    let rs = load(&node, &id)?;
    authorize("identity/mapping/show", &ctx, rs.domain_id.as_deref())?;
    Ok(one(rs))
}

#[utoipa::path(put, path = "/v4/mappings/{mapping_id}", operation_id = "v4_mappings_put", tag = "mappings",
    params(("mapping_id" = String, Path, description = "The ruleset.")),
    request_body(content = MappingEnvelope, content_type = "application/json"),
    responses((status = 200, description = "The replaced ruleset, with a fresh ruleset_version.", body = MappingOne), E::BadRequest, E::Unauthorized,
              E::Forbidden, E::NotFound, E::Conflict, E::Unprocessable, E::Internal, E::Unavailable))]
pub async fn put(
    Call(node, ctx): Call,
    Path(id): Path<String>,
    JsonBody(b): JsonBody<MappingEnvelope>,
) -> ApiResult<Json<Value>> {
    let before = load(&node, &id)?;
    authorize_change("identity/mapping/update", &ctx, before.domain_id.as_deref())?;
    let mut rs = b.mapping;
    if rs.mapping_id.as_ref().is_some_and(|m| *m != id) {
        return Err(ApiError::bad_request("Invalid input for field 'mapping_id': it must be the path's."));
    }
    rs.mapping_id = Some(id.clone());
    if is_system(&before) {
        return Err(immutable(&id));
    }
    prepare(&node, &ctx, &mut rs)?;
    if rs.domain_id != before.domain_id {
        return Err(MappingError::invalid(
            "domain_id_immutable",
            format!("The domain_id of mapping {id} cannot change."),
        )
        .into());
    }
    Ok(one(save(&node, rs, false, before.ruleset_version).await?))
}

#[utoipa::path(post, path = "/v4/mappings/{mapping_id}/rules/mutate", operation_id = "v4_mappings_mutate_rules", tag = "mappings",
    params(("mapping_id" = String, Path, description = "The ruleset.")),
    request_body(content = MutateBody, content_type = "application/json"),
    responses((status = 200, description = "The ruleset after every mutation (all or none apply), with a fresh ruleset_version.", body = MappingOne),
              E::BadRequest, E::Unauthorized, E::Forbidden, E::NotFound,
              (status = 409, description = "An anchor or rule_name names no rule, or the ruleset changed meanwhile.", body = crate::http::openapi::ErrorBody),
              E::Unprocessable, E::Internal, E::Unavailable))]
pub async fn mutate_rules(
    Call(node, ctx): Call,
    Path(id): Path<String>,
    JsonBody(b): JsonBody<MutateBody>,
) -> ApiResult<Json<Value>> {
    let before = load(&node, &id)?;
    authorize_change("identity/mapping/update", &ctx, before.domain_id.as_deref())?;
    if is_system(&before) {
        return Err(immutable(&id));
    }
    let mut rs = before.clone();
    rs.rules = mutate::apply(rs.rules, b.mutations)?;
    prepare(&node, &ctx, &mut rs)?;
    Ok(one(save(&node, rs, false, before.ruleset_version).await?))
}

#[utoipa::path(delete, path = "/v4/mappings/{mapping_id}", operation_id = "v4_mappings_delete", tag = "mappings",
    params(("mapping_id" = String, Path, description = "The ruleset.")),
    responses((status = 204, description = "Deleted (system mappings too)."), E::Remove))]
pub async fn delete(Call(node, ctx): Call, Path(id): Path<String>) -> ApiResult<StatusCode> {
    let rs = load(&node, &id)?;
    authorize_change("identity/mapping/delete", &ctx, rs.domain_id.as_deref())?;
    guard::change_global(&ctx, rs.domain_id.as_deref(), "delete a global mapping ruleset")?;
    let (index, _) = node.propose_at(Command::Mapping(MappingCommand::Delete { id })).await?;
    node.wait_cluster_applied(index).await;
    Ok(StatusCode::NO_CONTENT)
}
