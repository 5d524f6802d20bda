//! OS-ENDPOINT-POLICY: a policy blob tied to an endpoint, to a service, or to a service in a
//! region, so an endpoint can ask which policy is its own (see `policy_lookup` for the
//! order). Each target holds at most one policy: tying another replaces it, as Keystone's SQL
//! backend does. Every operation asks the policy first (403 before any lookup), then looks
//! up the policy, then the endpoint, service and region, as Keystone does.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::policies;
use super::policy_lookup::{self as lookup, Target, KIND};
use super::render;
use super::schemas as s;
use crate::context::Core;
use crate::http::docs::DocApi;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::Below;
use crate::http::fields::Obj;
use crate::http::openapi::{errors as E, to_json};
use crate::http::pages::page;
use crate::policy::enforce;
use crate::state::model::{DocKind, Ref};
use crate::state::{Command, Reader};
use crate::token::Call;

const API: DocApi = DocApi {
    kind: KIND,
    member: "policy_association",
    collection: "policy_associations",
    path: |id| format!("/v3/OS-ENDPOINT-POLICY/{id}"),
};

/// What a request names, each looked up in Keystone's order: policy, endpoint or service,
/// region.
fn load(node: &Core, policy_id: &str, target: &Target<'_>) -> ApiResult<()> {
    policies::API.load(node, policy_id)?;
    let read = node.engine.read();
    let (service, region) = match target {
        Target::Endpoint(e) => {
            read.endpoint(e)?.ok_or_else(|| ApiError::not_found("endpoint", e))?;
            return Ok(());
        }
        Target::Service(s) => (*s, None),
        Target::ServiceInRegion(s, r) => (*s, Some(*r)),
    };
    read.service(service)?.ok_or_else(|| ApiError::not_found("service", service))?;
    if let Some(r) = region {
        read.region(r)?.ok_or_else(|| ApiError::not_found("region", r))?;
    }
    Ok(())
}

/// The record's body and the records it needs to exist when it is stored.
fn record(policy_id: &str, target: &Target<'_>) -> (Obj, Vec<Ref>) {
    let mut body = Obj::new();
    body.insert("policy_id".into(), json!(policy_id));
    let mut requires = vec![Ref::Doc(DocKind::Policy, policy_id.to_string())];
    match target {
        Target::Endpoint(e) => {
            body.insert("endpoint_id".into(), json!(e));
            requires.push(Ref::Endpoint(e.to_string()));
        }
        Target::Service(s) => {
            body.insert("service_id".into(), json!(s));
            requires.push(Ref::Service(s.to_string()));
        }
        Target::ServiceInRegion(s, r) => {
            body.insert("service_id".into(), json!(s));
            body.insert("region_id".into(), json!(r));
            requires.push(Ref::Service(s.to_string()));
            requires.push(Ref::Region(r.to_string()));
        }
    }
    (body, requires)
}

