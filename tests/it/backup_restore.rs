//! Backup and restore as an operator meets them: `idnode backup` from a follower of a 3-node
//! cluster while writes stream through every node, then `idnode restore` of that file into a
//! new 3-node cluster. Every write acknowledged before the backup began is on every restored
//! node, the restored members agree byte for byte, and the new cluster takes writes. And
//! `idnode backup inspect` on a live backup says what it is without the secret.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use crate::support::{output_within, Cluster, Http, CLI_TIMEOUT};

/// Creates projects through node `node` until `stop`, recording each acknowledged name with
/// the instant its 201 arrived.
async fn writer(
    api: String,
    token: String,
    node: usize,
    stop: Arc<std::sync::atomic::AtomicBool>,
    acked: Arc<Mutex<Vec<(String, Instant)>>>,
) {
    let http = Http::new(Duration::from_secs(10));
    let mut n = 0;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        n += 1;
        let name = format!("bk-{node}-{n}");
        let body = json!({"project": {"name": name, "domain_id": "default"}});
        if let Ok(r) = http.post(&format!("{api}/v3/projects"), Some(&token), &body).await {
            if r.status == StatusCode::CREATED {
                acked.lock().unwrap().push((name, Instant::now()));
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_under_writes_restores_every_acknowledged_write_on_every_new_node() {
    let cluster = Cluster::start(3).await;
    let leader = cluster.wait_leader(Duration::from_secs(30)).await;
    let follower = (leader + 1) % 3;
    let token = cluster.admin_token(0).await;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let acked = Arc::new(Mutex::new(Vec::new()));
    let writers: Vec<_> =
        (0..3).map(|i| tokio::spawn(writer(cluster.api(i), token.clone(), i, stop.clone(), acked.clone()))).collect();
    tokio::time::sleep(Duration::from_secs(2)).await;

    let files = tempfile::tempdir().unwrap();
    let file = files.path().join("cluster.backup");
    let began = Instant::now();
    let out = cluster.backup_cli(follower, &file).await;
    assert!(out.status.success(), "backup failed: {}", String::from_utf8_lossy(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("backup prints a JSON summary");
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    let before: BTreeSet<String> = acked.iter().filter(|(_, at)| *at < began).map(|(n, _)| n.clone()).collect();
    let during = acked.len() - before.len();
    eprintln!("backup: {summary}; {} writes acknowledged before it began, {during} during or after", before.len());
    assert!(before.len() >= 10 && during > 0, "writes flowed before and during the backup");
    let bytes = std::fs::read(&file).unwrap();
    assert!(
        !bytes.windows(5).any(|w| w == b"bk-1-") && !bytes.windows(5).any(|w| w == b"admin"),
        "no name in the backup file"
    );

    // A wrong secret gets nothing; an existing file is never overwritten.
    let other = files.path().join("other");
    let wrong = cluster.backup_cli_as(follower, &other, "not-the-secret").await;
    assert!(!wrong.status.success() && !other.exists(), "{}", String::from_utf8_lossy(&wrong.stderr));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("401"), "{}", String::from_utf8_lossy(&wrong.stderr));
    let again = cluster.backup_cli(follower, &file).await;
    assert!(!again.status.success() && String::from_utf8_lossy(&again.stderr).contains("exists"));

    let secret = cluster.secret.clone();
    let admin_password = cluster.admin_password.clone();
    drop(cluster);

    let restored = Cluster::restore(3, &file, &secret, &admin_password).await;
    restored.wait_leader(Duration::from_secs(30)).await;
    let mut listings = Vec::new();
    for i in 0..3 {
        let token = restored.admin_token(i).await;
        let names = restored.list_names(i, &token, "/v3/projects", "projects").await;
        let missing: Vec<_> = before.difference(&names).collect();
        assert!(missing.is_empty(), "node {}: acknowledged writes missing after restore: {missing:?}", i + 1);
        listings.push(names);
    }
    assert!(listings.windows(2).all(|w| w[0] == w[1]), "every restored node lists the same projects");
    let (code, report) = restored.cluster_check(1).await;
    assert_eq!(code, 0, "restored members agree: {report}");

    // The new cluster takes writes through a follower, and they replicate.
    let leader = restored.wait_leader(Duration::from_secs(30)).await;
    let follower = (leader + 1) % 3;
    let token = restored.admin_token(follower).await;
    let body = json!({"project": {"name": "after-restore", "domain_id": "default"}});
    let r = restored.http.post(&format!("{}/v3/projects", restored.api(follower)), Some(&token), &body).await.unwrap();
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    restored.wait_applied_converged(&[0, 1, 2], Duration::from_secs(30)).await;

    // A restore never lands on a used data directory.
    let out = restored.restore_cli(0, &file);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("already holds a database"));
}

/// `idnode backup inspect FILE`, with no `IDNODE_*` variable (so no secret) in its environment.
fn inspect(file: &std::path::Path) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_idnode"));
    for (k, _) in std::env::vars_os().filter(|(k, _)| k.to_string_lossy().starts_with("IDNODE_")) {
        cmd.env_remove(k);
    }
    cmd.args(["backup", "inspect"]).arg(file);
    output_within(&mut cmd, CLI_TIMEOUT)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backup_inspect_names_a_live_backup_without_the_secret_and_refuses_a_cut_or_foreign_file() {
    let cluster = Cluster::start(1).await;
    cluster.wait_leader(Duration::from_secs(30)).await;
    cluster.admin_token(0).await;
    let files = tempfile::tempdir().unwrap();
    let file = files.path().join("one.backup");
    let out = cluster.backup_cli(0, &file).await;
    assert!(out.status.success(), "backup failed: {}", String::from_utf8_lossy(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();

    let out = inspect(&file);
    assert!(out.status.success(), "inspect failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(!stdout.contains(&cluster.secret), "the report never holds the secret");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("inspect prints JSON");
    assert_eq!(report["backup_id"], summary["backup_id"], "{report}");
    assert_eq!(report["applied_index"], summary["applied_index"]);
    assert_eq!(report["cluster_id"], summary["cluster_id"]);
    assert!(report["cluster_id"].as_str().is_some_and(|c| c.len() == 16), "{report}");
    assert_eq!(report["taken_on"], json!(1));
    assert_eq!(report["members"], json!({"1": cluster.peer_addr(0)}));
    assert!(report["applied_term"].as_u64().is_some_and(|t| t >= 1), "{report}");
    assert_eq!(report["size_bytes"], json!(std::fs::metadata(&file).unwrap().len()));
    assert_eq!(report["complete"], json!(true));
    assert_eq!(report["format"], json!(1));

    // The running cluster names itself the same way.
    let status = cluster.keys_cli(&[0], &["status"]).await;
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["answer"]["cluster_id"], report["cluster_id"], "{status}");

    let bytes = std::fs::read(&file).unwrap();
    let cut = files.path().join("cut.backup");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let out = inspect(&cut);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("not a complete backup"), "{stderr}");
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()["complete"], json!(false));
    let foreign = files.path().join("foreign");
    std::fs::write(&foreign, b"SQLite format 3\0 and then some pages").unwrap();
    let out = inspect(&foreign);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("not an idnode backup"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
