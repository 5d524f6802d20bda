//! Unified limits' invariants, as Keystone's unified limit manager and SQL driver keep them:
//! a registered limit names an existing service (and region) and is the only one of its
//! (service, region, resource name); a limit names an existing project or domain and a
//! registered limit, and is its owner's only one for it; a registered limit that a limit
//! refers to neither changes nor goes (403); under `strict_two_level` a project's limit never
//! exceeds its domain's and projects nest at most two deep. A create stores all or nothing.
//! Limits go with their project or domain; registered limits (and their limits) with their
//! service or region.

use super::super::cf;
use super::super::command::{Applied, ApplyError, ApplyResult};
use super::super::keys::ns;
use super::super::limits::{
    keys, Limit, LimitApplied, LimitCommand, Model, NewLimit, RegisteredLimit, RegisteredPatch,
};
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::fatal::Fatal;

type Checked<T> = Result<Result<T, ApplyError>, Fatal>;

pub fn apply(tx: &mut Tx<'_>, cmd: LimitCommand) -> Result<ApplyResult, Fatal> {
    match cmd {
        LimitCommand::CreateRegistered { limits } => create_registered(tx, limits),
        LimitCommand::UpdateRegistered { id, patch } => update_registered(tx, &id, patch),
        LimitCommand::DeleteRegistered { id } => delete_registered(tx, &id),
        LimitCommand::Create { limits, model } => create(tx, limits, model),
        LimitCommand::Update { id, resource_limit, description, model } => {
            update(tx, &id, resource_limit, description, model)
        }
        LimitCommand::Delete { id } => {
            if tx.get_raw(cf::LIMITS, &keys::limit(&id))?.is_none() {
                return Ok(Err(limit_not_found(&id)));
            }
            tx.delete(cf::LIMITS, keys::limit(&id));
            Ok(Ok(Applied::Done))
        }
        LimitCommand::CheckDepth { parent_id, max_depth } => match check_depth(tx, &parent_id, max_depth)? {
            Ok(()) => Ok(Ok(Applied::Done)),
            Err(e) => Ok(Err(e)),
        },
    }
}

fn registered_not_found(id: &str) -> ApplyError {
    ApplyError::NotFound { kind: "registered limit".into(), id: id.into() }
}

fn limit_not_found(id: &str) -> ApplyError {
    ApplyError::NotFound { kind: "limit".into(), id: id.into() }
}

/// Keystone's `ValidationError(attribute, target)` for a reference that does not exist.
fn missing(attribute: &str, target: &str) -> ApplyError {
    ApplyError::Invalid(format!(
        "Expecting to find {attribute} in {target}. The server could not comply with the request since it is either \
         malformed or otherwise incorrect. The client is assumed to be in error."
    ))
}

fn duplicate(kind: &str) -> ApplyError {
    ApplyError::Conflict(format!("Conflict occurred attempting to store {kind} - Duplicate entry."))
}

fn referenced(id: &str) -> ApplyError {
    ApplyError::Forbidden(format!(
        "Unable to update or delete registered limit {id} because there are project limits associated with it."
    ))
}

fn registered_all(tx: &Tx<'_>) -> Result<Vec<RegisteredLimit>, Fatal> {
    tx.scan(cf::LIMITS, keys::REGISTERED_PREFIX)
}

fn limits_all(tx: &Tx<'_>) -> Result<Vec<Limit>, Fatal> {
    tx.scan(cf::LIMITS, keys::LIMIT_PREFIX)
}

/// The service and region a registered limit names exist (Keystone's 400 otherwise).
fn service_and_region(tx: &Tx<'_>, service_id: &str, region_id: Option<&str>, target: &str) -> Checked<()> {
    if tx.service(service_id)?.is_none() {
        return Ok(Err(missing("service_id", target)));
    }
    if let Some(r) = region_id {
        if tx.region(r)?.is_none() {
            return Ok(Err(missing("region_id", target)));
        }
    }
    Ok(Ok(()))
}

fn create_registered(tx: &mut Tx<'_>, limits: Vec<RegisteredLimit>) -> Result<ApplyResult, Fatal> {
    for r in &limits {
        if let Err(e) = service_and_region(tx, &r.service_id, r.region_id.as_deref(), "registered_limit")? {
            return Ok(Err(e));
        }
    }
    let mut taken = registered_all(tx)?;
    for r in &limits {
        if taken.iter().any(|t| t.id == r.id) {
            return Ok(Err(ApplyError::Conflict(format!(
                "Conflict occurred attempting to store registered_limit - Duplicate ID, {}.",
                r.id
            ))));
        }
        if taken.iter().any(|t| t.slot() == r.slot()) {
            return Ok(Err(duplicate("registered_limit")));
        }
        taken.push(r.clone());
    }
    for r in &limits {
        tx.put(cf::LIMITS, keys::registered(&r.id), r)?;
    }
    Ok(Ok(Applied::Limits(LimitApplied::Registered(limits))))
}

