//! In-process cluster tests: full identity nodes on loopback raft, driven through their API
//! routers. A follower that missed enough of the log to need a snapshot must come back
//! answering exactly as the others: logins, uniqueness refusals, listings and state digests.

use std::collections::BTreeSet;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::testkit::cluster::{TestCluster, ADMIN_PASSWORD};
use crate::testkit::listings::REPLICATED;

/// Creates `path`'s entity on node `i` as the admin and returns its id.
async fn create(c: &TestCluster, i: usize, token: &str, path: &str, kind: &str, fields: Value) -> String {
    let r = c.call(i, Method::POST, path, Some(token), Some(json!({ kind: fields }))).await;
    assert_eq!(r.status, StatusCode::CREATED, "create {kind} on node {}: {}", i + 1, r.body);
    r.body[kind]["id"].as_str().expect("id").to_string()
}

/// One of each kind of write (users, groups, roles, projects, credentials, grants).
async fn write_round(c: &TestCluster, i: usize, token: &str, tag: &str) -> String {
    let project =
        create(c, i, token, "/v3/projects", "project", json!({"name": format!("p-{tag}"), "domain_id": "default"}))
            .await;
    let user = create(
        c,
        i,
        token,
        "/v3/users",
        "user",
        json!({"name": format!("u-{tag}"), "domain_id": "default", "password": format!("pw-{tag}")}),
    )
    .await;
    let group =
        create(c, i, token, "/v3/groups", "group", json!({"name": format!("g-{tag}"), "domain_id": "default"})).await;
    let r = c.call(i, Method::PUT, &format!("/v3/groups/{group}/users/{user}"), Some(token), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "membership: {}", r.body);
    let role = create(c, i, token, "/v3/roles", "role", json!({"name": format!("r-{tag}")})).await;
    let r =
        c.call(i, Method::PUT, &format!("/v3/projects/{project}/users/{user}/roles/{role}"), Some(token), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "grant: {}", r.body);
    let blob = json!({"access": format!("a-{tag}"), "secret": format!("s-{tag}")}).to_string();
    create(
        c,
        i,
        token,
        "/v3/credentials",
        "credential",
        json!({"type": "ec2", "user_id": user, "project_id": project, "blob": blob}),
    )
    .await;
    user
}

