//! OS-INHERIT: grants a domain or a project passes on to the projects below it,
//! `/v3/OS-INHERIT/{domains|projects}/{id}/{users|groups}/{actor_id}/roles/{role_id}/inherited_to_projects`,
//! and the list of an actor's inherited grants on a domain (there is none for projects, as in
//! Keystone). Stored like any grant, flagged `inherited`; `listing` expands them.
//!
//! Keystone's order of checks: the policy target is built leniently (an unknown entity leaves
//! its part empty, so the policy decides first), then the role and the domain or project are
//! looked up (404). The actor is never looked up: an inherited grant to an unknown user is
//! accepted, as in Keystone.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{MatchedPath, Path};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Map, Value};

use super::grants::{change, param, stored, Write};
use super::roles;
use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::policy::enforce;
use crate::state::model::{ActorKind, Assignment, Target};
use crate::state::Reader;
use crate::token::Call;
use crate::token::ValidToken;

/// What a route names: the actor and the (unchecked) target.
struct Named {
    actor_kind: ActorKind,
    actor_id: String,
    target: Target,
}

fn named(route: &str, p: &HashMap<String, String>) -> ApiResult<Named> {
    let id = param(p, "id")?.to_string();
    let target = if route.starts_with("/v3/OS-INHERIT/domains/") { Target::Domain(id) } else { Target::Project(id) };
    let actor_kind = if route.contains("/users/") { ActorKind::User } else { ActorKind::Group };
    Ok(Named { actor_kind, actor_id: param(p, "actor_id")?.to_string(), target })
}

/// Keystone's policy target: each known entity, `{}` for an unknown one.
fn policy_target(node: &Core, n: &Named, role_id: Option<&str>) -> ApiResult<Value> {
    let view = node.engine.read();
    let mut t = Map::new();
    if let Some(id) = role_id {
        let role = view.role(id)?.map(|r| roles::target(&r)["role"].clone());
        t.insert("role".into(), role.unwrap_or_else(|| json!({})));
    }
    let actor = match n.actor_kind {
        ActorKind::User => ("user", view.user(&n.actor_id)?.map(|u| json!({"id": u.id, "domain_id": u.domain_id}))),
        ActorKind::Group => ("group", view.group(&n.actor_id)?.map(|g| json!({"id": g.id, "domain_id": g.domain_id}))),
    };
    t.insert(actor.0.into(), actor.1.unwrap_or_else(|| json!({})));
    let target = match &n.target {
        Target::Domain(id) => ("domain", view.domain(id)?.map(|d| json!({"id": d.id}))),
        Target::Project(id) => (
            "project",
            view.project(id)?.filter(|p| !p.is_domain).map(|p| json!({"id": p.id, "domain_id": p.domain_id})),
        ),
        Target::System => return Err(ApiError::internal("OS-INHERIT route on the system")),
    };
    t.insert(target.0.into(), target.1.unwrap_or_else(|| json!({})));
    Ok(Value::Object(t))
}

/// 404 unless the domain or project exists.
fn require_target(node: &Core, t: &Target) -> ApiResult<()> {
    let view = node.engine.read();
    match t {
        Target::Domain(id) => view.domain(id)?.map(|_| ()).ok_or_else(|| ApiError::not_found("domain", id)),
        Target::Project(id) => {
            view.project(id)?.filter(|p| !p.is_domain).map(|_| ()).ok_or_else(|| ApiError::not_found("project", id))
        }
        Target::System => Err(ApiError::internal("OS-INHERIT route on the system")),
    }
}

/// Enforces `action` on the route's grant and returns it.
fn authorize(
    node: &Core,
    ctx: &ValidToken,
    action: &str,
    route: &str,
    p: &HashMap<String, String>,
) -> ApiResult<Assignment> {
    let n = named(route, p)?;
    let role_id = param(p, "role_id")?;
    enforce(action, ctx, &policy_target(node, &n, Some(role_id))?)?;
    Ok(Assignment {
        actor_kind: n.actor_kind,
        actor_id: n.actor_id,
        target: n.target,
        role_id: role_id.to_string(),
        inherited: true,
    })
}

/// Apply checks the role, then the domain or project; granting twice is a no-op.
pub async fn create(
    Call(node, ctx): Call,
    route: MatchedPath,
    Path(p): Path<HashMap<String, String>>,
) -> ApiResult<StatusCode> {
    let a = authorize(&node, &ctx, "identity:create_grant", route.as_str(), &p)?;
    change(&node, &ctx, a, Write::Grant).await
}

/// 204 when the inherited grant exists; 404 for an unknown role, target or grant.
pub async fn check(
    Call(node, ctx): Call,
    route: MatchedPath,
    Path(p): Path<HashMap<String, String>>,
) -> ApiResult<StatusCode> {
    let a = authorize(&node, &ctx, "identity:check_grant", route.as_str(), &p)?;
    roles::load(&node, &a.role_id)?;
    require_target(&node, &a.target)?;
    stored(&node, &a).await
}

/// Apply answers 404 for an unknown role, target or grant.
pub async fn revoke(
    Call(node, ctx): Call,
    route: MatchedPath,
    Path(p): Path<HashMap<String, String>>,
) -> ApiResult<StatusCode> {
    let a = authorize(&node, &ctx, "identity:revoke_grant", route.as_str(), &p)?;
    change(&node, &ctx, a, Write::Revoke).await
}

