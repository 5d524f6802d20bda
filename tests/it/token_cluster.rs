//! Tokens across a 3-node cluster: a token issued on node 1 validates on nodes 2 and 3; once
//! node 2 has answered 204 to its revocation, nodes 1 and 3 answer 404 for it at once (no wait
//! between the revocation and the validations). Password changes, disables and deletes of a
//! user hold on every node once acknowledged too.

use std::time::Duration;

use crate::support::{Cluster, Resp};
use reqwest::StatusCode;
use serde_json::Value;

/// Validates `subject` on `node` (0-based), authenticated as `auth`.
async fn validate(cluster: &Cluster, node: usize, auth: &str, subject: &str) -> Resp {
    let r = cluster.http.validate_token(&cluster.api(node), auth, subject).await;
    r.unwrap_or_else(|e| panic!("validate on node {}: {e}", node + 1))
}

/// `method` on the user `id` through `node` (0-based), as the admin.
async fn on_user(
    cluster: &Cluster,
    node: usize,
    admin: &str,
    method: reqwest::Method,
    id: &str,
    body: Option<&Value>,
) -> Resp {
    let url = format!("{}/v3/users/{id}", cluster.api(node));
    let r = cluster.http.request(method.clone(), &url, Some(admin), &[], body).await;
    r.unwrap_or_else(|e| panic!("{method} user on node {}: {e}", node + 1))
}

/// Rounds of issue / validate / revoke, to give a lagging follower several chances to show.
const ROUNDS: usize = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_issued_on_one_node_validates_everywhere_and_revocation_is_immediate() {
    let cluster = Cluster::start(3).await;
    cluster.wait_leader(Duration::from_secs(30)).await;
    let http = &cluster.http;
    let pw = cluster.admin_password.clone();

    // the caller's own token (X-Auth-Token), issued on node 3
    let (auth, _) = cluster.issue_token(2, "admin", &pw, "admin", Duration::from_secs(30)).await;

    for round in 0..ROUNDS {
        // subject token, issued on node 1
        let (subject, issued) = cluster.issue_token(0, "admin", &pw, "admin", Duration::from_secs(30)).await;
        assert_ne!(subject, auth, "two issues returned the same token");
        let user_id = issued.json["token"]["user"]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("issue answer without token.user.id: {}", issued.text))
            .to_owned();
        assert_eq!(issued.json["token"]["user"]["name"].as_str(), Some("admin"), "issue answer: {}", issued.text);

        for node in [1usize, 2] {
            let r = validate(&cluster, node, &auth, &subject).await;
            assert_eq!(
                r.status,
                StatusCode::OK,
                "round {round}: token issued on node 1 does not validate on node {}: {}",
                node + 1,
                r.text
            );
            assert_eq!(
                r.json["token"]["user"]["id"].as_str(),
                Some(user_id.as_str()),
                "round {round}: node {} validated the token for another user: {}",
                node + 1,
                r.text
            );
            assert_eq!(
                r.header("X-Subject-Token").as_deref(),
                Some(subject.as_str()),
                "round {round}: node {} validation answer lacks the X-Subject-Token header",
                node + 1
            );
        }

        // revoke on node 2 ...
        let r = http.revoke_token(&cluster.api(1), &auth, &subject).await.expect("revoke on node 2");
        assert_eq!(r.status, StatusCode::NO_CONTENT, "round {round}: revocation on node 2: {}", r.text);
        // ... and, with no pause, it is gone on the other two nodes (and on node 2 itself)
        for node in [0usize, 2, 1] {
            let r = validate(&cluster, node, &auth, &subject).await;
            assert_eq!(
                r.status,
                StatusCode::NOT_FOUND,
                "round {round}: node {} still accepts a token node 2 revoked (answered 204): {}",
                node + 1,
                r.text
            );
        }

        // revoking one token leaves the caller's own token valid everywhere
        for node in 0..3 {
            let r = validate(&cluster, node, &auth, &auth).await;
            assert_eq!(
                r.status,
                StatusCode::OK,
                "round {round}: node {}: the caller's token stopped validating: {}",
                node + 1,
                r.text
            );
        }
    }
}

