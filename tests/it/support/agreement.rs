//! Assertions that the replicas of a cluster answer alike, shared by `snapshot_consistency` and
//! `fault_snapshot`. They check what the bug report found broken on a node that had caught up
//! by installing a snapshot: password logins (401), the uniqueness of user names (a duplicate
//! accepted by one replica and refused by another), and the state itself (`idnode cluster
//! check` digests, the `idnode_raft_consistency_mismatch` gauge).

use std::collections::BTreeSet;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use super::Cluster;

/// A user created by a test, with a role on `project` so that it can scope to it.
pub struct KnownUser<'a> {
    pub name: &'a str,
    pub id: &'a str,
    pub password: &'a str,
    pub project: &'a str,
}

/// On every node: the bootstrap admin logs in (any 2xx: 201 in Keystone status mode) scoped to
/// `admin`, by name and by user
/// id, and so does every user of `users`. Returns the admin's user id.
pub async fn assert_logins_everywhere(c: &Cluster, users: &[KnownUser<'_>]) -> String {
    let first = c.login(0, "admin", false, &c.admin_password, "admin").await;
    assert!(first.status.is_success(), "admin login by name on node 1: {} {}", first.status, first.text);
    let admin_id = first.json["token"]["user"]["id"].as_str().expect("admin user id in the token").to_string();
    for i in 0..c.len() {
        let node = c.nodes[i].id;
        for (who, by_id) in [("admin", false), (admin_id.as_str(), true)] {
            let r = c.login(i, who, by_id, &c.admin_password, "admin").await;
            assert!(r.status.is_success(), "admin login (by id: {by_id}) on node {node}: {} {}", r.status, r.text);
            assert_eq!(r.json["token"]["user"]["id"], json!(admin_id), "admin login on node {node}");
        }
        for u in users {
            for (who, by_id) in [(u.name, false), (u.id, true)] {
                let r = c.login(i, who, by_id, u.password, u.project).await;
                assert!(
                    r.status.is_success(),
                    "{} login (by id: {by_id}) on node {node}: {} {}",
                    u.name,
                    r.status,
                    r.text
                );
                assert_eq!(r.json["token"]["user"]["id"], json!(u.id), "{} login on node {node}", u.name);
            }
        }
    }
    admin_id
}

/// Through every node, a second user named `admin` in the Default domain is refused with 409;
/// once every node has applied everything, `GET /v3/users?name=admin` lists exactly one user,
/// `admin_id`, on every node.
pub async fn assert_admin_unique_everywhere(c: &Cluster, token: &str, admin_id: &str, timeout: Duration) {
    for i in 0..c.len() {
        let dup = json!({"user": {"name": "admin", "domain_id": "default", "password": "second-admin-pw"}});
        let r = c.http.post(&format!("{}/v3/users", c.api(i)), Some(token), &dup).await.expect("POST /v3/users");
        assert_eq!(r.status, StatusCode::CONFLICT, "a second admin through node {}: {}", c.nodes[i].id, r.text);
    }
    let all: Vec<usize> = (0..c.len()).collect();
    c.wait_applied_converged(&all, timeout).await;
    for i in 0..c.len() {
        let admins = c.list_ids(i, token, "/v3/users?name=admin", "users").await;
        let want: BTreeSet<String> = [admin_id.to_string()].into();
        assert_eq!(admins, want, "users named admin on node {}", c.nodes[i].id);
    }
}

/// Every listing in `listings` (`(path, key)`) holds the same ids on every node as on node 1.
/// Returns the number of entries of each listing.
pub async fn assert_listings_equal(c: &Cluster, token: &str, listings: &[(&str, &str)]) -> Vec<usize> {
    let mut sizes = Vec::with_capacity(listings.len());
    for (path, key) in listings {
        let first = c.list_ids(0, token, path, key).await;
        for i in 1..c.len() {
            let other = c.list_ids(i, token, path, key).await;
            let only_first: Vec<&String> = first.difference(&other).take(5).collect();
            let only_other: Vec<&String> = other.difference(&first).take(5).collect();
            assert!(
                only_first.is_empty() && only_other.is_empty(),
                "{path}: node 1 lists {} ids, node {} lists {}; only on node 1 (up to 5): {only_first:?}, only on node {}: {only_other:?}",
                first.len(),
                c.nodes[i].id,
                other.len(),
                c.nodes[i].id
            );
        }
        sizes.push(first.len());
    }
    sizes
}

/// `idnode cluster check` through node `i` exits 0, and its report holds one entry per node,
/// each with status `match` and a non-null digest equal to the reference; `mismatched` is
/// empty. Returns the report.
pub async fn assert_check_consistent(c: &Cluster, i: usize) -> Value {
    let (code, report) = c.cluster_check(i).await;
    assert_eq!(code, 0, "idnode cluster check through node {}: {report:#}", c.nodes[i].id);
    let members = report["members"].as_array().unwrap_or_else(|| panic!("no members in the report: {report:#}"));
    assert_eq!(members.len(), c.len(), "one entry per node: {report:#}");
    let ids: BTreeSet<u64> = members.iter().filter_map(|m| m["id"].as_u64()).collect();
    let want: BTreeSet<u64> = c.nodes.iter().map(|n| n.id).collect();
    assert_eq!(ids, want, "member ids: {report:#}");
    let reference = report["reference"].as_str().unwrap_or_else(|| panic!("no reference digest: {report:#}"));
    assert!(!reference.is_empty(), "empty reference digest: {report:#}");
    for m in members {
        assert_eq!(m["digest"].as_str(), Some(reference), "digest of member {}: {report:#}", m["id"]);
        assert_eq!(m["status"], json!("match"), "status of member {}: {report:#}", m["id"]);
    }
    assert_eq!(report["mismatched"], json!([]), "mismatched: {report:#}");
    assert!(report["index"].as_u64().is_some_and(|n| n > 0), "checkpoint index: {report:#}");
    report
}

/// `idnode_raft_consistency_mismatch` is present and 0 on every node.
pub async fn assert_no_mismatch_metric(c: &Cluster) {
    for i in 0..c.len() {
        let v = c.metric(i, "idnode_raft_consistency_mismatch").await;
        assert_eq!(v, Some(0.0), "idnode_raft_consistency_mismatch on node {}", c.nodes[i].id);
    }
}
