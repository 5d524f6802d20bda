//! `GET /v3/auth/projects` and `GET /v3/auth/catalog`.

use std::sync::Arc;

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use crate::http::error::{ApiError, ApiResult};
use crate::http::Caller;
use crate::node::Node;
use crate::policy::enforce;
use crate::resource::project_json;
use crate::state::keys;
use crate::state::model::{ActorKind, Assignment, Target};
use crate::state::{cf, Reader};
use crate::token::TokenScope;

/// Enabled projects (in enabled domains) on which the caller holds a role.
pub async fn auth_projects(State(node): State<Arc<Node>>, Caller(ctx): Caller) -> ApiResult<Json<Value>> {
    enforce("identity:get_auth_projects", &ctx, &json!({}))?;
    let view = node.engine.snapshot();
    let grants: Vec<Assignment> = view.scan(cf::ASSIGNMENTS, &keys::by_actor_prefix(ActorKind::User, &ctx.user.id))?;
    let mut ids: Vec<String> = grants
        .into_iter()
        .filter_map(|a| match a.target {
            Target::Project(p) => Some(p),
            _ => None,
        })
        .collect();
    ids.dedup();
    let base = node.cfg.public_base();
    let mut out = Vec::new();
    for id in ids {
        if let Some(p) = view.project(&id)?.filter(|p| p.enabled) {
            if view.domain(&p.domain_id)?.is_some_and(|d| d.enabled) {
                out.push(project_json(&p, &base));
            }
        }
    }
    Ok(Json(
        json!({"projects": out, "links": {"self": format!("{base}/v3/auth/projects"), "previous": null, "next": null}}),
    ))
}

pub async fn auth_catalog(State(node): State<Arc<Node>>, Caller(ctx): Caller) -> ApiResult<Json<Value>> {
    enforce("identity:get_auth_catalog", &ctx, &json!({}))?;
    if matches!(ctx.payload.scope, TokenScope::Unscoped) {
        return Err(ApiError::forbidden("A scoped token is required to get a catalog."));
    }
    let base = node.cfg.public_base();
    Ok(Json(
        json!({"catalog": *node.catalog()?, "links": {"self": format!("{base}/v3/auth/catalog"), "previous": null, "next": null}}),
    ))
}
