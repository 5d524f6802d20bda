//! The shared OpenStack smoke session (python-openstackclient driving a realistic admin
//! workflow, `../shared/tools/openstack-smoke.sh`) against one node and against a 3-node
//! cluster entered through a follower. Every step must pass. The cluster logs JSON lines
//! (`[log] format = json`): every line of every member parses, and none holds the admin
//! password or a password the session set.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::support::Cluster;

fn smoke_script() -> Option<PathBuf> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/tools/openstack-smoke.sh");
    if p.exists() {
        return Some(p);
    }
    // Outside CI a checkout without the shared tools cannot run this; CI always has them.
    assert!(std::env::var_os("CI").is_none(), "{} is missing", p.display());
    eprintln!("SKIPPED: {} not found", p.display());
    None
}

/// Runs the script (bounded in time) and returns its last line.
fn run_smoke(script: &PathBuf, endpoint: &str, password: &str) -> String {
    let out = Command::new("timeout")
        .arg("600")
        .arg("bash")
        .arg(script)
        .arg(endpoint)
        .arg(password)
        .output()
        .expect("run the smoke script");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let last = stdout.lines().last().unwrap_or_default().to_string();
    assert!(
        out.status.success() && last.ends_with(" 0 failed"),
        "smoke session against {endpoint} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    last
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openstack_smoke_passes_on_one_node_and_on_a_three_node_cluster() {
    let Some(script) = smoke_script() else { return };

    let single = Cluster::start(1).await;
    let summary = run_smoke(&script, &format!("{}/v3", single.api(0)), &single.admin_password);
    eprintln!("one node: {summary}");
    drop(single);

    let cluster = Cluster::start_with_env(3, &[("IDNODE_LOG_FORMAT", "json")]).await;
    let leader = cluster.wait_leader(Duration::from_secs(30)).await;
    let follower = (leader + 1) % 3;
    let summary = run_smoke(&script, &format!("{}/v3", cluster.api(follower)), &cluster.admin_password);
    eprintln!("3-node cluster via node {}: {summary}", follower + 1);

    // Give the members' log writers a moment, then read every line they wrote.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut access_lines = 0;
    for node in &cluster.nodes {
        let log = std::fs::read_to_string(&node.log_path).expect("read a member's log");
        for line in log.lines().filter(|l| !l.starts_with("===== harness") && !l.trim().is_empty()) {
            let v: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("node {}: not a JSON line ({e}): {line}", node.id));
            access_lines += usize::from(v["target"] == "idnode::access");
            // The smoke session's passwords all begin so (`openstack-smoke.sh`).
            for secret in [cluster.admin_password.as_str(), "Smoke-pw-"] {
                assert!(!line.contains(secret), "node {} logged a password: {line}", node.id);
            }
        }
    }
    assert!(access_lines > 50, "the smoke session left {access_lines} access lines");
}
