//! Grants of a role to a user or group on a project, a domain or the system:
//! `/v3/{projects|domains}/{id}/{users|groups}/{actor_id}/roles[/{role_id}]` and
//! `/v3/system/{users|groups}/{actor_id}/roles[/{role_id}]`. One set of handlers serves all
//! six route shapes; the matched route says which target and actor kind it is.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{MatchedPath, Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Map, Value};

use super::roles::{self, role_json};
use crate::http::error::{ApiError, ApiResult};
use crate::policy::{enforce, guard};
use crate::serve::node::Node;
use crate::state::command::grant_not_found;
use crate::state::model::{ActorKind, Assignment, Role, Target};
use crate::state::read::AssignmentReads;
use crate::state::{Command, Reader};
use crate::token::Caller;

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Create,
    Check,
    Revoke,
    List,
}

/// A grant path, resolved: the actor and target exist, and their policy target.
struct Resolved {
    actor_kind: ActorKind,
    actor_id: String,
    target: Target,
    policy: Map<String, Value>,
}

fn param<'a>(p: &'a HashMap<String, String>, key: &str) -> ApiResult<&'a str> {
    p.get(key).map(String::as_str).ok_or_else(|| ApiError::internal(format!("route without {{{key}}}")))
}

fn resolve(node: &Node, route: &str, p: &HashMap<String, String>) -> ApiResult<Resolved> {
    let view = node.engine.read();
    let mut policy = Map::new();
    let target = if route.starts_with("/v3/system/") {
        Target::System
    } else if route.starts_with("/v3/domains/") {
        let id = param(p, "id")?;
        let d = view.domain(id)?.ok_or_else(|| ApiError::not_found("domain", id))?;
        policy.insert("domain".into(), json!({"id": d.id}));
        Target::Domain(d.id)
    } else {
        let id = param(p, "id")?;
        let pr = view.project(id)?.filter(|p| !p.is_domain).ok_or_else(|| ApiError::not_found("project", id))?;
        policy.insert("project".into(), json!({"id": pr.id, "domain_id": pr.domain_id}));
        Target::Project(pr.id)
    };
    let actor_id = param(p, "actor_id")?;
    let actor_kind = if route.contains("/users/") {
        let u = view.user(actor_id)?.ok_or_else(|| ApiError::not_found("user", actor_id))?;
        policy.insert("user".into(), json!({"id": u.id, "domain_id": u.domain_id}));
        ActorKind::User
    } else {
        let g = view.group(actor_id)?.ok_or_else(|| ApiError::not_found("group", actor_id))?;
        policy.insert("group".into(), json!({"id": g.id, "domain_id": g.domain_id}));
        ActorKind::Group
    };
    Ok(Resolved { actor_kind, actor_id: actor_id.to_string(), target, policy })
}

/// Keystone's policy name for the operation on this target and actor kind.
fn action(op: Op, r: &Resolved) -> &'static str {
    match (&r.target, r.actor_kind, op) {
        (Target::System, ActorKind::User, Op::Create) => "identity:create_system_grant_for_user",
        (Target::System, ActorKind::User, Op::Check) => "identity:check_system_grant_for_user",
        (Target::System, ActorKind::User, Op::Revoke) => "identity:revoke_system_grant_for_user",
        (Target::System, ActorKind::User, Op::List) => "identity:list_system_grants_for_user",
        (Target::System, ActorKind::Group, Op::Create) => "identity:create_system_grant_for_group",
        (Target::System, ActorKind::Group, Op::Check) => "identity:check_system_grant_for_group",
        (Target::System, ActorKind::Group, Op::Revoke) => "identity:revoke_system_grant_for_group",
        (Target::System, ActorKind::Group, Op::List) => "identity:list_system_grants_for_group",
        (_, _, Op::Create) => "identity:create_grant",
        (_, _, Op::Check) => "identity:check_grant",
        (_, _, Op::Revoke) => "identity:revoke_grant",
        (_, _, Op::List) => "identity:list_grants",
    }
}

/// Resolves the path (404s), loads the role and enforces the operation's policy.
fn authorize(
    node: &Node,
    ctx: &crate::token::ValidToken,
    op: Op,
    route: &str,
    p: &HashMap<String, String>,
) -> ApiResult<(Resolved, Role)> {
    let mut r = resolve(node, route, p)?;
    let role = roles::load(node, param(p, "role_id")?)?;
    r.policy.insert("role".into(), roles::target(&role)["role"].clone());
    enforce(action(op, &r), ctx, &Value::Object(r.policy.clone()))?;
    Ok((r, role))
}