/// Sorted ids of a listing on node `i`.
async fn ids(c: &TestCluster, i: usize, token: &str, path: &str, key: &str) -> BTreeSet<String> {
    let r = c.call(i, Method::GET, path, Some(token), None).await;
    assert_eq!(r.status, StatusCode::OK, "{path} on node {}: {}", i + 1, r.body);
    r.body[key].as_array().expect("list").iter().map(|e| e["id"].as_str().expect("id").to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn follower_that_installed_a_snapshot_answers_like_the_others() {
    let settings = [
        ("raft", "snapshot_logs_since_last", "30"),
        ("raft", "snapshot_log_ratio", "0"),
        ("raft", "snapshot_catchup_entries", "5"),
    ];
    let mut c = TestCluster::start(3, &settings).await;
    let leader = c.wait_leader().await;
    let token = c.admin_token(leader).await;
    write_round(&c, leader, &token, "before").await;
    c.wait_converged().await;

    let follower = (leader + 1) % 3;
    let stopped_at = c.stop(follower).await;
    let mut round = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    // Write until the leader's log no longer holds what the follower needs.
    while c.node(leader).raft.status().purged_index.unwrap_or(0) <= stopped_at + 1 {
        assert!(tokio::time::Instant::now() < deadline, "the leader never purged past {stopped_at}");
        write_round(&c, leader, &token, &format!("while-down-{round}")).await;
        round += 1;
    }
    let user = write_round(&c, leader, &token, "last").await;
    c.restart(follower).await;
    c.wait_converged().await;
    let snap = c.node(follower).raft.status().snapshot_index.unwrap_or(0);
    assert!(snap > stopped_at, "node {} caught up without a snapshot ({snap} <= {stopped_at})", follower + 1);

    let admin_id = {
        let r = c.login(leader, "admin", false, ADMIN_PASSWORD, "admin").await;
        r.body["token"]["user"]["id"].as_str().expect("admin id").to_string()
    };
    let mut seen: Vec<Vec<BTreeSet<String>>> = Vec::new();
    for i in 0..3 {
        for (who, by_id, pw) in [
            ("admin", false, ADMIN_PASSWORD.to_string()),
            (admin_id.as_str(), true, ADMIN_PASSWORD.to_string()),
            ("u-last", false, "pw-last".to_string()),
            (user.as_str(), true, "pw-last".to_string()),
        ] {
            let project = if who == "admin" || who == admin_id { "admin" } else { "p-last" };
            let r = c.login(i, who, by_id, &pw, project).await;
            assert_eq!(r.status, StatusCode::OK, "login of {who} (by id: {by_id}) on node {}: {}", i + 1, r.body);
        }
        let dup = json!({"user": {"name": "admin", "domain_id": "default", "password": "x"}});
        let r = c.call(i, Method::POST, "/v3/users", Some(&token), Some(dup)).await;
        assert_eq!(r.status, StatusCode::CONFLICT, "duplicate admin through node {}: {}", i + 1, r.body);
        let mut lists = Vec::new();
        for &(path, key) in REPLICATED {
            lists.push(ids(&c, i, &token, path, key).await);
        }
        seen.push(lists);
    }
    c.wait_converged().await;
    for i in 0..3 {
        let admins = ids(&c, i, &token, "/v3/users?name=admin", "users").await;
        assert_eq!(admins.len(), 1, "users named admin on node {}: {admins:?}", i + 1);
    }
    assert_eq!(seen[0], seen[1], "nodes 1 and 2 list different entities");
    assert_eq!(seen[0], seen[2], "nodes 1 and 3 list different entities");

    let report = c.node(follower).raft.check_consistency(Duration::from_secs(20)).await.expect("check runs");
    assert!(report.consistent(), "digests differ: {report:?}");
    assert_eq!(report.members.len(), 3);
    for i in 0..3 {
        assert!(c.node(i).raft.divergence().is_none(), "node {} thinks it differs", i + 1);
        assert!(c.node(i).raft.readiness().ok, "node {} not ready: {:?}", i + 1, c.node(i).raft.readiness());
    }
}

/// A stored value that no longer opens on one node (a damaged disk, simulated by flipping one
/// of its bytes) quarantines its column family there: that node refuses reads of it with 503,
/// fails `/ready` and counts the partition, while the other nodes serve the same reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_value_that_does_not_open_quarantines_its_family_on_that_node_only() {
    use tower::ServiceExt;
    let c = TestCluster::start(3, &[]).await;
    let leader = c.wait_leader().await;
    let admin = c.admin_token(leader).await;
    let user = c
        .create(
            leader,
            &admin,
            "/v3/users",
            "user",
            json!({"name": "victim", "domain_id": "default", "password": "pw"}),
        )
        .await;
    let id = user["user"]["id"].as_str().unwrap().to_string();
    let damaged = (leader + 1) % 3;
    let mut tokens = Vec::new();
    for i in 0..3 {
        tokens.push(c.admin_token(i).await);
    }
    let path = format!("/v3/users/{id}");
    let show = |i: usize| c.call(i, Method::GET, &path, Some(&tokens[i]), None);
    for i in 0..3 {
        assert_eq!(show(i).await.status, StatusCode::OK, "node {i} before");
    }
    let engine = c.node(damaged).engine.clone();
    assert!(engine.flip_stored_byte(crate::state::cf::USERS, id.as_bytes()).unwrap(), "the user's stored value");

    let r = show(damaged).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.body);
    assert!(!r.text.contains(&id), "no detail of the damage leaks: {}", r.text);
    assert_eq!(engine.quarantined(), [crate::state::cf::USERS]);
    // The whole family is refused from now on, not only the damaged value.
    let r = c.call(damaged, Method::GET, "/v3/users", Some(&tokens[damaged]), None).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.body);
    for i in [leader, (leader + 2) % 3] {
        assert_eq!(show(i).await.status, StatusCode::OK, "node {i} still serves");
    }
    let ready = |i: usize| {
        let ops = crate::serve::ops::router(c.node(i).clone());
        async move {
            let req = axum::http::Request::get("/ready").body(axum::body::Body::empty()).unwrap();
            let resp = ops.oneshot(req).await.unwrap();
            let status = resp.status();
            let body: Value =
                serde_json::from_slice(&axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap()).unwrap();
            (status, body)
        }
    };
    let (status, body) = ready(damaged).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(body["components"]["raft"]["message"].as_str().unwrap_or_default().contains("quarantined"), "{body}");
    let metrics = c.node(damaged).metrics_text().unwrap();
    assert!(metrics.contains("idnode_raft_quarantined_partitions 1"), "{metrics}");
    let healthy = (leader + 2) % 3;
    let metrics = c.node(healthy).metrics_text().unwrap();
    assert!(metrics.contains("idnode_raft_quarantined_partitions 0"), "{metrics}");
}