fn is_referenced(tx: &Tx<'_>, registered_id: &str) -> Result<bool, Fatal> {
    Ok(limits_all(tx)?.iter().any(|l| l.registered_limit_id == registered_id))
}

fn update_registered(tx: &mut Tx<'_>, id: &str, patch: RegisteredPatch) -> Result<ApplyResult, Fatal> {
    // Keystone checks the references the patch names before it looks the record up.
    if let Some(s) = &patch.service_id {
        if tx.service(s)?.is_none() {
            return Ok(Err(missing("service_id", "registered_limit")));
        }
    }
    if let Some(Some(r)) = &patch.region_id {
        if tx.region(r)?.is_none() {
            return Ok(Err(missing("region_id", "registered_limit")));
        }
    }
    let Some(mut r) = tx.get::<RegisteredLimit>(cf::LIMITS, &keys::registered(id))? else {
        return Ok(Err(registered_not_found(id)));
    };
    if let Some(s) = patch.service_id.clone() {
        r.service_id = s;
    }
    if let Some(region) = patch.region_id.clone() {
        r.region_id = region;
    }
    if let Some(n) = patch.resource_name.clone() {
        r.resource_name = n;
    }
    if let Some(d) = patch.default_limit {
        r.default_limit = d;
    }
    if let Some(d) = patch.description.clone() {
        r.description = d;
    }
    // Keystone refuses any change of a registered limit in use, not only of what limits
    // inherit from it.
    if is_referenced(tx, id)? {
        return Ok(Err(referenced(id)));
    }
    let moves = patch.service_id.is_some() || patch.region_id.is_some() || patch.resource_name.is_some();
    if moves && registered_all(tx)?.iter().any(|t| t.id != r.id && t.slot() == r.slot()) {
        return Ok(Err(duplicate("registered_limit")));
    }
    tx.put(cf::LIMITS, keys::registered(id), &r)?;
    Ok(Ok(Applied::Limits(LimitApplied::Registered(vec![r]))))
}

fn delete_registered(tx: &mut Tx<'_>, id: &str) -> Result<ApplyResult, Fatal> {
    if tx.get_raw(cf::LIMITS, &keys::registered(id))?.is_none() {
        return Ok(Err(registered_not_found(id)));
    }
    if is_referenced(tx, id)? {
        return Ok(Err(referenced(id)));
    }
    tx.delete(cf::LIMITS, keys::registered(id));
    Ok(Ok(Applied::Done))
}

/// Keystone's `_assert_resource_exist` for a limit: a `project_id` naming a domain makes it
/// a domain limit.
fn resolve_owner(tx: &Tx<'_>, mut l: NewLimit) -> Checked<NewLimit> {
    if let Err(e) = service_and_region(tx, &l.service_id, l.region_id.as_deref(), "limit")? {
        return Ok(Err(e));
    }
    if let Some(pid) = l.project_id.clone() {
        match tx.project(&pid)? {
            None => return Ok(Err(missing("project_id", "limit"))),
            Some(p) if p.is_domain => {
                l.domain_id = l.project_id.take();
            }
            Some(_) => {}
        }
    }
    if let Some(did) = &l.domain_id {
        if tx.domain(did)?.is_none() {
            return Ok(Err(missing("domain_id", "limit")));
        }
    }
    Ok(Ok(l))
}