/// A password change, a disable and a delete through one node hold on every node the moment
/// they are acknowledged: the old password, and tokens issued before, stop working everywhere
/// with no pause in between.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_changes_hold_on_every_node_once_acknowledged() {
    let cluster = Cluster::start(3).await;
    cluster.wait_leader(Duration::from_secs(30)).await;
    let http = &cluster.http;
    let admin = cluster.admin_token(0).await;
    let project = cluster.list_ids(0, &admin, "/v3/projects?name=admin", "projects").await;
    let project = project.into_iter().next().expect("admin project");
    let member = cluster.list_ids(0, &admin, "/v3/roles?name=member", "roles").await;
    let member = member.into_iter().next().expect("member role");
    for round in 0..3 {
        let name = format!("changing-{round}");
        let body = serde_json::json!({"user": {"name": name, "domain_id": "default", "password": "first-pw-1"}});
        let r = http.post(&format!("{}/v3/users", cluster.api(0)), Some(&admin), &body).await.expect("create user");
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        let id = r.json["user"]["id"].as_str().expect("id").to_string();
        let url = format!("{}/v3/projects/{project}/users/{id}/roles/{member}", cluster.api(0));
        let r = http.request(reqwest::Method::PUT, &url, Some(&admin), &[], None).await.expect("grant");
        assert!(r.status.is_success(), "{}", r.text);
        // Created through node 1: it logs in on node 3 at once.
        let r = cluster.login(2, &id, true, "first-pw-1", "admin").await;
        assert!(r.status.is_success(), "round {round}: new user cannot log in on node 3: {}", r.text);
        let token = r.header("X-Subject-Token").expect("token");

        // Password reset through node 2: the old password and the old token fail on 1 and 3.
        let patch = serde_json::json!({"user": {"password": "second-pw-2"}});
        let r = on_user(&cluster, 1, &admin, reqwest::Method::PATCH, &id, Some(&patch)).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        for node in [0usize, 2] {
            let r = cluster.login(node, &id, true, "first-pw-1", "admin").await;
            assert_eq!(r.status, StatusCode::UNAUTHORIZED, "round {round}: old password works on node {}", node + 1);
            let r = validate(&cluster, node, &admin, &token).await;
            assert_eq!(r.status, StatusCode::NOT_FOUND, "round {round}: pre-reset token valid on node {}", node + 1);
        }
        let r = cluster.login(2, &id, true, "second-pw-2", "admin").await;
        assert!(r.status.is_success(), "round {round}: new password fails on node 3: {}", r.text);
        let token = r.header("X-Subject-Token").expect("token");

        // Disabled through node 3, then deleted through node 2.
        let patch = serde_json::json!({"user": {"enabled": false}});
        let r = on_user(&cluster, 2, &admin, reqwest::Method::PATCH, &id, Some(&patch)).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        for node in [0usize, 1] {
            let r = validate(&cluster, node, &admin, &token).await;
            assert_eq!(
                r.status,
                StatusCode::NOT_FOUND,
                "round {round}: disabled user's token valid on node {}",
                node + 1
            );
        }
        let r = on_user(&cluster, 1, &admin, reqwest::Method::DELETE, &id, None).await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
        for node in [0usize, 2] {
            let r = cluster.login(node, &id, true, "second-pw-2", "admin").await;
            assert_eq!(r.status, StatusCode::UNAUTHORIZED, "round {round}: deleted user logs in on node {}", node + 1);
        }
    }
}

