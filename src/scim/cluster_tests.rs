//! SCIM on a 3-node cluster: writes sent to a follower, every replica holding the same SCIM
//! state, a deprovisioned user's token refused on every node the moment DELETE returns; and
//! the audit events of SCIM writes, in the sink after a node restart.

use std::time::Duration;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use super::endpoint_tests::{group, patch_op, replace_op, user};
use crate::state::keys::ns;
use crate::state::{cf, Reader};
use crate::testkit::cluster::TestCluster;
use crate::testkit::scim_setup as setup;
use crate::testkit::{send_with_headers, Reply};

fn later() -> String {
    crate::token::render::iso_seconds(crate::clock::now_secs() + 86_400)
}

/// A realm in a new domain with a manager key; answers (domain, key token).
async fn realm(c: &TestCluster, admin: &str) -> (String, String) {
    let id = |v: Value, kind: &str| v[kind]["id"].as_str().unwrap().to_string();
    let d = id(c.create(0, admin, "/v3/domains", "domain", json!({"name": "corp"})).await, "domain");
    let idp = c.create(0, admin, "/v4/federation/identity_providers", "identity_provider", setup::idp(&d, "c")).await;
    let idp = id(idp, "identity_provider");
    c.create(0, admin, "/v4/scim-realms", "scim_realm", setup::realm(&d, "okta-scim", &idp, "Okta")).await;
    let manager = c.node(0).engine.read().id_by_name(ns::ROLE_NAME, "", "manager").unwrap().unwrap();
    let ruleset = setup::ruleset(&d, "okta-scim", &idp, "keys", setup::on_domain(&d, &manager));
    c.create(0, admin, "/v4/mappings", "mapping", ruleset).await;
    let key = c.create(0, admin, "/v4/api-keys", "api_key", setup::key(&d, "okta-scim", &later())).await;
    (d, key["token"].as_str().unwrap().to_string())
}

async fn scim(c: &TestCluster, i: usize, key: &str, d: &str, method: Method, path: &str, body: Option<Value>) -> Reply {
    let auth = format!("Bearer {key}");
    send_with_headers(c.router(i), method, &format!("/SCIM/v2/{d}{path}"), &[("authorization", &auth)], body).await
}