fn create(tx: &mut Tx<'_>, asked: Vec<NewLimit>, model: Model) -> Result<ApplyResult, Fatal> {
    let mut wanted = Vec::with_capacity(asked.len());
    for l in asked {
        match resolve_owner(tx, l)? {
            Ok(l) => wanted.push(l),
            Err(e) => return Ok(Err(e)),
        }
    }
    if model == Model::StrictTwoLevel {
        if let Err(e) = strict::check_new(tx, &wanted)? {
            return Ok(Err(e));
        }
    }
    let registered = registered_all(tx)?;
    let mut stored = limits_all(tx)?;
    let mut made = Vec::with_capacity(wanted.len());
    for l in wanted {
        let slot = (l.service_id.as_str(), l.region_id.as_deref(), l.resource_name.as_str());
        let Some(reg) = registered.iter().find(|r| r.slot() == slot) else {
            return Ok(Err(ApplyError::Forbidden(
                "Unable to create a limit that has no corresponding registered limit.".into(),
            )));
        };
        if stored.iter().any(|s| s.id == l.id) {
            return Ok(Err(ApplyError::Conflict(format!(
                "Conflict occurred attempting to store limit - Duplicate ID, {}.",
                l.id
            ))));
        }
        let same_owner = |s: &Limit| match (&l.project_id, &l.domain_id) {
            (Some(p), _) => s.project_id.as_ref() == Some(p),
            (None, d) => s.project_id.is_none() && s.domain_id == *d,
        };
        if stored.iter().any(|s| s.registered_limit_id == reg.id && same_owner(s)) {
            return Ok(Err(duplicate("limit")));
        }
        let limit = Limit {
            id: l.id,
            project_id: l.project_id,
            domain_id: l.domain_id,
            registered_limit_id: reg.id.clone(),
            service_id: reg.service_id.clone(),
            region_id: reg.region_id.clone(),
            resource_name: reg.resource_name.clone(),
            resource_limit: l.resource_limit,
            description: l.description,
        };
        stored.push(limit.clone());
        made.push(limit);
    }
    for l in &made {
        tx.put(cf::LIMITS, keys::limit(&l.id), l)?;
    }
    Ok(Ok(Applied::Limits(LimitApplied::Limits(made))))
}

/// An imported registered limit (`Command::Import`), checked as a create checks one.
pub fn import_registered(tx: &mut Tx<'_>, r: RegisteredLimit) -> Result<ApplyResult, Fatal> {
    create_registered(tx, vec![r])
}

/// An imported limit (`Command::Import`): only onto the registered limit it names, checked and
/// stored as a create under the flat model. Apply cannot read the node's
/// `[unified_limit] enforcement_model`; the source held its limits to its own model, and a
/// later update here is judged by ours.
pub fn import_limit(tx: &mut Tx<'_>, l: Limit) -> Result<ApplyResult, Fatal> {
    match tx.get::<RegisteredLimit>(cf::LIMITS, &keys::registered(&l.registered_limit_id))? {
        Some(reg) if reg.slot() == l.slot() => {}
        Some(_) => {
            return Ok(Err(ApplyError::Conflict(format!(
                "registered limit {} here is for another service, region or resource",
                l.registered_limit_id
            ))))
        }
        None => return Ok(Err(registered_not_found(&l.registered_limit_id))),
    }
    let new = NewLimit {
        id: l.id,
        project_id: l.project_id,
        domain_id: l.domain_id,
        service_id: l.service_id,
        region_id: l.region_id,
        resource_name: l.resource_name,
        resource_limit: l.resource_limit,
        description: l.description,
    };
    create(tx, vec![new], Model::Flat)
}

fn update(
    tx: &mut Tx<'_>,
    id: &str,
    resource_limit: Option<i64>,
    description: Option<Option<String>>,
    model: Model,
) -> Result<ApplyResult, Fatal> {
    let Some(mut l) = tx.get::<Limit>(cf::LIMITS, &keys::limit(id))? else {
        return Ok(Err(limit_not_found(id)));
    };
    if let Some(v) = resource_limit {
        l.resource_limit = v;
    }
    if let Some(d) = description {
        l.description = d;
    }
    if model == Model::StrictTwoLevel {
        let as_new = NewLimit {
            id: l.id.clone(),
            project_id: l.project_id.clone(),
            domain_id: l.domain_id.clone(),
            service_id: l.service_id.clone(),
            region_id: l.region_id.clone(),
            resource_name: l.resource_name.clone(),
            resource_limit: l.resource_limit,
            description: None,
        };
        if let Err(e) = strict::check_new(tx, &[as_new])? {
            return Ok(Err(e));
        }
    }
    tx.put(cf::LIMITS, keys::limit(id), &l)?;
    Ok(Ok(Applied::Limits(LimitApplied::Limits(vec![l]))))
}

/// Keystone's `_assert_max_hierarchy_depth`: the parent's ancestors, the parent and the new
/// project make the depth.
fn check_depth(tx: &Tx<'_>, parent_id: &str, max_depth: u32) -> Checked<()> {
    let mut depth: u32 = 1;
    let mut at = Some(parent_id.to_string());
    // Bounded walk: a project tree is acyclic, but a corrupt one must not spin apply.
    while let Some(id) = at {
        depth += 1;
        if depth > max_depth + 1 {
            break;
        }
        at = tx.project(&id)?.and_then(|p| p.parent_id);
    }
    if depth > max_depth {
        return Ok(Err(ApplyError::Forbidden(format!("Max hierarchy depth reached for {parent_id} branch."))));
    }
    Ok(Ok(()))
}

