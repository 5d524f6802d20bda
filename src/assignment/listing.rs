//! The role assignment listing behind `GET /v3/role_assignments`, as Keystone computes it.
//! Direct mode returns the stored grants that match the filters. Effective mode expands
//! group grants into one entry per member user, adds an entry per implication rule
//! reachable from each granted role, drops domain-specific roles (they only ever serve to
//! imply global roles), and filters by role last. Token roles are derived from the same
//! expansion, so what a listing says and what a token carries cannot drift apart.

use std::collections::{BTreeMap, BTreeSet};

use idnode_storage::Result;

use crate::state::keys;
use crate::state::model::{ActorKind, Assignment, Target};
use crate::state::{cf, Reader};

#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub user: Option<String>,
    pub group: Option<String>,
    pub target: Option<Target>,
    pub role: Option<String>,
    pub effective: bool,
}

/// One listed assignment. In effective mode the actor is always a user; `via_group` names
/// the group whose grant it came through, `prior_role` the role that implied `role_id`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    pub actor_kind: ActorKind,
    pub actor_id: String,
    pub target: Target,
    pub role_id: String,
    pub via_group: Option<String>,
    pub prior_role: Option<String>,
    /// The stored grant this entry derives from.
    pub grant: Assignment,
}

/// Lists assignments matching `f`, sorted and without duplicates.
pub fn list(r: &impl Reader, f: &Filter) -> Result<Vec<Entry>> {
    let mut out = if f.effective { effective(r, f)? } else { direct(r, f)? };
    out.sort();
    out.dedup();
    Ok(out)
}

fn scan(r: &impl Reader, prefix: &[u8]) -> Result<Vec<Assignment>> {
    Ok(r.scan::<Assignment>(cf::ASSIGNMENTS, prefix)?.into_iter().filter(|a| !a.inherited).collect())
}

/// Grants of one actor, narrowed to a target when one is given.
fn grants_of(r: &impl Reader, kind: ActorKind, id: &str, target: Option<&Target>) -> Result<Vec<Assignment>> {
    match target {
        Some(t) => scan(r, &keys::by_actor_target_prefix(kind, id, t)),
        None => scan(r, &keys::by_actor_prefix(kind, id)),
    }
}

fn matches_target(a: &Assignment, t: Option<&Target>) -> bool {
    t.is_none_or(|t| &a.target == t)
}

fn direct(r: &impl Reader, f: &Filter) -> Result<Vec<Entry>> {
    let t = f.target.as_ref();
    let grants = match (&f.user, &f.group, t, &f.role) {
        (Some(u), _, _, _) => grants_of(r, ActorKind::User, u, t)?,
        (None, Some(g), _, _) => grants_of(r, ActorKind::Group, g, t)?,
        (None, None, Some(t), _) => scan(r, &keys::by_target_prefix(t))?,
        (None, None, None, Some(role)) => scan(r, &keys::by_role_prefix(role))?,
        (None, None, None, None) => scan(r, b"a/")?,
    };
    Ok(grants
        .into_iter()
        .filter(|a| f.user.as_ref().is_none_or(|u| a.actor_kind == ActorKind::User && &a.actor_id == u))
        .filter(|a| f.group.as_ref().is_none_or(|g| a.actor_kind == ActorKind::Group && &a.actor_id == g))
        .filter(|a| matches_target(a, t))
        .filter(|a| f.role.as_ref().is_none_or(|role| &a.role_id == role))
        .map(|a| Entry {
            actor_kind: a.actor_kind,
            actor_id: a.actor_id.clone(),
            target: a.target.clone(),
            role_id: a.role_id.clone(),
            via_group: None,
            prior_role: None,
            grant: a,
        })
        .collect())
}

fn effective(r: &impl Reader, f: &Filter) -> Result<Vec<Entry>> {
    // Group grants are always expanded into users, so a group filter can match nothing.
    if f.group.is_some() {
        return Ok(Vec::new());
    }
    let t = f.target.as_ref();
    let grants = match &f.user {
        Some(u) => {
            let mut g = grants_of(r, ActorKind::User, u, t)?;
            for gid in r.group_ids_of_user(u)? {
                g.extend(grants_of(r, ActorKind::Group, &gid, t)?);
            }
            g
        }
        None => match t {
            Some(t) => scan(r, &keys::by_target_prefix(t))?,
            None => scan(r, b"a/")?,
        },
    };
    let graph = implication_graph(r)?;
    let mut global: BTreeMap<String, bool> = BTreeMap::new();
    let mut out = Vec::new();
    for a in grants.into_iter().filter(|a| matches_target(a, t)) {
        let users: Vec<(String, Option<String>)> = match a.actor_kind {
            ActorKind::User => vec![(a.actor_id.clone(), None)],
            ActorKind::Group => r
                .member_user_ids(&a.actor_id)?
                .into_iter()
                .filter(|u| f.user.as_ref().is_none_or(|only| only == u))
                .map(|u| (u, Some(a.actor_id.clone())))
                .collect(),
        };
        for (role_id, prior_role) in expand_roles(&graph, &a.role_id) {
            if f.role.as_ref().is_some_and(|only| only != &role_id) || !is_global(r, &mut global, &role_id)? {
                continue;
            }
            for (user, via_group) in &users {
                out.push(Entry {
                    actor_kind: ActorKind::User,
                    actor_id: user.clone(),
                    target: a.target.clone(),
                    role_id: role_id.clone(),
                    via_group: via_group.clone(),
                    prior_role: prior_role.clone(),
                    grant: a.clone(),
                });
            }
        }
    }
    Ok(out)
}

/// prior -> implied roles.
pub fn implication_graph(r: &impl Reader) -> Result<BTreeMap<String, Vec<String>>> {
    let mut graph: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (prior, implied) in r.implied_rules()? {
        graph.entry(prior).or_default().push(implied);
    }
    Ok(graph)
}

/// The roles and every role they imply, transitively.
pub fn implied_closure(r: &impl Reader, role_ids: &[String]) -> Result<BTreeSet<String>> {
    let graph = implication_graph(r)?;
    Ok(role_ids.iter().flat_map(|id| expand_roles(&graph, id).into_iter().map(|(role, _)| role)).collect())
}

/// The granted role itself (no prior), plus one (implied, prior) pair per implication rule
/// whose prior is reachable from the granted role. Terminates on any graph.
fn expand_roles(graph: &BTreeMap<String, Vec<String>>, granted: &str) -> BTreeSet<(String, Option<String>)> {
    let mut out = BTreeSet::from([(granted.to_string(), None)]);
    let mut reached = BTreeSet::from([granted.to_string()]);
    let mut stack = vec![granted.to_string()];
    while let Some(prior) = stack.pop() {
        for implied in graph.get(&prior).into_iter().flatten() {
            out.insert((implied.clone(), Some(prior.clone())));
            if reached.insert(implied.clone()) {
                stack.push(implied.clone());
            }
        }
    }
    out
}

/// Whether a role exists and is global (memoised per listing).
fn is_global(r: &impl Reader, memo: &mut BTreeMap<String, bool>, role_id: &str) -> Result<bool> {
    if let Some(v) = memo.get(role_id) {
        return Ok(*v);
    }
    let v = r.role(role_id)?.is_some_and(|role| role.domain_id.is_none());
    memo.insert(role_id.to_string(), v);
    Ok(v)
}
