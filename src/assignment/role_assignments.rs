//! `GET /v3/role_assignments`: filters, Keystone's refusals of contradictory filters, the
//! domain-scoped caller's view (only its domain's assignments), names, and links.

use std::collections::{BTreeMap, HashMap};

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Query, RawQuery, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::schemas as s;
use super::state::Assignments;
use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::http::extract::query_flag;
use crate::http::openapi::{errors as E, CollectionLinks};
use crate::http::pages::{limit_of, with_marker};
use crate::openfga::listing::{self as store_listing, Page as StorePage, Query as StoreQuery};
use crate::openfga::OpenFga;
use crate::policy::enforce;
use crate::reads::listing::{self, Entry, Filter};
use crate::state::model::{ActorKind, Assignment, Target};
use crate::state::Reader;
use crate::token::Call;
use crate::token::TokenScope;

/// Parses and checks the query (400 for combinations that can never match, in Keystone's
/// order and words).
fn filter(q: &HashMap<String, String>, subtree: bool) -> ApiResult<Filter> {
    let get = |k: &str| q.get(k).filter(|v| !v.is_empty()).cloned();
    let (user, group) = (get("user.id"), get("group.id"));
    let (project, domain, system) = (get("scope.project.id"), get("scope.domain.id"), get("scope.system"));
    let effective = q.contains_key("effective") && query_flag(q.get("effective"));
    // Present: inherited grants (`projects`) or only the others (any other value).
    let inherited = q.get(INHERITED_TO).map(|v| v == "projects");
    if project.is_some() && domain.is_some() {
        return Err(ApiError::bad_request("Specify a domain or project, not both"));
    }
    if system.is_some() && domain.is_some() {
        return Err(ApiError::bad_request("Specify system or domain, not both"));
    }
    if system.is_some() && project.is_some() {
        return Err(ApiError::bad_request("Specify system or project, not both"));
    }
    if user.is_some() && group.is_some() {
        return Err(ApiError::bad_request("Specify a user or group, not both"));
    }
    if effective && group.is_some() {
        return Err(ApiError::bad_request("Combining effective and group filter will always result in an empty list."));
    }
    if effective && inherited == Some(true) && domain.is_some() {
        return Err(ApiError::bad_request(
            "Combining effective, domain and inherited filters will always result in an empty list.",
        ));
    }
    let target = match (project, domain, system.as_deref()) {
        (Some(p), _, _) => Some(Target::Project(p)),
        (_, Some(d), _) => Some(Target::Domain(d)),
        (_, _, Some("all")) => Some(Target::System),
        _ => None,
    };
    Ok(Filter { user, group, target, role: get("role.id"), effective, inherited, subtree, also_groups: Vec::new() })
}

const INHERITED_TO: &str = "scope.OS-INHERIT:inherited_to";

#[utoipa::path(get, path = "/v3/role_assignments", operation_id = "role_assignments_list", tag = "role_assignments", description = "400 for a user and a group filter together, two scope filters together, `effective` with a group filter, or `effective` with a domain and the inherited filter.",
    params(("user.id" = Option<String>, Query, description = "Only assignments of this user."),
           ("group.id" = Option<String>, Query, description = "Only assignments of this group (not with `effective`)."),
           ("scope.project.id" = Option<String>, Query, description = "Only assignments on this project."),
           ("scope.domain.id" = Option<String>, Query, description = "Only assignments on this domain."),
           ("scope.system" = Option<String>, Query, description = "`all`: only assignments on the system."),
           ("scope.OS-INHERIT:inherited_to" = Option<String>, Query, description = "`projects`: only inherited grants; any other value: only the others."),
           ("role.id" = Option<String>, Query, description = "Only assignments of this role."),
           ("effective" = Option<String>, Query, description = "Present (any value but 0/false/no/off): expand group grants into their members, inherited grants onto the projects below them, and implied roles."),
           ("include_subtree" = Option<String>, Query, description = "Present (any value but 0/false/no/off): the descendants of `scope.project.id` count as targets too (required)."),
           ("include_names" = Option<String>, Query, description = "Present with any value but `0`, including none: include names of roles, actors and scopes."),
           ("marker" = Option<String>, Query, description = "OpenFGA driver only: the page starts after this assignment marker (before it with `page_reverse`); the `next` or `previous` link carries it."),
           ("limit" = Option<usize>, Query, description = "OpenFGA driver only: at most this many assignments (a positive integer)."),
           ("page_reverse" = Option<String>, Query, description = "OpenFGA driver only: present (any value but 0/false/no/off): the page before `marker`.")),
    responses((status = 200, description = "The matching role assignments.", body = s::RoleAssignmentList), E::BadRequest, E::Unauthorized, E::Forbidden,
              E::NotFound, E::Internal))]
