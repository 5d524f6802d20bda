//! A follower that catches up by installing a raft snapshot answers like the others. Three
//! nodes that snapshot every 40 entries and keep only 5 entries behind a snapshot; a follower
//! is SIGKILLed while users (with passwords), groups (with members), roles (granted on
//! projects), projects and credentials keep being written until both live nodes have purged
//! their log past everything the stopped follower had, so on restart it can only catch up by
//! a snapshot install. Then, on every node: password logins by name and by id (the bug report
//! saw 401 on the node that installed the snapshot), a duplicate `admin` refused with 409 and
//! listed once (the report saw a duplicate accepted by one replica and refused by another),
//! identical listings, equal `idnode cluster check` digests and no consistency-mismatch gauge.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::agreement::{
    assert_admin_unique_everywhere, assert_check_consistent, assert_listings_equal, assert_logins_everywhere,
    assert_no_mismatch_metric, KnownUser,
};
use crate::support::listings::REPLICATED;
use crate::support::{json_u64, random_hex, Cluster};

const WAIT: Duration = Duration::from_secs(60);
/// How long the writes while the follower is down may take to make the others purge past it.
const PURGE_WAIT: Duration = Duration::from_secs(90);

/// The objects one [`write_round`] created (ids), and the user's name and password.
struct Round {
    project: String,
    project_name: String,
    user: String,
    user_name: String,
    password: String,
    group: String,
    role: String,
    credential: String,
}

impl Round {
    fn known_user(&self) -> KnownUser<'_> {
        KnownUser { name: &self.user_name, id: &self.user, password: &self.password, project: &self.project_name }
    }
}

async fn create(c: &Cluster, i: usize, token: &str, path: &str, kind: &str, fields: Value) -> String {
    let r = c.post_retry(i, path, token, &json!({ kind: fields }), WAIT).await;
    r.json[kind]["id"].as_str().unwrap_or_else(|| panic!("no {kind} id in {}", r.text)).to_string()
}