async fn associate(node: &Core, policy_id: &str, target: Target<'_>) -> ApiResult<StatusCode> {
    load(node, policy_id, &target)?;
    let key = target.key();
    let (body, requires) = record(policy_id, &target);
    let mut attempts = 0;
    loop {
        let held = lookup::associated(&node.engine.read(), &target)?;
        if held.as_deref() == Some(policy_id) {
            return Ok(StatusCode::NO_CONTENT);
        }
        match API.save(node, API.record(&key, body.clone()), held.is_none(), requires.clone()).await {
            Ok(_) => return Ok(StatusCode::NO_CONTENT),
            // A concurrent tie or untie of the same target moved under us: read it again.
            Err(e) if attempts < 2 && (e.status == StatusCode::CONFLICT || e.status == StatusCode::NOT_FOUND) => {
                attempts += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

fn check(node: &Core, policy_id: &str, target: Target<'_>) -> ApiResult<StatusCode> {
    load(node, policy_id, &target)?;
    match lookup::associated(&node.engine.read(), &target)? {
        Some(p) if p == policy_id => Ok(StatusCode::NO_CONTENT),
        _ => Err(ApiError::not_found_msg("Could not find policy association.")),
    }
}

/// Unties `policy_id` from the target; 204 also when it was not tied (Keystone's).
async fn dissociate(node: &Core, policy_id: &str, target: Target<'_>) -> ApiResult<StatusCode> {
    load(node, policy_id, &target)?;
    if lookup::associated(&node.engine.read(), &target)?.as_deref() == Some(policy_id) {
        match node.propose(Command::DeleteDoc { kind: KIND, id: target.key() }).await {
            Err(e) if e.status == StatusCode::NOT_FOUND => {}
            other => {
                other?;
            }
        }
    }
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(get, path = "/v3/policies/{policy_id}/OS-ENDPOINT-POLICY/endpoints/{endpoint_id}", operation_id = "endpoint_policy_check", tag = "catalog",
    params(("policy_id" = String, Path, description = "The policy's id."), ("endpoint_id" = String, Path, description = "The endpoint's id.")),
    responses((status = 204, description = "The policy is tied to the endpoint (HEAD likewise)."), E::Read))]
pub async fn endpoint_check(
    Call(node, ctx): Call,
    Path((policy_id, id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    enforce("identity:check_policy_association_for_endpoint", &ctx, &json!({}))?;
    check(&node, &policy_id, Target::Endpoint(&id))
}

#[utoipa::path(put, path = "/v3/policies/{policy_id}/OS-ENDPOINT-POLICY/endpoints/{endpoint_id}", operation_id = "endpoint_policy_put", tag = "catalog",
    params(("policy_id" = String, Path, description = "The policy's id."), ("endpoint_id" = String, Path, description = "The endpoint's id.")),
    responses((status = 204, description = "Tied; replaces the policy the endpoint had."), E::Remove))]
pub async fn endpoint_put(
    Call(node, ctx): Call,
    Path((policy_id, id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    enforce("identity:create_policy_association_for_endpoint", &ctx, &json!({}))?;
    associate(&node, &policy_id, Target::Endpoint(&id)).await
}

#[utoipa::path(delete, path = "/v3/policies/{policy_id}/OS-ENDPOINT-POLICY/endpoints/{endpoint_id}", operation_id = "endpoint_policy_delete", tag = "catalog",
    params(("policy_id" = String, Path, description = "The policy's id."), ("endpoint_id" = String, Path, description = "The endpoint's id.")),
    responses((status = 204, description = "Untied (also when it was not tied)."), E::Remove))]
pub async fn endpoint_delete(
    Call(node, ctx): Call,
    Path((policy_id, id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    enforce("identity:delete_policy_association_for_endpoint", &ctx, &json!({}))?;
    dissociate(&node, &policy_id, Target::Endpoint(&id)).await
}

#[utoipa::path(get, path = "/v3/policies/{policy_id}/OS-ENDPOINT-POLICY/services/{service_id}", operation_id = "service_policy_check", tag = "catalog",
    params(("policy_id" = String, Path, description = "The policy's id."), ("service_id" = String, Path, description = "The service's id.")),
    responses((status = 204, description = "The policy is tied to the service (HEAD likewise)."), E::Read))]
pub async fn service_check(
    Call(node, ctx): Call,
    Path((policy_id, id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    enforce("identity:check_policy_association_for_service", &ctx, &json!({}))?;
    check(&node, &policy_id, Target::Service(&id))
}

#[utoipa::path(put, path = "/v3/policies/{policy_id}/OS-ENDPOINT-POLICY/services/{service_id}", operation_id = "service_policy_put", tag = "catalog",
    params(("policy_id" = String, Path, description = "The policy's id."), ("service_id" = String, Path, description = "The service's id.")),
    responses((status = 204, description = "Tied; replaces the policy the service had."), E::Remove))]
pub async fn service_put(
    Call(node, ctx): Call,
    Path((policy_id, id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    enforce("identity:create_policy_association_for_service", &ctx, &json!({}))?;
    associate(&node, &policy_id, Target::Service(&id)).await
}

#[utoipa::path(delete, path = "/v3/policies/{policy_id}/OS-ENDPOINT-POLICY/services/{service_id}", operation_id = "service_policy_delete", tag = "catalog",
    params(("policy_id" = String, Path, description = "The policy's id."), ("service_id" = String, Path, description = "The service's id.")),
    responses((status = 204, description = "Untied (also when it was not tied)."), E::Remove))]
pub async fn service_delete(
    Call(node, ctx): Call,
    Path((policy_id, id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    enforce("identity:delete_policy_association_for_service", &ctx, &json!({}))?;
    dissociate(&node, &policy_id, Target::Service(&id)).await
}

#[utoipa::path(get, path = "/v3/policies/{policy_id}/OS-ENDPOINT-POLICY/services/{service_id}/regions/{region_id}", operation_id = "region_policy_check", tag = "catalog",
    params(("policy_id" = String, Path, description = "The policy's id."), ("service_id" = String, Path, description = "The service's id."),
           ("region_id" = String, Path, description = "The region's id.")),
    responses((status = 204, description = "The policy is tied to the service in the region (HEAD likewise)."), E::Read))]
pub async fn region_check(
    Call(node, ctx): Call,
    Path((policy_id, service, region)): Path<(String, String, String)>,
) -> ApiResult<StatusCode> {
    enforce("identity:check_policy_association_for_region_and_service", &ctx, &json!({}))?;
    check(&node, &policy_id, Target::ServiceInRegion(&service, &region))
}

#[utoipa::path(put, path = "/v3/policies/{policy_id}/OS-ENDPOINT-POLICY/services/{service_id}/regions/{region_id}", operation_id = "region_policy_put", tag = "catalog",
    params(("policy_id" = String, Path, description = "The policy's id."), ("service_id" = String, Path, description = "The service's id."),
           ("region_id" = String, Path, description = "The region's id.")),
    responses((status = 204, description = "Tied; replaces the policy the service had in the region."), E::Remove))]
pub async fn region_put(
    Call(node, ctx): Call,
    Path((policy_id, service, region)): Path<(String, String, String)>,
) -> ApiResult<StatusCode> {
    enforce("identity:create_policy_association_for_region_and_service", &ctx, &json!({}))?;
    associate(&node, &policy_id, Target::ServiceInRegion(&service, &region)).await
}

#[utoipa::path(delete, path = "/v3/policies/{policy_id}/OS-ENDPOINT-POLICY/services/{service_id}/regions/{region_id}", operation_id = "region_policy_delete", tag = "catalog",
    params(("policy_id" = String, Path, description = "The policy's id."), ("service_id" = String, Path, description = "The service's id."),
           ("region_id" = String, Path, description = "The region's id.")),
    responses((status = 204, description = "Untied (also when it was not tied)."), E::Remove))]