pub async fn list(
    State(listings): State<Arc<Assignments>>,
    Call(node, ctx): Call,
    RawQuery(raw): RawQuery,
    Query(q): Query<HashMap<String, String>>,
) -> ApiResult<Response> {
    let subtree = q.contains_key("include_subtree") && query_flag(q.get("include_subtree"));
    let caller_domain = match &ctx.payload.scope {
        TokenScope::Domain(d) => Some(d.clone()),
        _ => None,
    };
    if subtree {
        authorize_tree(&node, &ctx, q.get("scope.project.id"))?;
    } else {
        enforce("identity:list_role_assignments", &ctx, &json!({"domain_id": caller_domain}))?;
    }
    // Read before the state is: a body kept under this version is never older than it.
    let applied = node.app.state_version();
    let key = (raw.clone().unwrap_or_default(), caller_domain.clone());
    if node.fga.is_none() {
        if let Some(body) = listings.listings.get(&key, applied) {
            return Ok(json_body(body));
        }
    }
    let f = filter(&q, subtree)?;
    if let (true, Some(Target::Project(p)), false) = (f.effective, &f.target, f.inherited == Some(false)) {
        // Keystone looks the project up to find the inherited grants that reach it.
        node.engine.read().project(p)?.filter(|p| !p.is_domain).ok_or_else(|| ApiError::not_found("project", p))?;
    }
    // Any value but 0, including none, asks for names (Keystone).
    let include_names = q.get("include_names").is_some_and(|v| v != "0");
    let view = node.engine.snapshot();
    let mut more = None;
    let entries = match &node.fga {
        Some(fga) => {
            let mut found = from_store(&node, fga, &f).await?;
            if let Some(d) = caller_domain.as_ref().filter(|_| !subtree) {
                found = kept_inside(&view, d, found, |a| &a.target)?;
            }
            let page = page_of(&q)?;
            let (found, beyond) = store_listing::slice(found, &page);
            let edge = if page.reverse { found.first() } else { found.last() };
            more = edge.filter(|_| beyond).map(|a| (page.reverse, store_listing::marker(a)));
            found.into_iter().map(Entry::direct).collect()
        }
        None => {
            let entries = listing::list(&view, &f)?;
            match caller_domain.as_ref().filter(|_| !subtree) {
                Some(d) => kept_inside(&view, d, entries, |e| &e.target)?,
                None => entries,
            }
        }
    };
    let base = node.cfg.public_base();
    let mut names = Names { view: &view, cache: BTreeMap::new() };
    let mut role_assignments = Vec::with_capacity(entries.len());
    for e in &entries {
        role_assignments.push(render(e, &base, include_names.then_some(&mut names))?);
    }
    let query = raw.filter(|r| !r.is_empty()).map(|r| format!("?{r}")).unwrap_or_default();
    let self_ = format!("{base}/v3/role_assignments{query}");
    let links = match more {
        Some((reverse, m)) => {
            let beyond = Some(format!("{base}/v3/role_assignments?{}", with_marker(&q, &m)));
            if reverse {
                CollectionLinks::new(self_, beyond, None)
            } else {
                CollectionLinks::new(self_, None, beyond)
            }
        }
        _ => CollectionLinks::whole(self_),
    };
    let body = Bytes::from(
        serde_json::to_vec(&s::RoleAssignmentList { role_assignments, links }).map_err(ApiError::internal)?,
    );
    if node.fga.is_none() {
        listings.listings.insert(key, body.clone(), applied);
    }
    Ok(json_body(body))
}

