//! The project tree as inherited grants see it: where an inherited grant can come from for a
//! project (its domain, its ancestors) and which projects it reaches (every project of the
//! domain, or the strict descendants of the project). Walks are guarded against cycles.

use std::collections::{BTreeMap, BTreeSet};

use idnode_storage::Result;

use crate::state::keys::ns;
use crate::state::model::Target;
use crate::state::Reader;

/// The ancestors of a project, nearest first, without its domain (empty if it is unknown).
pub fn ancestors(r: &impl Reader, project_id: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::from([project_id.to_string()]);
    let mut next = r.project(project_id)?.and_then(|p| p.parent_id);
    while let Some(id) = next {
        if !seen.insert(id.clone()) {
            break;
        }
        match r.project(&id)? {
            Some(p) if !p.is_domain => {
                next = p.parent_id;
                out.push(p.id);
            }
            _ => break,
        }
    }
    Ok(out)
}

/// Every project of a domain, sorted.
pub fn projects_in_domain(r: &impl Reader, domain_id: &str) -> Result<Vec<String>> {
    let mut ids = r.member_ids(ns::PROJECTS_OF_DOMAIN, domain_id)?;
    ids.sort();
    Ok(ids)
}

/// The strict descendants of a project (children, their children, ...), sorted.
pub fn descendants(r: &impl Reader, project_id: &str) -> Result<Vec<String>> {
    let Some(root) = r.project(project_id)?.filter(|p| !p.is_domain) else { return Ok(Vec::new()) };
    let mut children: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for id in projects_in_domain(r, &root.domain_id)? {
        if let Some(parent) = r.project(&id)?.and_then(|p| p.parent_id) {
            children.entry(parent).or_default().push(id);
        }
    }
    let mut out = BTreeSet::new();
    let mut stack = vec![root.id];
    while let Some(id) = stack.pop() {
        for child in children.get(&id).into_iter().flatten() {
            if out.insert(child.clone()) {
                stack.push(child.clone());
            }
        }
    }
    Ok(out.into_iter().collect())
}

/// The projects an inherited grant on `target` applies to: all of a domain's projects, or a
/// project's descendants (never the project itself, as in Keystone).
pub fn reach(r: &impl Reader, target: &Target) -> Result<Vec<String>> {
    match target {
        Target::Domain(d) => projects_in_domain(r, d),
        Target::Project(p) => descendants(r, p),
        Target::System => Ok(Vec::new()),
    }
}

/// Where inherited grants that reach `project_id` can sit: its domain and its ancestors.
pub fn inherited_sources(r: &impl Reader, project_id: &str) -> Result<Vec<Target>> {
    let Some(p) = r.project(project_id)?.filter(|p| !p.is_domain) else { return Ok(Vec::new()) };
    let mut out = vec![Target::Domain(p.domain_id)];
    out.extend(ancestors(r, project_id)?.into_iter().map(Target::Project));
    Ok(out)
}