fn grant(r: &Resolved, role: &Role) -> Assignment {
    Assignment {
        actor_kind: r.actor_kind,
        actor_id: r.actor_id.clone(),
        target: r.target.clone(),
        role_id: role.id.clone(),
        inherited: false,
    }
}

pub async fn create(
    State(node): State<Arc<Node>>,
    Caller(ctx): Caller,
    route: MatchedPath,
    Path(p): Path<HashMap<String, String>>,
) -> ApiResult<StatusCode> {
    let (r, role) = authorize(&node, &ctx, Op::Create, route.as_str(), &p)?;
    let a = grant(&r, &role);
    guard::change_grant(&node.engine.read(), &ctx, &a)?;
    node.propose(Command::CreateGrant(a)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// 204 when the grant exists (a direct grant, not an effective one), else 404.
pub async fn check(
    State(node): State<Arc<Node>>,
    Caller(ctx): Caller,
    route: MatchedPath,
    Path(p): Path<HashMap<String, String>>,
) -> ApiResult<StatusCode> {
    let (r, role) = authorize(&node, &ctx, Op::Check, route.as_str(), &p)?;
    let a = grant(&r, &role);
    if node.engine.read().grant_stored(&a)? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(grant_not_found(&a).into())
    }
}

pub async fn revoke(
    State(node): State<Arc<Node>>,
    Caller(ctx): Caller,
    route: MatchedPath,
    Path(p): Path<HashMap<String, String>>,
) -> ApiResult<StatusCode> {
    let (r, role) = authorize(&node, &ctx, Op::Revoke, route.as_str(), &p)?;
    let a = grant(&r, &role);
    guard::change_grant(&node.engine.read(), &ctx, &a)?;
    node.propose(Command::DeleteGrant(a)).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The roles granted directly to the actor on the target.
pub async fn list(
    State(node): State<Arc<Node>>,
    Caller(ctx): Caller,
    route: MatchedPath,
    Path(p): Path<HashMap<String, String>>,
) -> ApiResult<Json<Value>> {
    let r = resolve(&node, route.as_str(), &p)?;
    enforce(action(Op::List, &r), &ctx, &Value::Object(r.policy.clone()))?;
    let view = node.engine.snapshot();
    let grants: Vec<Assignment> = view.assignments_of_actor_on(r.actor_kind, &r.actor_id, &r.target)?;
    let base = node.cfg.public_base();
    let mut out = Vec::new();
    for a in grants.iter().filter(|a| !a.inherited) {
        if let Some(role) = view.role(&a.role_id)? {
            out.push(role_json(&role, &base));
        }
    }
    let own = route
        .as_str()
        .replace("{id}", p.get("id").map(String::as_str).unwrap_or(""))
        .replace("{actor_id}", &r.actor_id);
    Ok(Json(json!({"roles": out, "links": {"self": format!("{base}{own}"), "previous": null, "next": null}})))
}

/// One annotated wrapper per route shape and method (`#[utoipa::path]` takes one literal path,
/// and the router is built from the annotations), all delegating to the handlers above.
macro_rules! grant_shapes {
    ($($shape:ident: $base:tt, $one:tt, $target:tt, [$($id:tt)*];)*) => {$(
        pub mod $shape {
            use std::collections::HashMap;
            use std::sync::Arc;

            use axum::extract::{MatchedPath, Path, State};
            use axum::http::StatusCode;
            use axum::Json;
            use serde_json::Value;

            use crate::assignment::schemas as s;
            use crate::http::error::ApiResult;
            use crate::http::openapi::errors as E;
            use crate::token::Caller;
            use crate::serve::node::Node;

            type P = Path<HashMap<String, String>>;

            #[utoipa::path(
                get, path = $base, tag = "role_assignments",
                operation_id = concat!("grants_", stringify!($shape), "_list"),
                description = concat!("The roles granted directly to the actor on ", $target, "."),
                params(
                    $($id)*
                    ("actor_id" = String, Path, description = "The user's or group's id."),
                ),
                responses(
                    (status = 200, description = "The granted roles.", body = s::RoleList),
                    E::Unauthorized, E::Forbidden, E::NotFound, E::Internal,
                )
            )]
            pub async fn list(n: State<Arc<Node>>, c: Caller, r: MatchedPath, p: P) -> ApiResult<Json<Value>> {
                super::list(n, c, r, p).await
            }

            #[utoipa::path(
                put, path = $one, tag = "role_assignments",
                operation_id = concat!("grants_", stringify!($shape), "_create"),
                description = concat!("Grants the role to the actor on ", $target, ". No request body."),
                params(
                    $($id)*
                    ("actor_id" = String, Path, description = "The user's or group's id."),
                    ("role_id" = String, Path, description = "The role's id."),
                ),
                responses(
                    (status = 204, description = "The grant exists."),
                    E::BadRequest, E::Unauthorized, E::Forbidden, E::NotFound, E::Conflict, E::Internal, E::Unavailable,
                )
            )]
            pub async fn create(n: State<Arc<Node>>, c: Caller, r: MatchedPath, p: P) -> ApiResult<StatusCode> {
                super::create(n, c, r, p).await
            }

            #[utoipa::path(
                head, path = $one, tag = "role_assignments",
                operation_id = concat!("grants_", stringify!($shape), "_check"),
                description = concat!("Whether the role is granted directly to the actor on ", $target, "."),
                params(
                    $($id)*
                    ("actor_id" = String, Path, description = "The user's or group's id."),
                    ("role_id" = String, Path, description = "The role's id."),
                ),
                responses(
                    (status = 204, description = "The grant exists."),
                    E::Unauthorized, E::Forbidden, E::NotFound, E::Internal,
                )
            )]
            pub async fn check(n: State<Arc<Node>>, c: Caller, r: MatchedPath, p: P) -> ApiResult<StatusCode> {
                super::check(n, c, r, p).await
            }

            #[utoipa::path(
                delete, path = $one, tag = "role_assignments",
                operation_id = concat!("grants_", stringify!($shape), "_revoke"),
                description = concat!("Revokes the role from the actor on ", $target, "."),
                params(
                    $($id)*
                    ("actor_id" = String, Path, description = "The user's or group's id."),
                    ("role_id" = String, Path, description = "The role's id."),
                ),
                responses(
                    (status = 204, description = "The grant is gone."),
                    E::BadRequest, E::Unauthorized, E::Forbidden, E::NotFound, E::Conflict, E::Internal, E::Unavailable,
                )
            )]
            pub async fn revoke(n: State<Arc<Node>>, c: Caller, r: MatchedPath, p: P) -> ApiResult<StatusCode> {
                super::revoke(n, c, r, p).await
            }
        }
    )*

        /// Every grant route, described.
        pub fn routes() -> utoipa_axum::router::OpenApiRouter<crate::serve::node::AppState> {
            use utoipa_axum::routes;
            utoipa_axum::router::OpenApiRouter::default()
                $(
                    .routes(routes!($shape::list))
                    .routes(routes!($shape::create, $shape::check, $shape::revoke))
                )*
        }
    };
}

grant_shapes! {
    project_user: "/v3/projects/{id}/users/{actor_id}/roles", "/v3/projects/{id}/users/{actor_id}/roles/{role_id}", "the project", [("id" = String, Path, description = "The project's id."),];
    project_group: "/v3/projects/{id}/groups/{actor_id}/roles", "/v3/projects/{id}/groups/{actor_id}/roles/{role_id}", "the project", [("id" = String, Path, description = "The project's id."),];
    domain_user: "/v3/domains/{id}/users/{actor_id}/roles", "/v3/domains/{id}/users/{actor_id}/roles/{role_id}", "the domain", [("id" = String, Path, description = "The domain's id."),];
    domain_group: "/v3/domains/{id}/groups/{actor_id}/roles", "/v3/domains/{id}/groups/{actor_id}/roles/{role_id}", "the domain", [("id" = String, Path, description = "The domain's id."),];
    system_user: "/v3/system/users/{actor_id}/roles", "/v3/system/users/{actor_id}/roles/{role_id}", "the system", [];
    system_group: "/v3/system/groups/{actor_id}/roles", "/v3/system/groups/{actor_id}/roles/{role_id}", "the system", [];
}
