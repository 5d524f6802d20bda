//! Mapping rulesets' apply invariants, against a real engine: each refusal writes nothing.

use serde_json::json;

use crate::mapping::model::{MappingRuleSet, RulesetVersion};
use crate::state::apply::tests::{project, role, World};
use crate::state::command::{Applied, ApplyError, Command};
use crate::state::mapping::*;
use crate::state::{cf, Reader};

/// A domain `d` and a role `r`.
fn world() -> World {
    let w = World::new();
    w.apply(Command::CreateProject(project("d", "D", "d", true))).unwrap();
    w.apply(Command::CreateRole(role("r", "member"))).unwrap();
    w
}

fn ruleset(id: &str, domain: Option<&str>, role: &str, is_system: bool) -> MappingRuleSet {
    serde_json::from_value(json!({
        "mapping_id": id, "domain_id": domain, "provider_id": "p",
        "source": {"type": "federation", "idp_id": "i"},
        "rules": [{"name": "r1", "match": {"all_of": []},
                   "identity": {"user_name": "u", "is_system": is_system},
                   "authorizations": [{"type": "domain", "domain_id": "d", "roles": [{"id": role}]}]}],
    }))
    .unwrap()
}

fn put(rs: &MappingRuleSet, create: bool, expected: Option<String>) -> Command {
    let mut rs = rs.clone();
    rs.ruleset_version = Some(RulesetVersion::fresh());
    Command::Mapping(MappingCommand::Put { ruleset: rs.to_stored().unwrap(), create, expected_version: expected })
}

fn stored(w: &World, id: &str) -> Option<MappingRecord> {
    Reader::get(&w.engine.read(), cf::MAPPINGS, &keys::ruleset(id)).unwrap()
}

fn key_of(e: ApplyError) -> String {
    match e {
        ApplyError::Detailed { key, .. } => key,
        other => format!("{other:?}"),
    }
}

#[test]
fn create_then_replace_then_delete() {
    let w = world();
    let rs = ruleset("m", Some("d"), "r", false);
    let Applied::Mapping(MappingApplied::Ruleset(first)) = w.apply(put(&rs, true, None)).unwrap() else { panic!() };
    assert_eq!(stored(&w, "m").as_ref(), Some(&first));
    let v = MappingRuleSet::from_stored(&first.ruleset).unwrap().ruleset_version.unwrap().to_string();
    w.apply(put(&rs, false, Some(v))).unwrap();
    assert_ne!(stored(&w, "m").unwrap(), first, "a replacement stores the new version");
    w.apply(Command::Mapping(MappingCommand::Delete { id: "m".into() })).unwrap();
    assert_eq!(stored(&w, "m"), None);
}

#[test]
fn duplicate_ids_missing_rulesets_and_stale_versions_are_refused() {
    let w = world();
    let rs = ruleset("m", Some("d"), "r", false);
    assert!(
        matches!(w.apply(put(&ruleset("x", Some("d"), "r", false), false, None)), Err(e) if key_of(e.clone()) == "mapping_not_found")
    );
    w.apply(put(&rs, true, None)).unwrap();
    let before = stored(&w, "m");
    assert!(matches!(w.apply(put(&rs, true, None)), Err(ApplyError::Conflict(_))));
    assert!(matches!(w.apply(put(&rs, false, Some("00".repeat(16)))), Err(ApplyError::Conflict(_))));
    assert_eq!(stored(&w, "m"), before);
    let gone = w.apply(Command::Mapping(MappingCommand::Delete { id: "nope".into() })).unwrap_err();
    assert_eq!(key_of(gone), "mapping_not_found");
}

#[test]
fn domain_id_cannot_change() {
    let w = world();
    w.apply(Command::CreateProject(project("d2", "D2", "d2", true))).unwrap();
    w.apply(put(&ruleset("m", Some("d"), "r", false), true, None)).unwrap();
    let e = w.apply(put(&ruleset("m", Some("d2"), "r", false), false, None)).unwrap_err();
    assert_eq!(key_of(e), "domain_id_immutable");
}

#[test]
fn system_mappings_are_immutable_but_deletable() {
    let w = world();
    w.apply(put(&ruleset("m", Some("d"), "r", true), true, None)).unwrap();
    let before = stored(&w, "m");
    let e = w.apply(put(&ruleset("m", Some("d"), "r", false), false, None)).unwrap_err();
    assert_eq!(key_of(e), "system_mapping_immutable");
    assert_eq!(stored(&w, "m"), before);
    w.apply(Command::Mapping(MappingCommand::Delete { id: "m".into() })).unwrap();
    assert_eq!(stored(&w, "m"), None);
}

#[test]
fn unknown_roles_and_domains_are_refused() {
    let w = world();
    let e = w.apply(put(&ruleset("m", Some("d"), "no-such-role", false), true, None)).unwrap_err();
    assert_eq!(key_of(e), "role_not_found");
    let e = w.apply(put(&ruleset("m", Some("no-such-domain"), "r", false), true, None)).unwrap_err();
    assert!(matches!(e, ApplyError::NotFound { .. }), "{e:?}");
    assert_eq!(stored(&w, "m"), None);
    // A global ruleset (no domain) needs none.
    w.apply(put(&ruleset("g", None, "r", false), true, None)).unwrap();
}