fn json_body(body: Bytes) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// Keeps what a domain-scoped caller may see: assignments on its domain and its projects.
fn kept_inside<T>(
    view: &idnode_storage::ReadView<'_>,
    domain: &str,
    items: Vec<T>,
    target: impl Fn(&T) -> &Target,
) -> ApiResult<Vec<T>> {
    let mut kept = Vec::with_capacity(items.len());
    for item in items {
        let inside = match target(&item) {
            Target::Domain(id) => id == domain,
            Target::Project(id) => view.project(id)?.is_some_and(|p| p.domain_id == domain),
            Target::System => false,
        };
        if inside {
            kept.push(item);
        }
    }
    Ok(kept)
}

/// The store driver's page (rule 6): `marker`, `limit` and `page_reverse`.
fn page_of(q: &HashMap<String, String>) -> ApiResult<StorePage> {
    let limit = limit_of(q)?;
    let reverse = q.contains_key("page_reverse") && query_flag(q.get("page_reverse"));
    Ok(StorePage { marker: q.get("marker").filter(|m| !m.is_empty()).cloned(), limit, reverse })
}

/// The listing from the relationship store: direct assignments only (no inherited grants,
/// no project tree, no implied roles), by the query's shape (`openfga::listing`).
async fn from_store(node: &Core, fga: &OpenFga, f: &Filter) -> ApiResult<Vec<Assignment>> {
    if f.inherited == Some(true) {
        return Ok(Vec::new());
    }
    let actor = match (&f.user, &f.group) {
        (Some(u), _) => Some((ActorKind::User, u.clone())),
        (_, Some(g)) => Some((ActorKind::Group, g.clone())),
        _ => None,
    };
    let q = StoreQuery { actor, target: f.target.clone(), role: f.role.clone(), effective: f.effective };
    Ok(fga.list(&node.engine.read(), &q).await?)
}

/// `include_subtree`: the project (404 if unknown) is the policy target of
/// `identity:list_role_assignments_for_tree`, and it is required (400).
fn authorize_tree(node: &Core, ctx: &crate::token::ValidToken, project: Option<&String>) -> ApiResult<()> {
    let target = match project.filter(|p| !p.is_empty()) {
        Some(id) => {
            let p = node
                .engine
                .read()
                .project(id)?
                .filter(|p| !p.is_domain)
                .ok_or_else(|| ApiError::not_found("project", id))?;
            json!({"project": {"id": p.id, "domain_id": p.domain_id}, "domain_id": p.domain_id})
        }
        None => json!({}),
    };
    enforce("identity:list_role_assignments_for_tree", ctx, &target)?;
    if project.is_none_or(|p| p.is_empty()) {
        return Err(ApiError::bad_request("scope.project.id must be specified if include_subtree is also specified"));
    }
    Ok(())
}

fn target_path(t: &Target) -> String {
    match t {
        Target::Project(id) => format!("/projects/{id}"),
        Target::Domain(id) => format!("/domains/{id}"),
        Target::System => "/system".to_string(),
    }
}

fn actor_path(kind: ActorKind, id: &str) -> String {
    match kind {
        ActorKind::User => format!("/users/{id}"),
        ActorKind::Group => format!("/groups/{id}"),
    }
}

/// URL of the stored grant an entry derives from (under OS-INHERIT for an inherited grant).
pub fn grant_url(base: &str, a: &Assignment) -> String {
    let (prefix, suffix) = if a.inherited { ("/OS-INHERIT", "/inherited_to_projects") } else { ("", "") };
    format!(
        "{base}/v3{prefix}{}{}/roles/{}{suffix}",
        target_path(&a.target),
        actor_path(a.actor_kind, &a.actor_id),
        a.role_id
    )
}