/// The roles the actor holds on the domain to pass on to its projects.
pub async fn list(
    Call(node, ctx): Call,
    route: MatchedPath,
    Path(p): Path<HashMap<String, String>>,
) -> ApiResult<Json<Value>> {
    let n = named(route.as_str(), &p)?;
    enforce("identity:list_grants", &ctx, &policy_target(&node, &n, None)?)?;
    require_target(&node, &n.target)?;
    let own = route.as_str().replace("{id}", param(&p, "id")?);
    super::grants::granted_roles(&node, (n.actor_kind, &n.actor_id), &n.target, true, &own).await
}

/// The annotated handlers of one route shape (see `grants::routed`).
macro_rules! inherited_shapes {
    ($($shape:ident: $one:tt, $target:tt, $id:tt;)*) => {$(
        pub mod $shape {
            use crate::assignment::grants::routed;
            use crate::http::openapi::errors as E;

            routed!(create -> axum::http::StatusCode = super::create =>
                put, path = $one, tag = "role_assignments", operation_id = concat!("inherited_", stringify!($shape), "_create"),
                description = concat!("Grants the role to the actor on every project below ", $target, " (OS-INHERIT). No request body."),
                params(("id" = String, Path, description = $id),
                       ("actor_id" = String, Path, description = "The user's or group's id (not looked up)."),
                       ("role_id" = String, Path, description = "The role's id.")),
                responses((status = 204, description = "The inherited grant exists."), E::Change));

            routed!(check -> axum::http::StatusCode = super::check =>
                get, path = $one, tag = "role_assignments", operation_id = concat!("inherited_", stringify!($shape), "_check"),
                description = concat!("Whether the actor holds the role to pass on below ", $target, " (GET or HEAD)."),
                params(("id" = String, Path, description = $id),
                       ("actor_id" = String, Path, description = "The user's or group's id."),
                       ("role_id" = String, Path, description = "The role's id.")),
                responses((status = 204, description = "The inherited grant exists."), E::Read));

            routed!(revoke -> axum::http::StatusCode = super::revoke =>
                delete, path = $one, tag = "role_assignments", operation_id = concat!("inherited_", stringify!($shape), "_revoke"),
                description = concat!("Revokes the inherited grant on ", $target, "."),
                params(("id" = String, Path, description = $id),
                       ("actor_id" = String, Path, description = "The user's or group's id."),
                       ("role_id" = String, Path, description = "The role's id.")),
                responses((status = 204, description = "The inherited grant is gone."), E::Change));
        }
    )*};
}

/// The list routes (domains only).
macro_rules! inherited_lists {
    ($($shape:ident: $path:tt;)*) => {$(
        pub mod $shape {
            use crate::assignment::grants::routed;
            use crate::assignment::schemas as s;
            use crate::http::openapi::errors as E;

            routed!(list -> axum::Json<serde_json::Value> = super::list =>
                get, path = $path, tag = "role_assignments", operation_id = concat!("inherited_", stringify!($shape)),
                description = "The roles the actor holds on the domain to pass on to its projects (OS-INHERIT).",
                params(("id" = String, Path, description = "The domain's id."),
                       ("actor_id" = String, Path, description = "The user's or group's id.")),
                responses((status = 200, description = "The inherited roles.", body = s::RoleList), E::Read));
        }
    )*};
}

inherited_shapes! {
    domain_user: "/v3/OS-INHERIT/domains/{id}/users/{actor_id}/roles/{role_id}/inherited_to_projects", "the domain", "The domain's id.";
    domain_group: "/v3/OS-INHERIT/domains/{id}/groups/{actor_id}/roles/{role_id}/inherited_to_projects", "the domain", "The domain's id.";
    project_user: "/v3/OS-INHERIT/projects/{id}/users/{actor_id}/roles/{role_id}/inherited_to_projects", "the project", "The project's id.";
    project_group: "/v3/OS-INHERIT/projects/{id}/groups/{actor_id}/roles/{role_id}/inherited_to_projects", "the project", "The project's id.";
}

inherited_lists! {
    domain_user_list: "/v3/OS-INHERIT/domains/{id}/users/{actor_id}/roles/inherited_to_projects";
    domain_group_list: "/v3/OS-INHERIT/domains/{id}/groups/{actor_id}/roles/inherited_to_projects";
}

/// Every OS-INHERIT route, described.
pub fn routes<S>() -> utoipa_axum::router::OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Arc<Core>: axum::extract::FromRef<S>,
    Arc<crate::token::Tokens>: axum::extract::FromRef<S>,
{
    use utoipa_axum::routes;
    utoipa_axum::router::OpenApiRouter::default()
        .routes(routes!(domain_user::create, domain_user::check, domain_user::revoke))
        .routes(routes!(domain_group::create, domain_group::check, domain_group::revoke))
        .routes(routes!(project_user::create, project_user::check, project_user::revoke))
        .routes(routes!(project_group::create, project_group::check, project_group::revoke))
        .routes(routes!(domain_user_list::list))
        .routes(routes!(domain_group_list::list))
}
