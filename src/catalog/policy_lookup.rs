//! OS-ENDPOINT-POLICY resolution over the stored associations (`DocKind::PolicyAssociation`):
//! which policy an endpoint gets, and which endpoints a policy reaches. Keystone's order: the
//! endpoint's own association, else its service's in its region or the nearest parent region
//! that has one, else its service's alone.

use std::collections::BTreeSet;

use idnode_storage::Result;
use serde_json::Value;

use crate::http::docs::body;
use crate::state::model::{Doc, DocKind, Endpoint, Region};
use crate::state::read::CatalogReads;
use crate::state::Reader;

pub const KIND: DocKind = DocKind::PolicyAssociation;

/// What an association applies to: its record id (one policy per target).
pub enum Target<'a> {
    Endpoint(&'a str),
    Service(&'a str),
    ServiceInRegion(&'a str, &'a str),
}

impl Target<'_> {
    pub fn key(&self) -> String {
        match self {
            Target::Endpoint(e) => format!("endpoint/{e}"),
            Target::Service(s) => format!("service/{s}"),
            Target::ServiceInRegion(s, r) => format!("service/{s}/{r}"),
        }
    }
}

/// The policy id an association names.
pub fn policy_of(doc: &Doc) -> Option<String> {
    body(doc).get("policy_id").and_then(Value::as_str).map(str::to_string)
}

/// The policy associated with `target` itself, if any.
pub fn associated(r: &impl Reader, target: &Target<'_>) -> Result<Option<String>> {
    Ok(r.doc(KIND, &target.key())?.as_ref().and_then(policy_of))
}

/// The id of the policy that applies to `e`, if any.
pub fn policy_for_endpoint(r: &impl Reader, e: &Endpoint) -> Result<Option<String>> {
    if let Some(p) = associated(r, &Target::Endpoint(&e.id))? {
        return Ok(Some(p));
    }
    // Up the region tree; a repeated region (a corrupt cycle) ends the walk.
    let mut seen = BTreeSet::new();
    let mut at = e.region_id.clone();
    while let Some(region_id) = at {
        if let Some(p) = associated(r, &Target::ServiceInRegion(&e.service_id, &region_id))? {
            return Ok(Some(p));
        }
        seen.insert(region_id.clone());
        at = r.region(&region_id)?.and_then(|g| g.parent_region_id).filter(|p| !seen.contains(p));
    }
    associated(r, &Target::Service(&e.service_id))
}

/// The endpoints `policy_id` applies to through its associations (in their id order, each
/// once): the associated endpoints, the service's endpoints in the region and every region
/// below it, and all of a service's endpoints.
pub fn endpoints_for_policy(r: &impl Reader, policy_id: &str) -> Result<Vec<Endpoint>> {
    let endpoints: Vec<Endpoint> = r.endpoints()?;
    let regions: Vec<Region> = r.regions()?;
    let mut out: Vec<Endpoint> = Vec::new();
    let mut add = |e: &Endpoint| {
        if !out.iter().any(|o| o.id == e.id) {
            out.push(e.clone());
        }
    };
    for doc in r.docs(KIND)? {
        let b = body(&doc);
        if b.get("policy_id").and_then(Value::as_str) != Some(policy_id) {
            continue;
        }
        let field = |k: &str| b.get(k).and_then(Value::as_str).map(str::to_string);
        match (field("endpoint_id"), field("service_id"), field("region_id")) {
            (Some(id), _, _) => endpoints.iter().filter(|e| e.id == id).for_each(&mut add),
            (None, Some(service), None) => endpoints.iter().filter(|e| e.service_id == service).for_each(&mut add),
            (None, Some(service), Some(region)) => {
                let below = subtree(&regions, &region);
                endpoints
                    .iter()
                    .filter(|e| e.service_id == service && e.region_id.as_ref().is_some_and(|r| below.contains(r)))
                    .for_each(&mut add);
            }
            (None, None, _) => {}
        }
    }
    Ok(out)
}

/// `root` and every region below it.
fn subtree(regions: &[Region], root: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::from([root.to_string()]);
    let mut grew = true;
    while grew {
        grew = false;
        for g in regions {
            if g.parent_region_id.as_ref().is_some_and(|p| found.contains(p)) && found.insert(g.id.clone()) {
                grew = true;
            }
        }
    }
    found
}
