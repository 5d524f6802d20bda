//! Role implication rules: `/v3/roles/{prior_role_id}/implies[/{implied_role_id}]` and
//! `/v3/role_inferences`. Note Keystone's shape switch: `implies` is a list on the listing
//! calls and a single role on the single-rule calls.

use std::collections::BTreeMap;

use axum::extract::Path;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::roles;
use super::schemas as s;
use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::http::openapi::{errors as E, to_json, SelfLink};
use crate::policy::enforce;
use crate::state::model::Role;
use crate::state::read::AssignmentReads;
use crate::state::{Command, Reader};
use crate::token::Call;

fn role_ref(r: &Role, base: &str) -> s::RoleRef {
    s::RoleRef {
        id: r.id.clone(),
        name: r.name.clone(),
        domain_id: r.domain_id.clone(),
        links: SelfLink::new(base, &format!("/v3/roles/{}", r.id)),
    }
}

/// The roles with these ids, as rule members (an unknown id is left out).
fn role_refs(view: &impl Reader, ids: impl IntoIterator<Item = String>, base: &str) -> ApiResult<Vec<s::RoleRef>> {
    let mut out = Vec::new();
    for id in ids {
        if let Some(r) = view.role(&id)? {
            out.push(role_ref(&r, base));
        }
    }
    Ok(out)
}

fn rule_target(prior: &Role, implied: Option<&Role>) -> Value {
    json!({"prior_role": roles::target(prior)["role"], "implied_role": implied.map(|i| roles::target(i)["role"].clone())})
}

fn single(node: &Core, prior: &Role, implied: &Role) -> Value {
    let base = node.cfg.public_base();
    to_json(&s::InferenceRuleEnvelope {
        role_inference: s::InferenceRule { prior_role: role_ref(prior, &base), implies: role_ref(implied, &base) },
        links: SelfLink::new(&base, &format!("/v3/roles/{}/implies/{}", prior.id, implied.id)),
    })
}

/// Loads both roles and checks the rule exists: 404 otherwise.
fn load_rule(node: &Core, prior_id: &str, implied_id: &str) -> ApiResult<(Role, Role)> {
    let prior = roles::load(node, prior_id)?;
    let implied = roles::load(node, implied_id)?;
    if !node.engine.read().implied_rule_exists(prior_id, implied_id)? {
        return Err(ApiError::new(StatusCode::NOT_FOUND, format!("{prior_id} does not imply {implied_id}.")));
    }
    Ok((prior, implied))
}

#[utoipa::path(get, path = "/v3/roles/{id}/implies", operation_id = "implied_list_for_prior", tag = "roles",
    params(("id" = String, Path, description = "The prior role's id.")),
    responses((status = 200, description = "The roles the prior role implies.", body = s::PriorRoleInferencesEnvelope), E::Read))]
pub async fn list_for_prior(Call(node, ctx): Call, Path(prior_id): Path<String>) -> ApiResult<Json<Value>> {
    let prior = roles::load(&node, &prior_id)?;
    enforce("identity:list_implied_roles", &ctx, &rule_target(&prior, None))?;
    let view = node.engine.snapshot();
    let base = node.cfg.public_base();
    let rules: Vec<(String, String)> = view.implied_rules_of(&prior.id)?;
    let implies = role_refs(&view, rules.into_iter().map(|(_, implied)| implied), &base)?;
    Ok(Json(to_json(&s::PriorRoleInferencesEnvelope {
        role_inference: s::PriorRoleInferences { prior_role: role_ref(&prior, &base), implies },
        links: SelfLink::new(&base, &format!("/v3/roles/{}/implies", prior.id)),
    })))
}

#[utoipa::path(get, path = "/v3/roles/{id}/implies/{implied_id}", operation_id = "implied_get", tag = "roles", description = "404 when either role does not exist or the rule does not.",
    params(("id" = String, Path, description = "The prior role's id."), ("implied_id" = String, Path, description = "The implied role's id.")),
    responses((status = 200, description = "The rule.", body = s::InferenceRuleEnvelope), E::Read))]