/// Waits until every member applies cluster version `at_least` (raised by the leader once
/// every voter runs a binary that applies it).
pub(crate) async fn wait_cluster_version(cluster: &Cluster, at_least: f64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let mut all = true;
        for i in 0..cluster.len() {
            all &= cluster.metric(i, "idnode_cluster_version").await.is_some_and(|v| v >= at_least);
        }
        if all {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "the cluster version did not reach {at_least}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The members' clocks disagree by minutes (one runs 300 s ahead, then 300 s behind): a
/// password change still ends every token issued before it, on every member, whichever member
/// issued the token or proposed the change; and the new password's tokens work everywhere at
/// once. Judged by the cut-off each token saw, not by clocks (docs/reliability.md, "Clock
/// jumps"); with issue times alone the first check lets the old token live and the second
/// refuses the new login.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_changes_hold_whatever_the_members_clocks_say() {
    let skew_dir = tempfile::tempdir().expect("temp dir");
    let mut cluster = Cluster::prepare(3, &[]);
    let skew = cluster.skewable_clocks(skew_dir.path());
    for i in 0..3 {
        cluster.spawn_node(i);
    }
    let deadline = std::time::Instant::now() + crate::support::READY_TIMEOUT;
    for i in 0..3 {
        cluster.wait_ready(i, deadline).await;
    }
    cluster.wait_leader(Duration::from_secs(30)).await;
    wait_cluster_version(&cluster, 7.0).await;
    let http = &cluster.http;
    let admin = cluster.admin_token(0).await;
    let body = serde_json::json!({"user": {"name": "skewed", "domain_id": "default", "password": "pw-0"}});
    let r = http.post(&format!("{}/v3/users", cluster.api(0)), Some(&admin), &body).await.expect("create user");
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let id = r.json["user"]["id"].as_str().expect("id").to_string();
    let set_clock = |node: usize, secs: i64| {
        std::fs::write(&skew[node], secs.to_string()).expect("skew file");
    };
    let login = |node: usize, pw: &'static str| {
        let id = id.clone();
        let cluster = &cluster;
        async move {
            let body = serde_json::json!({"auth": {"identity": {"methods": ["password"],
                "password": {"user": {"id": id, "password": pw}}}}});
            cluster.http.post(&format!("{}/v3/auth/tokens", cluster.api(node)), None, &body).await.expect("login")
        }
    };
    let change = |node: usize, pw: &'static str| {
        let (id, admin) = (id.clone(), admin.clone());
        let cluster = &cluster;
        async move {
            let patch = serde_json::json!({"user": {"password": pw}});
            let r = on_user(cluster, node, &admin, reqwest::Method::PATCH, &id, Some(&patch)).await;
            assert_eq!(r.status, StatusCode::OK, "password change through node {}: {}", node + 1, r.text);
        }
    };
    let valid_everywhere = |token: String, want: StatusCode, what: &'static str| {
        let (cluster, admin) = (&cluster, admin.clone());
        async move {
            for node in 0..3 {
                let r = validate(cluster, node, &admin, &token).await;
                assert_eq!(r.status, want, "{what}: node {}: {}", node + 1, r.text);
            }
        }
    };
    let fresh_tokens = |pw: &'static str, what: &'static str| async move {
        for node in 0..3 {
            let r = login(node, pw).await;
            assert!(r.status.is_success(), "{what}: login on node {}: {}", node + 1, r.text);
            valid_everywhere(r.header("X-Subject-Token").expect("token"), StatusCode::OK, what).await;
        }
    };

    // A token from the member whose clock runs ahead, then a change through a member on time.
    set_clock(2, 300);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = login(2, "pw-0").await;
    assert!(r.status.is_success(), "{}", r.text);
    let early = r.header("X-Subject-Token").expect("token");
    change(0, "pw-1").await;
    valid_everywhere(early, StatusCode::NOT_FOUND, "a token from the clock ahead outlived the change").await;
    fresh_tokens("pw-1", "after a change through a member on time").await;

    // A change proposed by the member ahead: the members on time issue working tokens at once.
    let r = login(0, "pw-1").await;
    let before = r.header("X-Subject-Token").expect("token");
    change(2, "pw-2").await;
    valid_everywhere(before, StatusCode::NOT_FOUND, "a token outlived a change from the clock ahead").await;
    fresh_tokens("pw-2", "after a change through the member ahead").await;

    // The same member now runs behind: its change still ends the tokens issued before it.
    set_clock(2, -300);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = login(1, "pw-2").await;
    let before = r.header("X-Subject-Token").expect("token");
    change(2, "pw-3").await;
    valid_everywhere(before, StatusCode::NOT_FOUND, "a token outlived a change from the clock behind").await;
    fresh_tokens("pw-3", "after a change through the member behind").await;
}
