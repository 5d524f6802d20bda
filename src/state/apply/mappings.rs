//! Mapping rulesets' invariants: an id is created once and replaced only while it exists
//! (and, when the service says so, unchanged since it read it), a ruleset keeps its
//! `domain_id`, a system mapping (any stored rule with `is_system`) is never replaced (only
//! deleted), its domain exists and every role it grants exists.

use super::super::cf;
use super::super::command::{not_found, Applied, ApplyError, ApplyResult};
use super::super::mapping::{keys, MappingApplied, MappingCommand, MappingRecord};
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::super::ruleset::MappingRuleSet;
use super::fatal::Fatal;

fn detailed(status: u16, key: &str, message: impl Into<String>) -> Result<ApplyResult, Fatal> {
    Ok(Err(ApplyError::Detailed { status, key: key.to_string(), message: message.into() }))
}

fn invalid(m: impl Into<String>) -> Result<ApplyResult, Fatal> {
    Ok(Err(ApplyError::Invalid(m.into())))
}

pub fn apply(tx: &mut Tx<'_>, cmd: MappingCommand) -> Result<ApplyResult, Fatal> {
    match cmd {
        MappingCommand::Put { ruleset, create, expected_version } => put(tx, ruleset, create, expected_version),
        MappingCommand::Delete { id } => delete(tx, &id),
    }
}

fn mapping_not_found(id: &str) -> ApplyError {
    ApplyError::Detailed {
        status: 404,
        key: "mapping_not_found".into(),
        message: format!("Could not find mapping: {id}."),
    }
}

fn put(tx: &mut Tx<'_>, text: String, create: bool, expected: Option<String>) -> Result<ApplyResult, Fatal> {
    let Ok(rs) = MappingRuleSet::from_stored(&text) else { return invalid("a mapping command carries no ruleset") };
    let (Some(id), Some(_)) = (rs.mapping_id.clone(), rs.ruleset_version) else {
        return invalid("a stored ruleset needs its mapping_id and ruleset_version");
    };
    let key = keys::ruleset(&id);
    let before = tx.get::<MappingRecord>(cf::MAPPINGS, &key)?;
    match (&before, create) {
        (Some(_), true) => {
            return Ok(Err(ApplyError::Conflict(format!(
                "Conflict occurred attempting to store mapping - Duplicate ID, {id}."
            ))))
        }
        (None, false) => return Ok(Err(mapping_not_found(&id))),
        _ => {}
    }
    if let Some(before) = before {
        let Ok(old) = MappingRuleSet::from_stored(&before.ruleset) else {
            return invalid(format!("the stored ruleset {id} cannot be read"));
        };
        let old_version = old.ruleset_version.map(|v| v.to_string());
        if expected.is_some() && expected != old_version {
            return Ok(Err(ApplyError::Conflict(format!(
                "Mapping {id} changed while this request was being served; retry it."
            ))));
        }
        if old.is_system() {
            return detailed(
                422,
                "system_mapping_immutable",
                format!("Mapping {id} is a system mapping: it cannot be changed, only deleted."),
            );
        }
        if old.domain_id != rs.domain_id {
            return detailed(422, "domain_id_immutable", format!("The domain_id of mapping {id} cannot change."));
        }
    }
    if let Some(d) = &rs.domain_id {
        if tx.domain(d)?.is_none() {
            return Ok(Err(not_found("domain", d)));
        }
    }
    for rule in &rs.rules {
        for role in rule.authorizations.iter().flat_map(|a| a.roles()) {
            if tx.role(&role.id)?.is_none() {
                return detailed(
                    422,
                    "role_not_found",
                    format!("Rule {:?} grants role {}, which does not exist.", rule.name, role.id),
                );
            }
        }
    }
    let record = MappingRecord { mapping_id: id, domain_id: rs.domain_id, ruleset: text };
    tx.put(cf::MAPPINGS, key, &record)?;
    bump_revision(tx)?;
    Ok(Ok(Applied::Mapping(MappingApplied::Ruleset(record))))
}

fn delete(tx: &mut Tx<'_>, id: &str) -> Result<ApplyResult, Fatal> {
    let key = keys::ruleset(id);
    if tx.get_raw(cf::MAPPINGS, &key)?.is_none() {
        return Ok(Err(mapping_not_found(id)));
    }
    tx.delete(cf::MAPPINGS, key);
    bump_revision(tx)?;
    Ok(Ok(Applied::Mapping(MappingApplied::Done)))
}

/// Every stored change of a ruleset moves the revision on (`keys::REVISION`).
fn bump_revision(tx: &mut Tx<'_>) -> Result<(), Fatal> {
    let rev: u64 = tx.get(cf::MAPPINGS, keys::REVISION)?.unwrap_or(0);
    tx.put(cf::MAPPINGS, keys::REVISION.to_vec(), &(rev + 1))
}

#[cfg(test)]
#[path = "mappings_tests.rs"]
mod tests;