pub async fn get(
    Call(node, ctx): Call,
    Path((prior_id, implied_id)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let (prior, implied) = load_rule(&node, &prior_id, &implied_id)?;
    enforce("identity:get_implied_role", &ctx, &rule_target(&prior, Some(&implied)))?;
    Ok(Json(single(&node, &prior, &implied)))
}

#[utoipa::path(head, path = "/v3/roles/{id}/implies/{implied_id}", operation_id = "implied_check", tag = "roles", description = "404 when either role does not exist or the rule does not.",
    params(("id" = String, Path, description = "The prior role's id."), ("implied_id" = String, Path, description = "The implied role's id.")),
    responses((status = 204, description = "The rule exists."), E::Read))]
pub async fn check(
    Call(node, ctx): Call,
    Path((prior_id, implied_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let (prior, implied) = load_rule(&node, &prior_id, &implied_id)?;
    enforce("identity:check_implied_role", &ctx, &rule_target(&prior, Some(&implied)))?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(put, path = "/v3/roles/{id}/implies/{implied_id}", operation_id = "implied_create", tag = "roles", description = "No request body. 404 when either role does not exist.",
    params(("id" = String, Path, description = "The prior role's id."), ("implied_id" = String, Path, description = "The implied role's id.")),
    responses((status = 201, description = "The created rule.", body = s::InferenceRuleEnvelope), E::Change))]
pub async fn create(
    Call(node, ctx): Call,
    Path((prior_id, implied_id)): Path<(String, String)>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let prior = roles::load(&node, &prior_id)?;
    let implied = roles::load(&node, &implied_id)?;
    enforce("identity:create_implied_role", &ctx, &rule_target(&prior, Some(&implied)))?;
    node.propose(Command::CreateImpliedRole { prior_role_id: prior.id.clone(), implied_role_id: implied.id.clone() })
        .await?;
    Ok((StatusCode::CREATED, Json(single(&node, &prior, &implied))))
}

#[utoipa::path(delete, path = "/v3/roles/{id}/implies/{implied_id}", operation_id = "implied_delete", tag = "roles",
    params(("id" = String, Path, description = "The prior role's id."), ("implied_id" = String, Path, description = "The implied role's id.")),
    responses((status = 204, description = "The rule is gone."), E::Change))]
pub async fn delete(
    Call(node, ctx): Call,
    Path((prior_id, implied_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let (prior, implied) = load_rule(&node, &prior_id, &implied_id)?;
    enforce("identity:delete_implied_role", &ctx, &rule_target(&prior, Some(&implied)))?;
    node.propose(Command::DeleteImpliedRole { prior_role_id: prior.id, implied_role_id: implied.id }).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Every rule, grouped by prior role.
#[utoipa::path(get, path = "/v3/role_inferences", operation_id = "implied_list_all", tag = "roles",
    responses((status = 200, description = "Every inference rule, grouped by prior role.", body = s::RoleInferenceList), E::List))]
pub async fn list_all(Call(node, ctx): Call) -> ApiResult<Json<Value>> {
    enforce("identity:list_role_inference_rules", &ctx, &json!({}))?;
    let view = node.engine.snapshot();
    let base = node.cfg.public_base();
    let mut by_prior: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (prior, implied) in view.implied_rules()? {
        by_prior.entry(prior).or_default().push(implied);
    }
    let mut role_inferences = Vec::new();
    for (prior, implied) in by_prior {
        let Some(prior) = view.role(&prior)? else { continue };
        let implies = role_refs(&view, implied, &base)?;
        role_inferences.push(s::PriorRoleInferences { prior_role: role_ref(&prior, &base), implies });
    }
    let links = SelfLink::new(&base, "/v3/role_inferences");
    Ok(Json(to_json(&s::RoleInferenceList { role_inferences, links })))
}
