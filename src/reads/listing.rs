//! The role assignment listing behind `GET /v3/role_assignments`, as Keystone computes it.
//! Direct mode returns the stored grants that match the filters. Effective mode expands
//! group grants into one entry per member user, inherited grants onto the projects they reach
//! (see `hierarchy`), adds an entry per implication rule reachable from each granted role,
//! drops domain-specific roles (they only ever serve to imply global roles), and filters by
//! role last. Token roles are derived from the same expansion, so what a listing says and
//! what a token carries cannot drift apart.

use std::collections::{BTreeMap, BTreeSet};

use idnode_storage::Result;

use super::hierarchy;
use crate::state::model::{ActorKind, Assignment, Target};
use crate::state::read::AssignmentReads;
use crate::state::Reader;

#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub user: Option<String>,
    pub group: Option<String>,
    pub target: Option<Target>,
    pub role: Option<String>,
    pub effective: bool,
    /// `Some(true)`: only inherited grants, `Some(false)`: only the others, `None`: both.
    pub inherited: Option<bool>,
    /// With a project target, its descendants are targets too (`include_subtree`).
    pub subtree: bool,
    /// Groups counted as the filtered user's besides its memberships: those a Keystone
    /// federated login put it in (Keystone's token names them; the user need not be a member).
    pub also_groups: Vec<String>,
}

/// One listed assignment. In effective mode the actor is always a user; `via_group` names
/// the group whose grant it came through, `prior_role` the role that implied `role_id`.
/// An entry of an inherited grant has the grant's target in direct mode and the project it
/// reaches in effective mode.
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

impl Entry {
    /// The entry of a grant as stored: its own actor, target and role.
    pub fn direct(a: Assignment) -> Entry {
        Entry {
            actor_kind: a.actor_kind,
            actor_id: a.actor_id.clone(),
            target: a.target.clone(),
            role_id: a.role_id.clone(),
            via_group: None,
            prior_role: None,
            grant: a,
        }
    }
}

type Actor = (ActorKind, String);

/// Lists assignments matching `f`, sorted and without duplicates.
pub fn list(r: &impl Reader, f: &Filter) -> Result<Vec<Entry>> {
    let mut out = if f.effective { effective(r, f)? } else { direct(r, f)? };
    out.sort();
    out.dedup();
    Ok(out)
}

/// Stored grants (inherited or not) of some actors on some targets; `None` means any.
fn stored(r: &impl Reader, actors: Option<&[Actor]>, targets: Option<&[Target]>) -> Result<Vec<Assignment>> {
    let mut out = Vec::new();
    match (actors, targets) {
        (Some(actors), Some(targets)) => {
            for (kind, id) in actors {
                for t in targets {
                    out.extend(r.assignments_of_actor_on(*kind, id, t)?);
                }
            }
        }
        (Some(actors), None) => {
            for (kind, id) in actors {
                out.extend(r.assignments_of_actor(*kind, id)?);
            }
        }
        (None, Some(targets)) => {
            for t in targets {
                out.extend(r.assignments_on(t)?);
            }
        }
        (None, None) => out = r.assignments()?,
    }
    Ok(out)
}

/// The targets the filter names: its target and, with `subtree`, the project's descendants.
fn targets_of_interest(r: &impl Reader, f: &Filter) -> Result<Option<Vec<Target>>> {
    Ok(match &f.target {
        None => None,
        Some(Target::Project(p)) if f.subtree => {
            let mut v = vec![Target::Project(p.clone())];
            v.extend(hierarchy::descendants(r, p)?.into_iter().map(Target::Project));
            Some(v)
        }
        Some(t) => Some(vec![t.clone()]),
    })
}

fn in_targets(a: &Assignment, targets: &Option<Vec<Target>>) -> bool {
    targets.as_ref().is_none_or(|ts| ts.contains(&a.target))
}

fn direct(r: &impl Reader, f: &Filter) -> Result<Vec<Entry>> {
    let targets = targets_of_interest(r, f)?;
    let actors: Option<Vec<Actor>> = match (&f.user, &f.group) {
        (Some(u), _) => Some(vec![(ActorKind::User, u.clone())]),
        (None, Some(g)) => Some(vec![(ActorKind::Group, g.clone())]),
        (None, None) => None,
    };
    let grants = match (&actors, &targets, &f.role) {
        (None, None, Some(role)) => r.assignments_of_role(role)?,
        _ => stored(r, actors.as_deref(), targets.as_deref())?,
    };
    Ok(grants
        .into_iter()
        .filter(|a| f.user.as_ref().is_none_or(|u| a.actor_kind == ActorKind::User && &a.actor_id == u))
        .filter(|a| f.group.as_ref().is_none_or(|g| a.actor_kind == ActorKind::Group && &a.actor_id == g))
        .filter(|a| in_targets(a, &targets))
        .filter(|a| f.role.as_ref().is_none_or(|role| &a.role_id == role))
        .filter(|a| f.inherited.is_none_or(|i| a.inherited == i))
        .map(Entry::direct)
        .collect())
}