pub async fn region_delete(
    Call(node, ctx): Call,
    Path((policy_id, service, region)): Path<(String, String, String)>,
) -> ApiResult<StatusCode> {
    enforce("identity:delete_policy_association_for_region_and_service", &ctx, &json!({}))?;
    dissociate(&node, &policy_id, Target::ServiceInRegion(&service, &region)).await
}

#[utoipa::path(get, path = "/v3/policies/{policy_id}/OS-ENDPOINT-POLICY/endpoints", operation_id = "policy_endpoints_list", tag = "catalog",
    params(("policy_id" = String, Path, description = "The policy's id."), ("limit" = Option<u32>, Query, description = "At most this many."),
           ("marker" = Option<String>, Query, description = "Start after this id.")),
    responses((status = 200, description = "The endpoints the policy applies to: tied directly, through their service in their region or a \
                                            region above it, or through their service.", body = s::EndpointList), E::Read))]
pub async fn endpoints_list(Call(node, ctx): Call, Below(policy_id, q): Below) -> ApiResult<Json<Value>> {
    enforce("identity:list_endpoints_for_policy", &ctx, &json!({}))?;
    policies::API.load(&node, &policy_id)?;
    let eps = lookup::endpoints_for_policy(&node.engine.read(), &policy_id)?;
    let base = node.cfg.public_base();
    let items = eps.iter().map(|e| to_json(&render::endpoint(e, &base))).collect();
    Ok(Json(page("endpoints", items, &base, &format!("/v3/policies/{policy_id}/OS-ENDPOINT-POLICY/endpoints"), &q)?))
}

#[utoipa::path(get, path = "/v3/endpoints/{endpoint_id}/OS-ENDPOINT-POLICY/policy", operation_id = "endpoint_policy_get", tag = "catalog",
    params(("endpoint_id" = String, Path, description = "The endpoint's id.")),
    responses((status = 200, description = "The policy for the endpoint: its own, else its service's in its region or the nearest \
                                            region above that has one, else its service's; 404 when none (HEAD likewise).",
               body = s::PolicyEnvelope), E::Read))]
pub async fn policy_for_endpoint(Call(node, ctx): Call, Path(endpoint_id): Path<String>) -> ApiResult<Json<Value>> {
    enforce("identity:get_policy_for_endpoint", &ctx, &json!({}))?;
    let read = node.engine.read();
    let endpoint = read.endpoint(&endpoint_id)?.ok_or_else(|| ApiError::not_found("endpoint", &endpoint_id))?;
    let Some(policy_id) = lookup::policy_for_endpoint(&read, &endpoint)? else {
        return Err(ApiError::not_found_msg(format!("No policy is associated with endpoint {endpoint_id}.")));
    };
    Ok(policies::respond(&node, &policies::API.load(&node, &policy_id)?))
}
