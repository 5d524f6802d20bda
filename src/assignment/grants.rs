//! Grants of a role to a user or group on a project, a domain or the system:
//! `/v3/{projects|domains}/{id}/{users|groups}/{actor_id}/roles[/{role_id}]` and
//! `/v3/system/{users|groups}/{actor_id}/roles[/{role_id}]`. One set of handlers serves all
//! six route shapes; the matched route says which target and actor kind it is.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{MatchedPath, Path};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Map, Value};

use super::roles;
use super::schemas as s;
use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::http::openapi::{to_json, CollectionLinks};
use crate::openfga::listing::Query;
use crate::policy::{enforce, guard};
use crate::state::command::grant_not_found;
use crate::state::model::{ActorKind, Assignment, Role, Target};
use crate::state::read::AssignmentReads;
use crate::state::{Command, Reader};
use crate::token::{Call, ValidToken};

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

pub(super) fn param<'a>(p: &'a HashMap<String, String>, key: &str) -> ApiResult<&'a str> {
    p.get(key).map(String::as_str).ok_or_else(|| ApiError::internal(format!("route without {{{key}}}")))
}

fn resolve(node: &Core, route: &str, p: &HashMap<String, String>) -> ApiResult<Resolved> {
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
    node: &Core,
    ctx: &ValidToken,
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
    Call(node, ctx): Call,
    route: MatchedPath,
    Path(p): Path<HashMap<String, String>>,
) -> ApiResult<StatusCode> {
    let (r, role) = authorize(&node, &ctx, Op::Create, route.as_str(), &p)?;
    change(&node, &ctx, grant(&r, &role), Write::Grant).await
}

/// 204 when the grant exists (a direct grant, not an effective one), else 404.
pub async fn check(
    Call(node, ctx): Call,
    route: MatchedPath,
    Path(p): Path<HashMap<String, String>>,
) -> ApiResult<StatusCode> {
    let (r, role) = authorize(&node, &ctx, Op::Check, route.as_str(), &p)?;
    stored(&node, &grant(&r, &role)).await
}

pub async fn revoke(
    Call(node, ctx): Call,
    route: MatchedPath,
    Path(p): Path<HashMap<String, String>>,
) -> ApiResult<StatusCode> {
    let (r, role) = authorize(&node, &ctx, Op::Revoke, route.as_str(), &p)?;
    change(&node, &ctx, grant(&r, &role), Write::Revoke).await
}

/// The roles granted directly to the actor on the target.
pub async fn list(
    Call(node, ctx): Call,
    route: MatchedPath,
    Path(p): Path<HashMap<String, String>>,
) -> ApiResult<Json<Value>> {
    let r = resolve(&node, route.as_str(), &p)?;
    enforce(action(Op::List, &r), &ctx, &Value::Object(r.policy.clone()))?;
    let own = route.as_str().replace("{id}", p.get("id").map(String::as_str).unwrap_or(""));
    granted_roles(&node, (r.actor_kind, &r.actor_id), &r.target, false, &own).await
}

/// Whether a change writes or removes the grant.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Write {
    Grant,
    Revoke,
}

/// Creates or revokes the grant within the guard rails, in the replicated state or the
/// relationship store: 204. The store refuses an inherited grant (400) and takes the revoke of
/// an absent one as done.
pub(super) async fn change(node: &Core, ctx: &ValidToken, a: Assignment, write: Write) -> ApiResult<StatusCode> {
    guard::change_grant(&node.engine.read(), ctx, &a)?;
    match (&node.fga, write) {
        (Some(fga), Write::Grant) => fga.grant(&node.engine.read(), &a).await?,
        (Some(fga), Write::Revoke) => fga.revoke(&node.engine.read(), &a).await?,
        (None, Write::Grant) => drop(node.propose(Command::CreateGrant(a)).await?),
        (None, Write::Revoke) => drop(node.propose(Command::DeleteGrant(a)).await?),
    }
    Ok(StatusCode::NO_CONTENT)
}

/// 204 when the grant is held, else Keystone's 404: stored as given in the replicated state,
/// or resolved by the store's model (the store's grant check has no direct mode).
pub(super) async fn stored(node: &Core, a: &Assignment) -> ApiResult<StatusCode> {
    let held = match &node.fga {
        Some(fga) => fga.check(&node.engine.read(), a).await?,
        None => node.engine.read().grant_stored(a)?,
    };
    if held {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(grant_not_found(a).into())
    }
}

