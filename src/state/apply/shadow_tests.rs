//! The shadow registry's apply invariants, against a real engine: each refusal writes nothing
//! and the lifecycle index always holds exactly one entry per record.

use serde_json::json;

use crate::mapping::model::{Authorization, GroupStrategy, MappingRuleSet, RoleRef, RulesetVersion};
use crate::state::apply::tests::{project, role, World};
use crate::state::command::{Applied, ApplyError, Command};
use crate::state::mapping::MappingCommand;
use crate::state::shadow::*;
use crate::state::{cf, Reader};

/// A domain `d`, a role `r` and a mapping `m`.
fn world() -> World {
    let w = World::new();
    w.apply(Command::CreateProject(project("d", "D", "d", true))).unwrap();
    w.apply(Command::CreateRole(role("r", "member"))).unwrap();
    let mut rs: MappingRuleSet = serde_json::from_value(json!({
        "mapping_id": "m", "domain_id": "d", "provider_id": "p",
        "source": {"type": "k8s", "cluster_id": "c"},
        "rules": [{"name": "r1", "match": {"all_of": []},
                   "identity": {"user_name": "u", "identity_mode": "ephemeral"},
                   "authorizations": [{"type": "domain", "domain_id": "d", "roles": [{"id": "r"}]}]}],
    }))
    .unwrap();
    rs.ruleset_version = Some(RulesetVersion::fresh());
    let put = MappingCommand::Put { ruleset: rs.to_stored().unwrap(), create: true, expected_version: None };
    w.apply(Command::Mapping(put)).unwrap();
    w
}

fn record(workload: &str, is_system: bool) -> VirtualUserMetadata {
    let auth = vec![Authorization::Domain {
        domain_id: "d".into(),
        roles: vec![RoleRef { id: "r".into(), name: Some("member".into()) }],
    }];
    VirtualUserMetadata {
        user_id: virtual_user_id("p", workload),
        unique_workload_id: workload.into(),
        mapping_id: "m".into(),
        matched_rule_name: "r1".into(),
        domain_id: Some("d".into()),
        resolved_user_name: format!("system:serviceaccount:{workload}"),
        is_system,
        resolved_group_bindings: vec![ResolvedGroupBinding {
            resolved_group_id: "g".into(),
            group_domain_id: "d".into(),
            strategy: GroupStrategy::Get,
        }],
        authorizations: VirtualUserMetadata::store_authorizations(&auth).unwrap(),
        ruleset_version: "v1".into(),
        enabled: false,
        created_at: -1,
        last_authenticated_at: -1,
        disabled_at: Some(-1),
    }
}

fn upsert(w: &World, r: VirtualUserMetadata, at: i64) -> Result<VirtualUserMetadata, ApplyError> {
    match w.apply(Command::Shadow(ShadowCommand::Upsert { record: Box::new(r), at }))? {
        Applied::Shadow(ShadowApplied::Record(r)) => Ok(*r),
        other => panic!("{other:?}"),
    }
}

fn disable(w: &World, before: i64, at: i64, limit: u32) -> Vec<String> {
    match w.apply(Command::Shadow(ShadowCommand::DisableInactive { before, at, limit })).unwrap() {
        Applied::Shadow(ShadowApplied::Disabled(ids)) => ids,
        other => panic!("{other:?}"),
    }
}

fn delete(w: &World, before: i64, limit: u32) -> Vec<VirtualUserMetadata> {
    match w.apply(Command::Shadow(ShadowCommand::DeleteArchived { before, limit })).unwrap() {
        Applied::Shadow(ShadowApplied::Deleted(rs)) => rs,
        other => panic!("{other:?}"),
    }
}

fn stored(w: &World, id: &str) -> Option<VirtualUserMetadata> {
    Reader::get(&w.engine.read(), cf::SHADOW, &keys::record(id)).unwrap()
}

/// Every key of the column family, for "wrote nothing" and index checks.
fn all_keys(w: &World) -> Vec<Vec<u8>> {
    w.engine.read().scan_raw(cf::SHADOW, b"").unwrap().into_iter().map(|(k, _)| k).collect()
}

/// Exactly one index entry per record, under the right prefix and time.
fn assert_index_in_step(w: &World) {
    let records: Vec<VirtualUserMetadata> = w.engine.read().scan(cf::SHADOW, keys::RECORD_PREFIX).unwrap();
    let mut expected: Vec<Vec<u8>> = records
        .iter()
        .map(|r| match (r.enabled, r.disabled_at) {
            (true, None) => keys::active(r.last_authenticated_at, &r.user_id),
            (false, Some(at)) => keys::disabled(at, &r.user_id),
            other => panic!("inconsistent record state {other:?}"),
        })
        .collect();
    expected.sort();
    let index: Vec<Vec<u8>> = all_keys(w)
        .into_iter()
        .filter(|k| k.starts_with(keys::ACTIVE_PREFIX) || k.starts_with(keys::DISABLED_PREFIX))
        .collect();
    assert_eq!(index, expected);
}

