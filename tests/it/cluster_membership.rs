//! Membership changes with `idnode cluster …` against real processes: a fourth node started
//! with `--initial-cluster-state existing` joins as a learner, catches up, is promoted to
//! voter, serves the data, and is removed again; a caller without the cluster secret is
//! refused.

use std::time::Duration;

use crate::support::Cluster;
use reqwest::StatusCode;
use serde_json::{json, Value};
use std::time::Instant;

fn cli_json(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "idnode cluster failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cluster status JSON")
}

fn ids(status: &Value, key: &str) -> Vec<u64> {
    status[key].as_array().map(|a| a.iter().filter_map(|m| m["id"].as_u64()).collect()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_joins_as_learner_is_promoted_and_removed() {
    let mut cluster = Cluster::start(3).await;
    cluster.wait_leader(Duration::from_secs(30)).await;
    let token = cluster.admin_token(0).await;
    let created = cluster
        .post_retry(
            1,
            "/v3/projects",
            &token,
            &json!({"project": {"name": "before-join", "domain_id": "default"}}),
            Duration::from_secs(30),
        )
        .await;
    let project_id = created.json["project"]["id"].as_str().expect("project id").to_string();

    let new = cluster.spawn_joining_node();
    let peer = format!("127.0.0.1:{}", cluster.nodes[new].peer_port);
    // Not initialized on its own: it must not form a cluster of one.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let r = cluster.http.get(&format!("{}/ready", cluster.ops(new)), None).await.expect("ready");
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "a joining node is not ready alone: {}", r.text);

    let status = cli_json(&cluster.cluster_cli(2, &["add-learner", "4", &peer]));
    assert_eq!(ids(&status, "learners"), vec![4]);
    let status = cli_json(&cluster.cluster_cli(0, &["promote", "4"]));
    assert_eq!(ids(&status, "voters"), vec![1, 2, 3, 4]);
    cluster.wait_ready(new, Instant::now() + Duration::from_secs(30)).await;
    cluster
        .wait_get_status(new, &format!("/v3/projects/{project_id}"), &token, StatusCode::OK, Duration::from_secs(30))
        .await;

    let status = cli_json(&cluster.cluster_cli(1, &["remove", "4"]));
    assert_eq!(ids(&status, "voters"), vec![1, 2, 3]);
    assert!(ids(&status, "learners").is_empty());
    let status = cli_json(&cluster.cluster_cli(0, &["status"]));
    assert_eq!(ids(&status, "voters"), vec![1, 2, 3]);

    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_idnode"))
        .args(["cluster", "status", "--endpoint", &peer])
        .env("IDNODE_CLUSTER_SECRET", "not-the-secret")
        .output()
        .expect("run idnode cluster");
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("401"), "{}", String::from_utf8_lossy(&refused.stderr));
}