/// One write of each kind through node `i`: a project, a user with a password, a group with
/// the user as member, a role granted to the user on the project, an EC2 credential.
async fn write_round(c: &Cluster, i: usize, token: &str, tag: &str) -> Round {
    let project_name = format!("p-{tag}");
    let project =
        create(c, i, token, "/v3/projects", "project", json!({"name": project_name, "domain_id": "default"})).await;
    let (user_name, password) = (format!("u-{tag}"), format!("pw-{tag}-{}", random_hex(4)));
    let fields = json!({"name": user_name, "domain_id": "default", "password": password});
    let user = create(c, i, token, "/v3/users", "user", fields).await;
    let group =
        create(c, i, token, "/v3/groups", "group", json!({"name": format!("g-{tag}"), "domain_id": "default"})).await;
    c.put_retry(i, &format!("/v3/groups/{group}/users/{user}"), token, WAIT).await;
    let role = create(c, i, token, "/v3/roles", "role", json!({"name": format!("r-{tag}")})).await;
    c.put_retry(i, &format!("/v3/projects/{project}/users/{user}/roles/{role}"), token, WAIT).await;
    let blob = json!({"access": format!("a-{tag}-{}", random_hex(4)), "secret": format!("s-{tag}")}).to_string();
    let fields = json!({"type": "ec2", "user_id": user, "project_id": project, "blob": blob});
    let credential = create(c, i, token, "/v3/credentials", "credential", fields).await;
    Round { project, project_name, user, user_name, password, group, role, credential }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_follower_that_installed_a_snapshot_answers_like_the_others() {
    let env = [
        ("IDNODE_RAFT_SNAPSHOT_LOGS_SINCE_LAST", "40"),
        ("IDNODE_RAFT_SNAPSHOT_LOG_RATIO", "0"),
        ("IDNODE_RAFT_SNAPSHOT_CATCHUP_ENTRIES", "5"),
        // the leader's periodic check runs too; its verdicts feed the mismatch gauge
        ("IDNODE_RAFT_CONSISTENCY_CHECK_INTERVAL", "2"),
    ];
    let mut c = Cluster::start_with_env(3, &env).await;
    let all: Vec<usize> = (0..3).collect();
    let leader = c.wait_leader(WAIT).await;
    let token = c.admin_token(leader).await;
    let mut rounds = vec![write_round(&c, leader, &token, "before").await];
    c.wait_applied_converged(&all, WAIT).await;

    // Stop a follower. Everything it can hold is at most what the leader had when it died.
    let follower = (leader + 1) % 3;
    let other = (leader + 2) % 3;
    let follower_applied = c.metrics(follower).await.expect("follower metrics").applied_index;
    c.kill(follower);
    let stopped_at = json_u64(&c.status_cli(leader).await, "last_log_index").max(follower_applied);
    println!("node {} stopped: applied {follower_applied}, at most {stopped_at} in its log", follower + 1);

    // Write every kind until both live nodes have purged the entry after `stopped_at`: whoever
    // leads when the follower returns must send it a snapshot.
    let deadline = Instant::now() + PURGE_WAIT;
    let mut purged = (0, 0);
    while purged.0 <= stopped_at || purged.1 <= stopped_at {
        assert!(
            Instant::now() < deadline,
            "the live nodes never purged past {stopped_at} (purged: {purged:?}) within {PURGE_WAIT:?}"
        );
        let tag = format!("down-{}", rounds.len());
        rounds.push(write_round(&c, leader, &token, &tag).await);
        purged = (
            json_u64(&c.status_cli(leader).await, "purged_index"),
            json_u64(&c.status_cli(other).await, "purged_index"),
        );
    }
    println!(
        "{} write rounds while node {} was down; purged {purged:?} > {stopped_at}",
        rounds.len() - 1,
        follower + 1
    );

    c.restart(follower).await;
    c.wait_applied_converged(&all, WAIT).await;
    let status = c.status_cli(follower).await;
    let snapshot = json_u64(&status, "snapshot_index");
    assert!(
        snapshot > stopped_at,
        "node {} caught up without installing a snapshot: snapshot_index {snapshot} <= {stopped_at}; {status:#}",
        follower + 1
    );
    // One more round after the install: it reaches the follower through the log.
    rounds.push(write_round(&c, leader, &token, "after").await);
    c.wait_applied_converged(&all, WAIT).await;

    // Logins: the admin, a user created before the follower stopped, one created while it was
    // down (so it reached the follower inside the snapshot) and one written after the install.
    let users = [rounds[0].known_user(), rounds[1].known_user(), rounds[rounds.len() - 1].known_user()];
    let admin_id = assert_logins_everywhere(&c, &users).await;
    assert_admin_unique_everywhere(&c, &token, &admin_id, WAIT).await;

    assert_listings_equal(&c, &token, REPLICATED).await;
    let created: [(&str, &str, BTreeSet<String>); 5] = [
        ("/v3/users", "users", rounds.iter().map(|r| r.user.clone()).collect()),
        ("/v3/groups", "groups", rounds.iter().map(|r| r.group.clone()).collect()),
        ("/v3/roles", "roles", rounds.iter().map(|r| r.role.clone()).collect()),
        ("/v3/projects", "projects", rounds.iter().map(|r| r.project.clone()).collect()),
        ("/v3/credentials", "credentials", rounds.iter().map(|r| r.credential.clone()).collect()),
    ];
    for i in 0..3 {
        for (path, key, ids) in &created {
            let listed = c.list_ids(i, &token, path, key).await;
            let missing: Vec<&String> = ids.difference(&listed).take(5).collect();
            assert!(missing.is_empty(), "{path} on node {} misses created ids, e.g. {missing:?}", i + 1);
        }
        for r in &rounds {
            let members = c.list_ids(i, &token, &format!("/v3/groups/{}/users", r.group), "users").await;
            assert_eq!(members, BTreeSet::from([r.user.clone()]), "members of group {} on node {}", r.group, i + 1);
        }
    }

    let report = assert_check_consistent(&c, follower).await;
    println!("idnode cluster check: index {}, reference {}", report["index"], report["reference"]);
    // The leader's periodic check (every 2 s) runs past the install too: wait for one after the
    // check above (a later checkpoint), so the gauges below include its verdicts.
    let checked = report["index"].as_u64().unwrap_or(0);
    let deadline = Instant::now() + WAIT;
    while last_check_index(&c).await <= checked {
        assert!(Instant::now() < deadline, "no periodic consistency check after index {checked} within {WAIT:?}");
        tokio::time::sleep(crate::support::POLL).await;
    }
    assert_no_mismatch_metric(&c).await;
}

/// Highest `idnode_raft_consistency_check_index` (checkpoint of the last check a node ran).
async fn last_check_index(c: &Cluster) -> u64 {
    let mut best = 0;
    for i in 0..c.len() {
        best = best.max(c.metric(i, "idnode_raft_consistency_check_index").await.unwrap_or(0.0) as u64);
    }
    best
}