/// The stored grants that can produce an effective entry for the filter: the direct grants
/// on the targets of interest, and the inherited grants that reach them.
fn effective_sources(
    r: &impl Reader,
    f: &Filter,
    targets: &Option<Vec<Target>>,
    user_groups: Option<&[String]>,
) -> Result<Vec<Assignment>> {
    // Only projects inherit: on a domain or the system only direct grants count.
    let inherited = match &f.target {
        None | Some(Target::Project(_)) => f.inherited,
        Some(_) if f.inherited == Some(true) => return Ok(Vec::new()),
        Some(_) => Some(false),
    };
    let actors: Option<Vec<Actor>> = match &f.user {
        Some(u) => {
            let mut a = vec![(ActorKind::User, u.clone())];
            a.extend(user_groups.unwrap_or_default().iter().map(|g| (ActorKind::Group, g.clone())));
            Some(a)
        }
        None => None,
    };
    let mut grants = Vec::new();
    if inherited != Some(true) {
        let found = stored(r, actors.as_deref(), targets.as_deref())?;
        grants.extend(found.into_iter().filter(|a| !a.inherited && in_targets(a, targets)));
    }
    if inherited != Some(false) {
        let sources = match &f.target {
            Some(Target::Project(p)) => {
                let mut s = hierarchy::inherited_sources(r, p)?;
                if f.subtree {
                    // Grants inside the subtree reach the part of it below them.
                    s.extend(targets.iter().flatten().cloned());
                }
                Some(s)
            }
            _ => None,
        };
        grants.extend(stored(r, actors.as_deref(), sources.as_deref())?.into_iter().filter(|a| a.inherited));
    }
    Ok(grants)
}

/// The projects an inherited grant counts on in this listing: with a project filter, the
/// targets of interest (with `subtree`, only the part below a grant inside the subtree, as
/// Keystone); otherwise every project the grant reaches.
fn inherited_targets(
    r: &impl Reader,
    f: &Filter,
    targets: &Option<Vec<Target>>,
    a: &Assignment,
    memo: &mut BTreeMap<Target, Vec<Target>>,
) -> Result<Vec<Target>> {
    if let (Some(Target::Project(_)), Some(ts)) = (&f.target, targets) {
        if !(f.subtree && ts.contains(&a.target)) {
            return Ok(ts.clone());
        }
    }
    if let Some(v) = memo.get(&a.target) {
        return Ok(v.clone());
    }
    let v: Vec<Target> = hierarchy::reach(r, &a.target)?.into_iter().map(Target::Project).collect();
    memo.insert(a.target.clone(), v.clone());
    Ok(v)
}

fn effective(r: &impl Reader, f: &Filter) -> Result<Vec<Entry>> {
    // Group grants are always expanded into users, so a group filter can match nothing.
    if f.group.is_some() {
        return Ok(Vec::new());
    }
    let targets = targets_of_interest(r, f)?;
    let graph = implication_graph(r)?;
    let mut global: BTreeMap<String, bool> = BTreeMap::new();
    let mut reached: BTreeMap<Target, Vec<Target>> = BTreeMap::new();
    let mut out = Vec::new();
    // The filtered user's groups now, expiring memberships included (`reads::groups`); the
    // member lists of groups hold permanent members only, as Keystone's do.
    let user_groups = match &f.user {
        Some(u) => {
            let mut groups = super::groups::ids_of_user(r, u, crate::clock::now_micros())?;
            groups.extend(f.also_groups.iter().filter(|g| !groups.contains(g)).cloned().collect::<Vec<_>>());
            Some(groups)
        }
        None => None,
    };
    for a in effective_sources(r, f, &targets, user_groups.as_deref())? {
        let on: Vec<Target> =
            if a.inherited { inherited_targets(r, f, &targets, &a, &mut reached)? } else { vec![a.target.clone()] };
        if on.is_empty() {
            continue;
        }
        let users: Vec<(String, Option<String>)> = match a.actor_kind {
            ActorKind::User => vec![(a.actor_id.clone(), None)],
            ActorKind::Group => match (&f.user, &user_groups) {
                (Some(u), Some(groups)) if groups.contains(&a.actor_id) => vec![(u.clone(), Some(a.actor_id.clone()))],
                (Some(_), _) => Vec::new(),
                (None, _) => {
                    r.member_user_ids(&a.actor_id)?.into_iter().map(|u| (u, Some(a.actor_id.clone()))).collect()
                }
            },
        };
        for (role_id, prior_role) in expand_roles(&graph, &a.role_id) {
            if f.role.as_ref().is_some_and(|only| only != &role_id) || !is_global(r, &mut global, &role_id)? {
                continue;
            }
            for (user, via_group) in &users {
                for t in &on {
                    out.push(Entry {
                        actor_kind: ActorKind::User,
                        actor_id: user.clone(),
                        target: t.clone(),
                        role_id: role_id.clone(),
                        via_group: via_group.clone(),
                        prior_role: prior_role.clone(),
                        grant: a.clone(),
                    });
                }
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