/// The roles granted to the actor on the target, inherited grants or direct ones, as a role
/// list whose `self` is `route` (its `{actor_id}` filled in).
pub(super) async fn granted_roles(
    node: &Core,
    (actor_kind, actor_id): (ActorKind, &str),
    target: &Target,
    inherited: bool,
    route: &str,
) -> ApiResult<Json<Value>> {
    let role_ids: Vec<String> = match &node.fga {
        // The store holds no inherited grants.
        Some(_) if inherited => Vec::new(),
        Some(fga) => {
            let q = Query {
                actor: Some((actor_kind, actor_id.to_string())),
                target: Some(target.clone()),
                ..Query::default()
            };
            fga.list(&node.engine.read(), &q).await?.into_iter().map(|a| a.role_id).collect()
        }
        None => {
            let grants: Vec<Assignment> = node.engine.read().assignments_of_actor_on(actor_kind, actor_id, target)?;
            grants.into_iter().filter(|a| a.inherited == inherited).map(|a| a.role_id).collect()
        }
    };
    let view = node.engine.snapshot();
    let base = node.cfg.public_base();
    let mut out = Vec::new();
    for id in role_ids {
        if let Some(role) = view.role(&id)? {
            out.push(roles::role(&role, &base));
        }
    }
    let links = CollectionLinks::whole(format!("{base}{}", route.replace("{actor_id}", actor_id)));
    Ok(Json(to_json(&s::RoleList { roles: out, links })))
}

/// Grant routes take the matched route and its parameters; the handlers read both.
pub(super) type RouteParams = Path<HashMap<String, String>>;

/// One route shape's annotated handler (`#[utoipa::path]` takes one literal path, and the
/// router is built from the annotations), answering with `$handler`; the annotation's
/// arguments follow the `=>`.
macro_rules! routed {
    ($name:ident -> $answer:ty = $handler:path => $($annotation:tt)*) => {
        #[utoipa::path($($annotation)*)]
        pub async fn $name(
            c: crate::token::Call,
            r: axum::extract::MatchedPath,
            p: crate::assignment::grants::RouteParams,
        ) -> crate::http::error::ApiResult<$answer> {
            $handler(c, r, p).await
        }
    };
}
pub(super) use routed;

macro_rules! grant_shapes {
    ($($shape:ident: $base:tt, $one:tt, $target:tt, [$($id:tt)*];)*) => {$(
        pub mod $shape {
            use crate::assignment::schemas as s;
            use crate::http::openapi::errors as E;

            routed!(list -> axum::Json<serde_json::Value> = super::list =>
                get, path = $base, tag = "role_assignments", operation_id = concat!("grants_", stringify!($shape), "_list"),
                description = concat!("The roles granted directly to the actor on ", $target, "."),
                params($($id)* ("actor_id" = String, Path, description = "The user's or group's id.")),
                responses((status = 200, description = "The granted roles.", body = s::RoleList), E::Read));

            routed!(create -> axum::http::StatusCode = super::create =>
                put, path = $one, tag = "role_assignments", operation_id = concat!("grants_", stringify!($shape), "_create"),
                description = concat!("Grants the role to the actor on ", $target, ". No request body."),
                params($($id)* ("actor_id" = String, Path, description = "The user's or group's id."),
                       ("role_id" = String, Path, description = "The role's id.")),
                responses((status = 204, description = "The grant exists."), E::Change));

            routed!(check -> axum::http::StatusCode = super::check =>
                head, path = $one, tag = "role_assignments", operation_id = concat!("grants_", stringify!($shape), "_check"),
                description = concat!("Whether the role is granted directly to the actor on ", $target, "."),
                params($($id)* ("actor_id" = String, Path, description = "The user's or group's id."),
                       ("role_id" = String, Path, description = "The role's id.")),
                responses((status = 204, description = "The grant exists."), E::Read));

            routed!(revoke -> axum::http::StatusCode = super::revoke =>
                delete, path = $one, tag = "role_assignments", operation_id = concat!("grants_", stringify!($shape), "_revoke"),
                description = concat!("Revokes the role from the actor on ", $target, "."),
                params($($id)* ("actor_id" = String, Path, description = "The user's or group's id."),
                       ("role_id" = String, Path, description = "The role's id.")),
                responses((status = 204, description = "The grant is gone."), E::Change));
        }
    )*

        /// Every grant route, described.
        pub fn routes<S>() -> utoipa_axum::router::OpenApiRouter<S>
        where
            S: Clone + Send + Sync + 'static,
            Arc<Core>: axum::extract::FromRef<S>,
            Arc<crate::token::Tokens>: axum::extract::FromRef<S>,
        {
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
