//! `/v3/users/{user_id}/access_rules`: the rules a user's application credentials name. A
//! rule outlives the credentials that used it and is deleted on its own, once none does.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::schemas as s;
use super::AppCred;
use crate::context::Core;
use crate::http::docs::DocApi;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::Below;
use crate::http::fields::json_obj;
use crate::http::openapi::{errors as E, to_json, SelfLink};
use crate::http::pages::page;
use crate::policy::enforce;
use crate::state::model::{Doc, DocKind};
use crate::state::Reader;
use crate::token::Call;

const API: DocApi = DocApi {
    kind: DocKind::AccessRule,
    member: "access_rule",
    collection: "access_rules",
    path: |id| format!("/v3/access_rules/{}", id.rsplit('/').next().unwrap_or(id)),
};

fn target(user_id: &str) -> Value {
    json!({"user": {"id": user_id}})
}

fn show(node: &Core, d: &Doc) -> s::AccessRuleWithLinks {
    let rule = super::access_rule(&json_obj(&d.body));
    s::AccessRuleWithLinks { rule, links: SelfLink::new(&node.cfg.public_base(), &(API.path)(&d.id)) }
}

fn load(node: &Core, user_id: &str, id: &str) -> ApiResult<Doc> {
    node.engine.read().doc(API.kind, &format!("{user_id}/{id}"))?.ok_or_else(|| ApiError::not_found("Access Rule", id))
}

#[utoipa::path(get, path = "/v3/users/{user_id}/access_rules", operation_id = "access_rules_list", tag = "application_credentials",
    params(("user_id" = String, Path, description = "The owner."), ("service" = Option<String>, Query, description = "Only rules for this service type."),
           ("path" = Option<String>, Query, description = "Only rules with this path."),
           ("method" = Option<String>, Query, description = "Only rules with this method."), ("limit" = Option<u32>, Query, description = "At most this many."),
           ("marker" = Option<String>, Query, description = "Start after this id.")),
    responses((status = 200, description = "The user's access rules.", body = s::AccessRuleList), E::List))]
pub async fn list(Call(node, ctx): Call, Below(user_id, q): Below) -> ApiResult<Json<Value>> {
    enforce("identity:list_access_rules", &ctx, &target(&user_id))?;
    super::credentials::refuse_delegated(&ctx, false)?;
    let items: Vec<Value> = node
        .engine
        .read()
        .child_docs(API.kind, &user_id)?
        .iter()
        .map(|d| to_json(&show(&node, d)))
        .filter(|v| {
            ["service", "path", "method"]
                .iter()
                .all(|k| q.get(*k).is_none_or(|want| v.get(*k).and_then(Value::as_str) == Some(want)))
        })
        .collect();
    let path = format!("/v3/users/{user_id}/access_rules");
    Ok(Json(page(API.collection, items, &node.cfg.public_base(), &path, &q)?))
}

#[utoipa::path(get, path = "/v3/users/{user_id}/access_rules/{access_rule_id}", operation_id = "access_rules_get", tag = "application_credentials",
    params(("user_id" = String, Path, description = "The owner."), ("access_rule_id" = String, Path, description = "The rule's id.")),
    responses((status = 200, description = "The rule.", body = s::AccessRuleEnvelope), E::Read))]
pub async fn get(Call(node, ctx): Call, Path((user_id, id)): Path<(String, String)>) -> ApiResult<Json<Value>> {
    enforce("identity:get_access_rule", &ctx, &target(&user_id))?;
    super::credentials::refuse_delegated(&ctx, false)?;
    let access_rule = show(&node, &load(&node, &user_id, &id)?);
    Ok(Json(to_json(&s::AccessRuleEnvelope { access_rule })))
}

#[utoipa::path(delete, path = "/v3/users/{user_id}/access_rules/{access_rule_id}", operation_id = "access_rules_delete", tag = "application_credentials",
    params(("user_id" = String, Path, description = "The owner."), ("access_rule_id" = String, Path, description = "The rule's id.")),
    responses((status = 204, description = "Deleted."),
              (status = 403, description = "A credential still uses the rule.", body = crate::http::openapi::ErrorBody), E::Unauthorized, E::NotFound,
              E::Internal, E::Unavailable))]
pub async fn delete(Call(node, ctx): Call, Path((user_id, id)): Path<(String, String)>) -> ApiResult<StatusCode> {
    enforce("identity:delete_access_rule", &ctx, &target(&user_id))?;
    super::credentials::refuse_delegated(&ctx, false)?;
    let doc = load(&node, &user_id, &id)?;
    for c in node.engine.read().child_docs(DocKind::ApplicationCredential, &user_id)? {
        if AppCred::of(&c)?.access_rule_ids.contains(&id) {
            return Err(ApiError::forbidden("May not delete access rule in use"));
        }
    }
    API.delete(&node, &doc.id).await?;
    Ok(StatusCode::NO_CONTENT)
}
