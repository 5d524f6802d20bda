//! Key rotation on a running 3-node cluster, from the operator's command line: token keys
//! through raft (old tokens still validate, new ones validate everywhere), data keys per node
//! with background re-sealing that survives a SIGKILL mid-way and ends with the old key
//! forgotten, and a KEK re-key after which the node starts only with the new KEK. Replicas
//! stay identical throughout (`idnode cluster check`).

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{b64, metric_value, random_bytes, Cluster};

fn answers(out: &std::process::Output) -> Vec<Value> {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::Deserializer::from_str(&text).into_iter::<Value>().map(|v| v.expect("JSON answer")).collect()
}

async fn wait_metric(c: &Cluster, i: usize, name: &str, want: f64, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    loop {
        let got = c.metric(i, name).await;
        if got == Some(want) {
            return;
        }
        assert!(Instant::now() < deadline, "node {}: {name} is {got:?}, not {want}", i + 1);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_data_and_wrapping_keys_rotate_online() {
    let mut c = Cluster::start_with_env(3, &[("IDNODE_KEYS_RESEAL_RATE", "150")]).await;
    let old_token = c.admin_token(0).await;

    // Token keys: one command, replicated.
    let out = c.keys_cli(&[1], &["rotate", "--token"]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let keys = &answers(&out)[0]["answer"]["token_keys"];
    let primary: Vec<&Value> = keys.as_array().unwrap().iter().filter(|k| k["state"] == "Primary").collect();
    assert_eq!(primary.len(), 1);
    assert_eq!(primary[0]["id"], 2, "the staged key became primary: {keys}");
    assert!(!keys.to_string().contains("secret"), "no key material in the answer");
    // Token rotation is a command of version 2: the cluster is there (at this binary's
    // version, which is at least 2), and says so.
    let status = c.status_cli(2).await;
    let version = status["cluster_version"].as_u64().unwrap_or(0);
    assert!(version >= 2, "{status}");
    let versions = status["versions"].as_array().expect("versions");
    assert_eq!(versions.len(), 3, "{status}");
    assert!(versions.iter().all(|v| v["version"]["command_version"] == version), "{status}");
    let new_token = c.admin_token(2).await;
    for i in 0..3 {
        for t in [&old_token, &new_token] {
            let r = c.http.validate_token(&c.api(i), &new_token, t).await.unwrap();
            assert_eq!(r.status, StatusCode::OK, "node {}: {}", i + 1, r.text);
        }
    }

    // Data keys: enough state that re-sealing at 150 values/s takes a while.
    let token = c.admin_token(0).await;
    for n in 0..150 {
        let body = json!({"project": {"name": format!("rot-{n}"), "domain_id": "default"}});
        let r = c.http.post(&format!("{}/v3/projects", c.api(n % 3)), Some(&token), &body).await.unwrap();
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    }
    let out = c.keys_cli(&[0, 1, 2], &["rotate", "--dek"]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for a in answers(&out) {
        assert_eq!(a["answer"]["data_keys"]["current_epoch"], 2, "{a}");
    }
    wait_metric(&c, 0, "idnode_keys_reseal_in_progress", 1.0, Duration::from_secs(5)).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let resealed = c.metric(0, "idnode_keys_resealed_total").await.unwrap_or(0.0);
    assert_eq!(c.metric(0, "idnode_keys_reseal_in_progress").await, Some(1.0), "killed while re-sealing");
    assert!(resealed > 0.0, "re-sealing had started");
    c.kill(0);
    c.restart(0).await;
    for i in 0..3 {
        wait_metric(&c, i, "idnode_keys_epochs", 1.0, Duration::from_secs(120)).await;
        wait_metric(&c, i, "idnode_keys_epoch_current", 2.0, Duration::from_secs(5)).await;
    }
    for i in 1..3 {
        // Re-sealing drew nonces under the new epoch; the retired one is no longer counted.
        let text = c.metrics_text(i).await.unwrap_or_default();
        let sealed = metric_value(&text, "idnode_keys_epoch_sealed_total{epoch=\"2\"}").unwrap_or(0.0);
        assert!(sealed >= 150.0, "node {i}: {sealed} values sealed under epoch 2");
        assert_eq!(metric_value(&text, "idnode_keys_epoch_sealed_total{epoch=\"1\"}"), None);
    }
    let names = c.list_names(0, &token, "/v3/projects", "projects").await;
    assert!((0..150).all(|n| names.contains(&format!("rot-{n}"))), "the data reads back under the new key");
    let (code, report) = c.cluster_check(1).await;
    assert_eq!(code, 0, "replicas agree after re-sealing: {report}");

    // KEK: the ring of node 2 is re-wrapped; it then starts with the new KEK only.
    let dir = tempfile::tempdir().unwrap();
    let new_kek = b64(&random_bytes(32));
    let file = dir.path().join("new.kek");
    std::fs::write(&file, &new_kek).unwrap();
    let inside = c.nodes[1].data_dir.join("new.kek");
    std::fs::write(&inside, &new_kek).unwrap();
    let out = c.keys_cli(&[1], &["rekey", "--kek-file", inside.to_str().unwrap()]).await;
    assert!(!out.status.success(), "a KEK inside the data directory is refused");
    std::fs::remove_file(&inside).unwrap();
    let out = c.keys_cli(&[1], &["rekey", "--kek-file", file.to_str().unwrap()]).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    c.kill(1);
    c.spawn_node(1);
    let deadline = Instant::now() + Duration::from_secs(20);
    while c.nodes[1].is_running() {
        assert!(Instant::now() < deadline, "node 2 started with the old KEK");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    c.nodes[1].kek_b64 = new_kek;
    c.restart(1).await;
    let r = c.http.validate_token(&c.api(1), &new_token, &old_token).await.unwrap();
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
}