/// A project (or domain) is going: its limits go too.
pub fn forget_project(tx: &mut Tx<'_>, project_id: &str) -> Result<(), Fatal> {
    for l in limits_all(tx)? {
        if l.project_id.as_deref() == Some(project_id) || l.domain_id.as_deref() == Some(project_id) {
            tx.delete(cf::LIMITS, keys::limit(&l.id));
        }
    }
    Ok(())
}

/// A service or region is going: the registered limits naming it go, with their limits
/// (Keystone's foreign keys would refuse the delete with an internal error instead).
pub fn forget_catalog(tx: &mut Tx<'_>, service_id: Option<&str>, region_ids: &[String]) -> Result<(), Fatal> {
    let gone: Vec<String> = registered_all(tx)?
        .into_iter()
        .filter(|r| {
            service_id == Some(r.service_id.as_str())
                || r.region_id.as_ref().is_some_and(|rid| region_ids.contains(rid))
        })
        .map(|r| r.id)
        .collect();
    if gone.is_empty() {
        return Ok(());
    }
    for l in limits_all(tx)? {
        if gone.contains(&l.registered_limit_id) {
            tx.delete(cf::LIMITS, keys::limit(&l.id));
        }
    }
    for id in gone {
        tx.delete(cf::LIMITS, keys::registered(&id));
    }
    Ok(())
}

/// `strict_two_level` (Keystone's `StrictTwoLevelModel.check_limit`).
mod strict {
    use super::*;

    fn same_slot(a: (&str, Option<&str>, &str), l: &NewLimit) -> bool {
        a == (l.service_id.as_str(), l.region_id.as_deref(), l.resource_name.as_str())
    }

    /// The value a parent (a domain, or a project one level up) holds: its own domain limit,
    /// or else the registered default.
    fn parent_value(tx: &Tx<'_>, parent_id: &str, l: &NewLimit) -> Result<Option<i64>, Fatal> {
        let own = limits_all(tx)?
            .into_iter()
            .find(|s| s.domain_id.as_deref() == Some(parent_id) && s.project_id.is_none() && same_slot(s.slot(), l));
        if let Some(s) = own {
            return Ok(Some(s.resource_limit));
        }
        Ok(registered_all(tx)?.into_iter().find(|r| same_slot(r.slot(), l)).map(|r| r.default_limit))
    }

    fn refused(l: &NewLimit) -> ApplyError {
        let (level, id) = match &l.project_id {
            Some(p) => ("project_id", p.as_str()),
            None => ("domain_id", l.domain_id.as_deref().unwrap_or("None")),
        };
        ApplyError::Forbidden(format!(
            "Invalid resource limit: The resource limit ({level}: {id}, resource_name: {}, resource_limit: {}, \
             service_id: {}, region_id: {}) doesn't satisfy current hierarchy model..",
            l.resource_name,
            l.resource_limit,
            l.service_id,
            l.region_id.as_deref().unwrap_or("None")
        ))
    }

    /// Each limit against its parent (in the request or stored) or its children (stored).
    /// Values 0 and "none" never bind, as in Keystone (which reads them as false).
    pub fn check_new(tx: &Tx<'_>, wanted: &[NewLimit]) -> Checked<()> {
        for l in wanted {
            if let Some(pid) = &l.project_id {
                let Some(parent_id) = tx.project(pid)?.and_then(|p| p.parent_id) else { continue };
                let in_request = wanted.iter().find(|o| {
                    o.project_id.is_none()
                        && o.domain_id.as_deref() == Some(parent_id.as_str())
                        && same_slot((&o.service_id, o.region_id.as_deref(), &o.resource_name), l)
                });
                if let Some(parent) = in_request {
                    if l.resource_limit > parent.resource_limit {
                        return Ok(Err(refused(l)));
                    }
                    continue;
                }
                let parent = parent_value(tx, &parent_id, l)?;
                if parent.is_some_and(|v| v != 0 && l.resource_limit > v) {
                    return Ok(Err(refused(l)));
                }
            } else if let Some(did) = &l.domain_id {
                let stored = limits_all(tx)?;
                for child in tx.member_ids(ns::PROJECTS_OF_DOMAIN, did)? {
                    let value = stored
                        .iter()
                        .find(|s| s.project_id.as_deref() == Some(child.as_str()) && same_slot(s.slot(), l))
                        .map(|s| s.resource_limit);
                    if value.is_some_and(|v| v != 0 && l.resource_limit < v) {
                        return Ok(Err(refused(l)));
                    }
                }
            }
        }
        Ok(Ok(()))
    }
}

#[cfg(test)]
#[path = "limits_tests.rs"]
mod tests;
