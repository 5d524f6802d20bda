//! `GET /v3/auth/projects`, `/v3/auth/domains`, `/v3/auth/system` and `/v3/auth/catalog`:
//! what the caller can scope to (targets where it holds an effective role, directly or
//! through a group) and its catalog.

use std::sync::Arc;

use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

use super::schemas as s;
use crate::http::error::{ApiError, ApiResult};
use crate::http::openapi::errors as E;
use crate::policy::enforce;
use crate::reads::effective;
use crate::resource::{domain_json, project_json};
use crate::state::model::Target;
use crate::state::Reader;
use crate::token::Call;
use crate::token::Caller;
use crate::token::{TokenScope, Tokens};

fn links(base: &str, path: &str) -> Value {
    json!({"self": format!("{base}{path}"), "previous": null, "next": null})
}

/// Enabled projects (in enabled domains) on which the caller holds a role.
#[utoipa::path(get, path = "/v3/auth/projects", operation_id = "projects_auth_projects", tag = "auth",
    responses((status = 200, description = "Enabled projects on which the caller holds a role.", body = crate::resource::schemas::ProjectList), E::List))]
pub async fn auth_projects(Call(node, ctx): Call) -> ApiResult<Json<Value>> {
    enforce("identity:get_auth_projects", &ctx, &json!({}))?;
    let targets = effective::user_targets(&node, &ctx.user.id).await?;
    let view = node.engine.snapshot();
    let base = node.cfg.public_base();
    let mut out = Vec::new();
    for t in targets {
        let Target::Project(id) = t else { continue };
        if let Some(p) = view.project(&id)?.filter(|p| p.enabled) {
            if view.domain(&p.domain_id)?.is_some_and(|d| d.enabled) {
                out.push(project_json(&p, &base));
            }
        }
    }
    Ok(Json(json!({"projects": out, "links": links(&base, "/v3/auth/projects")})))
}

/// Enabled domains on which the caller holds a role.
#[utoipa::path(get, path = "/v3/auth/domains", operation_id = "projects_auth_domains", tag = "auth",
    responses((status = 200, description = "Enabled domains on which the caller holds a role.", body = crate::resource::schemas::DomainList), E::List))]
pub async fn auth_domains(Call(node, ctx): Call) -> ApiResult<Json<Value>> {
    enforce("identity:get_auth_domains", &ctx, &json!({}))?;
    let targets = effective::user_targets(&node, &ctx.user.id).await?;
    let view = node.engine.snapshot();
    let base = node.cfg.public_base();
    let mut out = Vec::new();
    for t in targets {
        let Target::Domain(id) = t else { continue };
        if let Some(d) = view.domain(&id)?.filter(|d| d.enabled) {
            out.push(domain_json(&d, &base));
        }
    }
    Ok(Json(json!({"domains": out, "links": links(&base, "/v3/auth/domains")})))
}

/// `{"system": [{"all": true}]}` when the caller holds a system role, else an empty list.
#[utoipa::path(get, path = "/v3/auth/system", operation_id = "projects_auth_system", tag = "auth",
    responses((status = 200, description = "Whether the caller holds a role on the system.", body = s::SystemScopes), E::List))]
pub async fn auth_system(Call(node, ctx): Call) -> ApiResult<Json<Value>> {
    enforce("identity:get_auth_system", &ctx, &json!({}))?;
    let base = node.cfg.public_base();
    let has = !effective::user_roles(&node, &ctx.user.id, &Target::System).await?.is_empty();
    let system = if has { json!([{"all": true}]) } else { json!([]) };
    Ok(Json(json!({"system": system, "links": links(&base, "/v3/auth/system")})))
}

#[utoipa::path(get, path = "/v3/auth/catalog", operation_id = "projects_auth_catalog", tag = "auth", description = "403 for an unscoped token.",
    responses((status = 200, description = "The catalog of the caller's token.", body = s::CatalogList), E::List))]
pub async fn auth_catalog(State(node): State<Arc<Tokens>>, Caller(ctx): Caller) -> ApiResult<Json<Value>> {
    enforce("identity:get_auth_catalog", &ctx, &json!({}))?;
    if matches!(ctx.payload.scope, TokenScope::Unscoped) {
        return Err(ApiError::forbidden("A scoped token is required to get a catalog."));
    }
    let base = node.cfg.public_base();
    Ok(Json(json!({"catalog": *node.catalog_for(&ctx.payload.scope)?, "links": links(&base, "/v3/auth/catalog")})))
}
