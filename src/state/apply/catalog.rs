//! Regions, services and endpoints of the service catalog, with Keystone's invariants:
//! parents and references exist, region trees stay acyclic, a region still serving
//! endpoints is not deleted, deleting a service deletes its endpoints; deletions take the
//! OS-ENDPOINT-POLICY associations naming what goes.

use std::collections::BTreeSet;

use super::super::cf;
use super::super::command::{not_found, Applied, ApplyError, ApplyResult};
use super::super::keys;
use super::super::model::{Endpoint, Region, Service};
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::fatal::Fatal;

fn duplicate(kind: &str, id: &str) -> ApplyError {
    ApplyError::Conflict(format!("Conflict occurred attempting to store {kind} - Duplicate ID, {id}."))
}

pub fn create_region(tx: &mut Tx<'_>, r: Region) -> Result<ApplyResult, Fatal> {
    if tx.region(&r.id)?.is_some() {
        return Ok(Err(duplicate("region", &r.id)));
    }
    if let Some(parent) = &r.parent_region_id {
        if tx.region(parent)?.is_none() {
            return Ok(Err(not_found("region", parent)));
        }
    }
    tx.put(cf::CATALOG, keys::region(&r.id), &r)?;
    Ok(Ok(Applied::Region(r)))
}

pub fn update_region(tx: &mut Tx<'_>, r: Region) -> Result<ApplyResult, Fatal> {
    if tx.region(&r.id)?.is_none() {
        return Ok(Err(not_found("region", &r.id)));
    }
    if let Some(parent) = &r.parent_region_id {
        // Walk up from the new parent: meeting this region again would close a cycle.
        let mut seen = BTreeSet::new();
        let mut at = Some(parent.clone());
        while let Some(id) = at {
            if id == r.id {
                return Ok(Err(ApplyError::Invalid(format!(
                    "The specified parent region {parent} would create a circular region hierarchy."
                ))));
            }
            if !seen.insert(id.clone()) {
                break;
            }
            match tx.region(&id)? {
                Some(found) => at = found.parent_region_id,
                None if &id == parent => return Ok(Err(not_found("region", parent))),
                None => at = None,
            }
        }
    }
    tx.put(cf::CATALOG, keys::region(&r.id), &r)?;
    Ok(Ok(Applied::Region(r)))
}

/// Deletes a region with its child regions, unless any of them still has endpoints.
pub fn delete_region(tx: &mut Tx<'_>, id: &str) -> Result<ApplyResult, Fatal> {
    if tx.region(id)?.is_none() {
        return Ok(Err(not_found("region", id)));
    }
    let all: Vec<Region> = tx.scan(cf::CATALOG, keys::REGION_PREFIX)?;
    let mut subtree = BTreeSet::from([id.to_string()]);
    let mut grew = true;
    while grew {
        grew = false;
        for r in &all {
            if r.parent_region_id.as_ref().is_some_and(|p| subtree.contains(p)) && subtree.insert(r.id.clone()) {
                grew = true;
            }
        }
    }
    let endpoints: Vec<Endpoint> = tx.scan(cf::CATALOG, keys::ENDPOINT_PREFIX)?;
    if endpoints.iter().any(|e| e.region_id.as_ref().is_some_and(|r| subtree.contains(r))) {
        return Ok(Err(ApplyError::Forbidden(format!(
            "Unable to delete region {id} because it or its child regions have associated endpoints."
        ))));
    }
    super::endpoint_policy::forget_regions(tx, &subtree)?;
    let regions: Vec<String> = subtree.into_iter().collect();
    super::limits::forget_catalog(tx, None, &regions)?;
    for r in regions {
        tx.delete(cf::CATALOG, keys::region(&r));
    }
    Ok(Ok(Applied::Done))
}

pub fn create_service(tx: &mut Tx<'_>, s: Service) -> Result<ApplyResult, Fatal> {
    if tx.service(&s.id)?.is_some() {
        return Ok(Err(duplicate("service", &s.id)));
    }
    tx.put(cf::CATALOG, keys::service(&s.id), &s)?;
    Ok(Ok(Applied::Service(s)))
}

pub fn update_service(tx: &mut Tx<'_>, s: Service) -> Result<ApplyResult, Fatal> {
    if tx.service(&s.id)?.is_none() {
        return Ok(Err(not_found("service", &s.id)));
    }
    tx.put(cf::CATALOG, keys::service(&s.id), &s)?;
    Ok(Ok(Applied::Service(s)))
}

/// Deleting a service deletes its endpoints (Keystone).
pub fn delete_service(tx: &mut Tx<'_>, id: &str) -> Result<ApplyResult, Fatal> {
    if tx.service(id)?.is_none() {
        return Ok(Err(not_found("service", id)));
    }
    let endpoints: Vec<Endpoint> = tx.scan(cf::CATALOG, keys::ENDPOINT_PREFIX)?;
    for e in endpoints.iter().filter(|e| e.service_id == id) {
        super::endpoint_policy::forget_endpoint(tx, &e.id)?;
        tx.delete(cf::CATALOG, keys::endpoint(&e.id));
    }
    super::endpoint_policy::forget_service(tx, id)?;
    super::limits::forget_catalog(tx, Some(id), &[])?;
    tx.delete(cf::CATALOG, keys::service(id));
    Ok(Ok(Applied::Done))
}

/// An endpoint's service must exist (404, per the spec) and its region too (400, as Keystone).
fn check_endpoint_refs(tx: &Tx<'_>, e: &Endpoint) -> Result<Option<ApplyError>, Fatal> {
    if tx.service(&e.service_id)?.is_none() {
        return Ok(Some(not_found("service", &e.service_id)));
    }
    if let Some(r) = &e.region_id {
        if tx.region(r)?.is_none() {
            return Ok(Some(ApplyError::Invalid(format!(
                "Invalid input for field 'region_id': region {r} does not exist."
            ))));
        }
    }
    Ok(None)
}

pub fn create_endpoint(tx: &mut Tx<'_>, e: Endpoint) -> Result<ApplyResult, Fatal> {
    if tx.endpoint(&e.id)?.is_some() {
        return Ok(Err(duplicate("endpoint", &e.id)));
    }
    if let Some(err) = check_endpoint_refs(tx, &e)? {
        return Ok(Err(err));
    }
    tx.put(cf::CATALOG, keys::endpoint(&e.id), &e)?;
    Ok(Ok(Applied::Endpoint(e)))
}

pub fn update_endpoint(tx: &mut Tx<'_>, e: Endpoint) -> Result<ApplyResult, Fatal> {
    if tx.endpoint(&e.id)?.is_none() {
        return Ok(Err(not_found("endpoint", &e.id)));
    }
    if let Some(err) = check_endpoint_refs(tx, &e)? {
        return Ok(Err(err));
    }
    tx.put(cf::CATALOG, keys::endpoint(&e.id), &e)?;
    Ok(Ok(Applied::Endpoint(e)))
}

pub fn delete_endpoint(tx: &mut Tx<'_>, id: &str) -> Result<ApplyResult, Fatal> {
    if tx.endpoint(id)?.is_none() {
        return Ok(Err(not_found("endpoint", id)));
    }
    super::endpoint_policy::forget_endpoint(tx, id)?;
    tx.delete(cf::CATALOG, keys::endpoint(id));
    Ok(Ok(Applied::Done))
}