#[test]
fn upsert_creates_then_refreshes() {
    let w = world();
    let created = upsert(&w, record("ns/a", false), 100).unwrap();
    assert!(created.enabled);
    assert_eq!((created.created_at, created.last_authenticated_at, created.disabled_at), (100, 100, None));
    assert_eq!(stored(&w, &created.user_id), Some(created.clone()));
    assert_eq!(created.authorizations().unwrap()[0].roles()[0].id, "r");
    assert_index_in_step(&w);

    let mut next = record("ns/a", false);
    next.ruleset_version = "v2".into();
    let refreshed = upsert(&w, next, 200).unwrap();
    assert_eq!((refreshed.created_at, refreshed.last_authenticated_at), (100, 200));
    assert_eq!(refreshed.ruleset_version, "v2", "the snapshot at issuance is the newest one");
    // A command stamped earlier never moves the time back.
    assert_eq!(upsert(&w, record("ns/a", false), 150).unwrap().last_authenticated_at, 200);
    assert_index_in_step(&w);
    assert_eq!(all_keys(&w).len(), 2, "one record, one index entry");
}

#[test]
fn reenable_keeps_is_system_and_created_at() {
    let w = world();
    let id = upsert(&w, record("ns/sys", true), 10).unwrap().user_id;
    assert_eq!(disable(&w, 1000, 1000, 10), vec![id.clone()]);
    let off = stored(&w, &id).unwrap();
    assert_eq!((off.enabled, off.disabled_at), (false, Some(1000)));
    assert_index_in_step(&w);

    let back = upsert(&w, record("ns/sys", false), 2000).unwrap();
    assert!(back.enabled);
    assert!(back.is_system, "is_system keeps its original value");
    assert_eq!((back.created_at, back.last_authenticated_at, back.disabled_at), (10, 2000, None));
    assert_index_in_step(&w);
}

#[test]
fn disable_inactive_is_bounded_by_time_and_limit() {
    let w = world();
    let ids: Vec<String> =
        (0..5).map(|i| upsert(&w, record(&format!("ns/{i}"), false), 10 * i).unwrap().user_id).collect();
    // Older than 35: the first four (0, 10, 20, 30), two per command, oldest first.
    assert_eq!(disable(&w, 35, 500, 2), ids[..2].to_vec());
    assert_eq!(disable(&w, 35, 500, 2), ids[2..4].to_vec());
    assert!(disable(&w, 35, 500, 2).is_empty(), "nothing left: harmless");
    assert!(stored(&w, &ids[4]).unwrap().enabled);
    assert_index_in_step(&w);
    assert!(disable(&w, 35, 500, 0).is_empty());
}

#[test]
fn delete_archived_takes_only_old_disabled_records() {
    let w = world();
    let old = upsert(&w, record("ns/old", false), 0).unwrap().user_id;
    let recent = upsert(&w, record("ns/recent", false), 1).unwrap().user_id;
    let active = upsert(&w, record("ns/active", false), 1000).unwrap().user_id;
    assert_eq!(disable(&w, 1, 100, 10), vec![old.clone()]);
    assert_eq!(disable(&w, 2, 300, 10), vec![recent.clone()]);

    // Retention boundary at 200: disabled at 100 goes, disabled at 300 stays, enabled stays.
    let gone = delete(&w, 200, 10);
    assert_eq!(gone.iter().map(|r| r.user_id.clone()).collect::<Vec<_>>(), vec![old.clone()]);
    assert_eq!(gone[0].disabled_at, Some(100));
    assert!(stored(&w, &old).is_none());
    assert!(stored(&w, &recent).is_some());
    assert!(stored(&w, &active).is_some());
    assert!(delete(&w, 200, 10).is_empty(), "a second pass finds nothing");
    assert_index_in_step(&w);
    // Bounded by limit.
    assert!(delete(&w, 1000, 0).is_empty());
    assert_eq!(delete(&w, 1000, 10).len(), 1);
    assert_index_in_step(&w);
}

#[test]
fn refusals_write_nothing() {
    let w = world();
    upsert(&w, record("ns/a", false), 1).unwrap();
    let before = all_keys(&w);
    let mut r = record("ns/b", false);
    r.mapping_id = "nope".into();
    assert!(matches!(upsert(&w, r, 2), Err(ApplyError::NotFound { .. })));
    let mut r = record("ns/b", false);
    r.user_id = String::new();
    assert!(matches!(upsert(&w, r, 2), Err(ApplyError::Invalid(_))));
    // Another workload claiming an existing id.
    let mut r = record("ns/b", false);
    r.user_id = virtual_user_id("p", "ns/a");
    assert!(matches!(upsert(&w, r, 2), Err(ApplyError::Conflict(_))));
    assert_eq!(all_keys(&w), before);
    assert_eq!(stored(&w, &virtual_user_id("p", "ns/a")).unwrap().last_authenticated_at, 1);
}
