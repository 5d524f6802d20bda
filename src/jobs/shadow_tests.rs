//! One pass of each lifecycle job on a real node, with a fake "now": records disabled and
//! deleted, batches beyond [`BATCH`], one audit event per deleted record.

use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::mapping::model::RulesetVersion;
use crate::state::mapping::MappingCommand;
use crate::state::shadow::{keys, virtual_user_id};
use crate::state::{cf, Command, Reader};
use crate::testkit::TestNode;

const NOW: i64 = 1_800_000_000;

async fn node_with_mapping(audit_file: &std::path::Path) -> TestNode {
    let t = TestNode::start_with(&[("audit", "file", &audit_file.display().to_string())]).await;
    let mut rs: MappingRuleSet = serde_json::from_value(json!({
        "mapping_id": "m", "domain_id": "default", "provider_id": "k8s-prod",
        "source": {"type": "k8s", "cluster_id": "c"},
        "rules": [{"name": "r1", "match": {"all_of": []},
                   "identity": {"user_name": "u", "identity_mode": "ephemeral"},
                   "authorizations": []}],
    }))
    .unwrap();
    rs.ruleset_version = Some(RulesetVersion::fresh());
    let put = MappingCommand::Put { ruleset: rs.to_stored().unwrap(), create: true, expected_version: None };
    t.node.propose(Command::Mapping(put)).await.unwrap();
    t
}

async fn authenticate(t: &TestNode, workload: &str, at: i64) -> String {
    let record = VirtualUserMetadata {
        user_id: virtual_user_id("k8s-prod", workload),
        unique_workload_id: workload.into(),
        mapping_id: "m".into(),
        matched_rule_name: "r1".into(),
        domain_id: Some("default".into()),
        resolved_user_name: format!("system:serviceaccount:{workload}"),
        is_system: false,
        resolved_group_bindings: vec![],
        authorizations: "[]".into(),
        ruleset_version: "v".into(),
        enabled: true,
        created_at: at,
        last_authenticated_at: at,
        disabled_at: None,
    };
    let id = record.user_id.clone();
    t.node.propose(Command::Shadow(ShadowCommand::Upsert { record: Box::new(record), at })).await.unwrap();
    id
}

fn stored(t: &TestNode, id: &str) -> Option<VirtualUserMetadata> {
    Reader::get(&t.node.engine.read(), cf::SHADOW, &keys::record(id)).unwrap()
}

fn audit_lines(file: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(file).unwrap_or_default().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[tokio::test]
async fn one_pass_of_each_job() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("audit.jsonl");
    let t = node_with_mapping(&file).await;
    // 120 idle for 100 days (more than one batch), one seen 10 days ago.
    let mut idle = Vec::new();
    for i in 0..120 {
        idle.push(authenticate(&t, &format!("ns/idle-{i}"), NOW - 100 * DAY).await);
    }
    let fresh = authenticate(&t, "ns/fresh", NOW - 10 * DAY).await;

    assert_eq!(deactivate_pass(&t.node, NOW).await.unwrap(), 120);
    assert!(idle.iter().all(|id| stored(&t, id).is_some_and(|r| !r.enabled && r.disabled_at == Some(NOW))));
    assert!(stored(&t, &fresh).unwrap().enabled);
    assert_eq!(deactivate_pass(&t.node, NOW).await.unwrap(), 0, "a second pass finds nothing");

    // Not yet past the retention: nothing goes.
    assert_eq!(archive_cleanup_pass(&t.node, NOW + 364 * DAY).await.unwrap(), 0);
    assert_eq!(archive_cleanup_pass(&t.node, NOW + 366 * DAY).await.unwrap(), 120);
    assert!(idle.iter().all(|id| stored(&t, id).is_none()));
    assert!(stored(&t, &fresh).is_some(), "an enabled record is never archived");
    assert_eq!(archive_cleanup_pass(&t.node, NOW + 366 * DAY).await.unwrap(), 0);

    assert!(t.node.audit.flush(Duration::from_secs(10)).await);
    let disabled: Vec<Value> = audit_lines(&file).into_iter().filter(|e| e["action"] == "disable").collect();
    assert_eq!(disabled.len(), 120, "one maintenance event per disabled record");
    assert_eq!(disabled[0]["attachments"][0]["content"]["reason"], "inactivity");
    let events: Vec<Value> = audit_lines(&file).into_iter().filter(|e| e["action"] == "delete").collect();
    assert_eq!(events.len(), 120, "one maintenance event per deleted record");
    let mut targets: Vec<String> = events.iter().map(|e| e["target"]["id"].as_str().unwrap().to_string()).collect();
    targets.sort();
    idle.sort();
    assert_eq!(targets, idle);
    let e = &events[0];
    assert_eq!(e["initiator"]["id"], "idnode-janitor");
    let identity = &e["attachments"][0]["content"];
    assert_eq!(identity["provider_id"], "k8s-prod");
    assert_eq!(identity["mapping_id"], "m");
    assert_eq!(identity["domain_id"], "default");
    assert!(identity["user_name"].as_str().unwrap().starts_with("system:serviceaccount:ns/idle-"));
    assert_eq!(identity["disabled_at"], rfc3339(NOW));
}