/// The SCIM column family and the users of `d`, as one replica holds them.
fn snapshot(c: &TestCluster, i: usize, d: &str) -> (Vec<idnode_storage::Pair>, Vec<String>) {
    let view = c.node(i).engine.read();
    let scim = view.scan_raw(cf::SCIM, b"").unwrap();
    let mut users: Vec<String> = view
        .member_ids(ns::USERS_OF_DOMAIN, d)
        .unwrap()
        .into_iter()
        .map(|id| {
            let u = view.user(&id).unwrap().unwrap();
            format!("{} {} {} {}", u.id, u.name, u.enabled, u.extra)
        })
        .collect();
    users.sort();
    (scim, users)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_through_followers_agree_everywhere_and_deprovisioning_is_immediate_on_every_node() {
    let c = TestCluster::start(3, &[]).await;
    let leader = c.wait_leader().await;
    let follower = (leader + 1) % 3;
    let admin = c.admin_token(leader).await;
    let (d, key) = realm(&c, &admin).await;

    let mut ids = Vec::new();
    for i in 0..6 {
        let r = scim(
            &c,
            (follower + i) % 3,
            &key,
            &d,
            Method::POST,
            "/Users",
            Some(user(&format!("e{i}"), &format!("u{i}"))),
        )
        .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        ids.push(r.body["id"].as_str().unwrap().to_string());
    }
    let r = scim(&c, follower, &key, &d, Method::POST, "/Groups", Some(group("Eng", &[&ids[0], &ids[1]]))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let gid = r.body["id"].as_str().unwrap().to_string();
    // Read-your-writes on the node that took the write.
    let r = scim(
        &c,
        follower,
        &key,
        &d,
        Method::PATCH,
        &format!("/Groups/{gid}"),
        Some(patch_op(json!([{"op": "add", "path": "members", "value": [{"value": ids[2]}]}]))),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["members"].as_array().unwrap().len(), 3);

    // A user with a live token, valid on every node.
    let victim = &ids[3];
    let r = c
        .call(
            leader,
            Method::PATCH,
            &format!("/v3/users/{victim}"),
            Some(&admin),
            Some(json!({"user": {"password": "victim-pw-1"}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let login = c.call(follower, Method::POST, "/v3/auth/tokens", None,
        Some(json!({"auth": {"identity": {"methods": ["password"], "password": {"user": {"id": victim, "password": "victim-pw-1"}}}}}))).await;
    assert!(login.status.is_success(), "{}", login.body);
    let token = login.headers["x-subject-token"].to_str().unwrap().to_string();
    let valid_on = |i: usize| {
        let (c, admin, token) = (&c, &admin, &token);
        async move {
            let headers = [("x-auth-token", admin.as_str()), ("x-subject-token", token.as_str())];
            send_with_headers(c.router(i), Method::GET, "/v3/auth/tokens", &headers, None).await.status
        }
    };
    for i in 0..3 {
        assert_eq!(valid_on(i).await, StatusCode::OK);
    }
    let r = scim(&c, follower, &key, &d, Method::DELETE, &format!("/Users/{victim}"), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    for i in 0..3 {
        assert_eq!(valid_on(i).await, StatusCode::NOT_FOUND, "node {i} still validates the deprovisioned user's token");
        assert_eq!(
            scim(&c, i, &key, &d, Method::GET, &format!("/Users/{victim}"), None).await.status,
            StatusCode::NOT_FOUND
        );
    }

    c.wait_converged().await;
    let first = snapshot(&c, 0, &d);
    assert!(first.0.len() > 10 && first.1.len() == 6, "{} scim records, {} users", first.0.len(), first.1.len());
    for i in 1..3 {
        assert!(snapshot(&c, i, &d) == first, "replica {i} differs from replica 0");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_scim_write_leaves_one_audit_event_in_the_sink_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let sink = dir.path().join("audit.jsonl");
    let sink_s = sink.display().to_string();
    let mut c = TestCluster::start(1, &[("audit", "file", &sink_s), ("audit", "flush_interval_ms", "50")]).await;
    c.wait_leader().await;
    let admin = c.admin_token(0).await;
    let (d, key) = realm(&c, &admin).await;
    let u = scim(&c, 0, &key, &d, Method::POST, "/Users", Some(user("00u1", "bjensen"))).await.body["id"]
        .as_str()
        .unwrap()
        .to_string();
    let g = scim(&c, 0, &key, &d, Method::POST, "/Groups", Some(group("Ops", &[&u]))).await.body["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r =
        scim(&c, 0, &key, &d, Method::PATCH, &format!("/Users/{u}"), Some(replace_op("active", json!(false)))).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        scim(&c, 0, &key, &d, Method::DELETE, &format!("/Users/{u}"), None).await.status,
        StatusCode::NO_CONTENT
    );
    let r =
        c.call(0, Method::DELETE, &format!("/v4/scim-realms/{d}/okta-scim/purge/user/{u}"), Some(&admin), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    // A refused write (uniqueness) is recorded as a failure.
    let r = scim(&c, 0, &key, &d, Method::POST, "/Groups", Some(group("OPS", &[]))).await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert!(c.node(0).audit.flush(Duration::from_secs(5)).await);
    c.stop(0).await;
    c.restart(0).await;
    c.wait_leader().await;

    let events: Vec<Value> = std::fs::read_to_string(&sink)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &Value| e["attachments"][0]["name"] == "scim")
        .collect();
    let seen: Vec<(String, String, String, String)> = events
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap().into(),
                e["outcome"].as_str().unwrap().into(),
                e["target"]["typeURI"].as_str().unwrap().into(),
                e["target"]["id"].as_str().unwrap().into(),
            )
        })
        .collect();
    let s = |a: &str, o: &str, t: &str, id: &str| (a.to_string(), o.to_string(), t.to_string(), id.to_string());
    let account = "data/security/account";
    assert_eq!(
        &seen[..5],
        &[
            s("create", "success", account, &u),
            s("create", "success", "data/security/group", &g),
            s("update", "success", account, &u),
            s("disable", "success", account, &u),
            s("delete", "success", account, &u),
        ]
    );
    assert_eq!(
        (seen[5].0.as_str(), seen[5].1.as_str(), seen[5].2.as_str()),
        ("create", "failure", "data/security/group")
    );
    assert_eq!(seen.len(), 6);
    assert_eq!(
        events[0]["attachments"][0]["content"],
        json!({"realm_provider_id": "okta-scim", "external_id": "00u1"})
    );
    assert_eq!(events[0]["initiator"]["typeURI"], "service/security/account/apikey");
    assert!(events[0]["initiator"]["id"].as_str().unwrap().len() > 8);
    assert_eq!(events[4]["initiator"]["typeURI"], "data/security/account/user");
    let text = std::fs::read_to_string(&sink).unwrap();
    assert!(!text.contains("kscim_"), "no API key in the audit sink");
}

/// Waits until every member runs the cluster version from which the leader grants leases
/// (below it each member counts its own share).
async fn wait_lease_version(c: &TestCluster) {
    let deadline = tokio::time::Instant::now() + crate::testkit::cluster::WAIT;
    while (0..c.len()).any(|i| c.node(i).raft.cluster_version() < idnode_raft::LEASE_VERSION) {
        assert!(tokio::time::Instant::now() < deadline, "the cluster version did not reach the lease version");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A 3-member cluster with `scim_realm_write_rate_limit` `figure`, at the lease version, and a
/// realm: (cluster, leader, domain, key, the leader's term).
async fn limited_realm(figure: &str) -> (TestCluster, usize, String, String, u64) {
    let c = TestCluster::start(3, &[("keystone", "scim_realm_write_rate_limit", figure)]).await;
    let leader = c.wait_leader().await;
    let admin = c.admin_token(leader).await;
    let (d, key) = realm(&c, &admin).await;
    wait_lease_version(&c).await;
    let term = c.node(leader).raft.status().term;
    (c, leader, d, key, term)
}

/// What `members` (indexes) answer to `n` user creations sent round-robin, with how long they
/// took; every 429 carries a `Retry-After` of at most a minute.
async fn creations(c: &TestCluster, key: &str, d: &str, members: &[usize], n: usize) -> (usize, usize, f64) {
    let started = std::time::Instant::now();
    let (mut created, mut refused) = (0, 0);
    for i in 0..n {
        let body = Some(user(&format!("e{i}"), &format!("u{i}")));
        let r = scim(c, members[i % members.len()], key, d, Method::POST, "/Users", body).await;
        match r.status {
            StatusCode::CREATED => created += 1,
            StatusCode::TOO_MANY_REQUESTS => {
                refused += 1;
                let retry: u64 = r.headers.get("retry-after").and_then(|v| v.to_str().ok()?.parse().ok()).unwrap();
                assert!((1..=60).contains(&retry), "Retry-After {retry}");
            }
            other => panic!("{other}: {}", r.body),
        }
    }
    (created, refused, started.elapsed().as_secs_f64())
}

/// Asserts `created` is the cluster's `figure`: at least it when every lease reached the
/// leader (a lease that timed out on a slow host falls back to the member's third), at most it
/// plus what the leader's bucket refilled over the test's real `elapsed` time (figure / 60 a
/// second), plus another figure if leadership moved (a new leader starts a full bucket), plus
/// the members' own shares and their refill if a lease failed (each then counts its share).
fn assert_the_figure(c: &TestCluster, created: usize, figure: usize, elapsed: f64, term_before: u64) {
    let failed: u64 = (0..c.len()).map(|i| c.node(i).raft.lease_counts().1).sum();
    let moved = (0..c.len()).any(|i| c.node(i).raft.status().term != term_before);
    let refilled = (figure as f64 * elapsed / 60.0).floor() as usize;
    let shares = if failed > 0 { c.len() * figure.div_ceil(c.len()) + refilled } else { 0 };
    let most = figure + refilled + if moved { figure } else { 0 } + shares;
    let least = if failed == 0 { figure } else { figure / c.len() };
    assert!(
        (least..=most).contains(&created),
        "{created} created, expected {least}..={most} ({failed} failed leases, {elapsed:.1} s)"
    );
}

/// `scim_realm_write_rate_limit` is the cluster's figure: a provider whose writes spread over
/// all three members stops at it, not at three times it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_providers_writes_spread_over_every_member_stop_at_the_cluster_budget() {
    let (c, _, d, key, term) = limited_realm("6").await;
    let (created, refused, elapsed) = creations(&c, &key, &d, &[0, 1, 2], 12).await;
    assert_the_figure(&c, created, 6, elapsed, term);
    assert_eq!(created + refused, 12);
}

/// Writes that all reach one follower (a sticky load balancer) get the cluster's whole figure,
/// leased from the leader, not the follower's third of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_providers_writes_to_one_follower_get_the_whole_cluster_budget() {
    let (c, leader, d, key, term) = limited_realm("12").await;
    let follower = (leader + 1) % 3;
    let (created, refused, elapsed) = creations(&c, &key, &d, &[follower], 20).await;
    assert_the_figure(&c, created, 12, elapsed, term);
    assert!(refused > 0, "{created} created, none refused");
    let (asked, _) = c.node(follower).raft.lease_counts();
    assert!(asked > 0, "the follower leased its tokens from the leader");
}