fn render(e: &Entry, base: &str, names: Option<&mut Names<'_, '_>>) -> ApiResult<s::RoleAssignment> {
    let links = s::AssignmentLinks {
        assignment: grant_url(base, &e.grant),
        membership: e.via_group.as_ref().map(|g| format!("{base}/v3/groups/{g}/users/{}", e.actor_id)),
        prior_role: e.prior_role.as_ref().map(|p| format!("{base}/v3/roles/{p}/implies/{}", e.role_id)),
    };
    let mut role = s::NamedRef { id: e.role_id.clone(), ..Default::default() };
    let mut actor = s::NamedRef { id: e.actor_id.clone(), ..Default::default() };
    let mut scope = match &e.target {
        Target::Project(id) => s::AssignmentScope {
            project: Some(s::NamedRef { id: id.clone(), ..Default::default() }),
            ..Default::default()
        },
        Target::Domain(id) => {
            s::AssignmentScope { domain: Some(s::DomainRef { id: id.clone(), name: None }), ..Default::default() }
        }
        Target::System => s::AssignmentScope { system: Some(s::SystemAll { all: true }), ..Default::default() },
    };
    if e.grant.inherited {
        scope.inherited_to = Some("projects".into());
    }
    if let Some(n) = names {
        n.role(&mut role)?;
        n.actor(&mut actor, e.actor_kind)?;
        if let Some(p) = &mut scope.project {
            n.project(p)?;
        }
        if let Some(d) = &mut scope.domain {
            d.name = Some(n.domain_name(&d.id)?);
        }
    }
    let (user, group) = if e.actor_kind == ActorKind::User { (Some(actor), None) } else { (None, Some(actor)) };
    Ok(s::RoleAssignment { role, user, group, scope, links })
}

/// Name lookups for `include_names`; a missing entity renders with empty names (Keystone).
struct Names<'v, 'e> {
    view: &'v idnode_storage::ReadView<'e>,
    cache: BTreeMap<String, String>,
}

impl Names<'_, '_> {
    fn domain_name(&mut self, id: &str) -> ApiResult<String> {
        let key = format!("d/{id}");
        if let Some(n) = self.cache.get(&key) {
            return Ok(n.clone());
        }
        let n = self.view.domain(id)?.map(|d| d.name).unwrap_or_default();
        self.cache.insert(key, n.clone());
        Ok(n)
    }

    fn domain_ref(&mut self, id: &str) -> ApiResult<s::DomainRef> {
        Ok(s::DomainRef { id: id.to_string(), name: Some(self.domain_name(id)?) })
    }

    /// The owning domain of a named actor or project: `{"id": "", "name": ""}` when unknown.
    fn owner(&mut self, domain_id: &str) -> ApiResult<s::DomainRef> {
        if domain_id.is_empty() {
            return Ok(s::DomainRef { id: String::new(), name: Some(String::new()) });
        }
        self.domain_ref(domain_id)
    }

    fn role(&mut self, v: &mut s::NamedRef) -> ApiResult<()> {
        let role = self.view.role(&v.id)?;
        v.name = Some(role.as_ref().map(|r| r.name.clone()).unwrap_or_default());
        if let Some(d) = role.and_then(|r| r.domain_id) {
            v.domain = Some(self.domain_ref(&d)?);
        }
        Ok(())
    }

    fn actor(&mut self, v: &mut s::NamedRef, kind: ActorKind) -> ApiResult<()> {
        let (name, domain_id) = match kind {
            ActorKind::User => self.view.user(&v.id)?.map(|u| (u.name, u.domain_id)),
            ActorKind::Group => self.view.group(&v.id)?.map(|g| (g.name, g.domain_id)),
        }
        .unwrap_or_default();
        v.name = Some(name);
        v.domain = Some(self.owner(&domain_id)?);
        Ok(())
    }

    fn project(&mut self, v: &mut s::NamedRef) -> ApiResult<()> {
        let (name, domain_id) = self.view.project(&v.id)?.map(|p| (p.name, p.domain_id)).unwrap_or_default();
        v.name = Some(name);
        v.domain = Some(self.owner(&domain_id)?);
        Ok(())
    }
}
