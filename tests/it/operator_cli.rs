//! The operator CLI against a real 3-node cluster, through the nodes' ops listeners
//! (`--endpoints`): `cluster status --all` in JSON and as a table, `cluster check`,
//! `cluster move-leader` to a follower, a killed member (exit 3), a usage error (exit 2) and a
//! refused move (exit 4).

use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{output_within_async, Cluster, CLI_TIMEOUT, POLL};

/// `idnode ARGS` with the cluster secret and no other `IDNODE_*` variable of the caller.
async fn idnode(cluster: &Cluster, args: &[&str]) -> Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_idnode"));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("IDNODE_") {
            cmd.env_remove(&k);
        }
    }
    cmd.args(args).env("IDNODE_CLUSTER_SECRET", &cluster.secret);
    output_within_async(&mut cmd, CLI_TIMEOUT).await
}

fn shown(out: &Output) -> String {
    format!(
        "{}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `cluster status --all -w json` rows, with the exit code.
async fn status_all(cluster: &Cluster, endpoints: &str) -> (Option<i32>, Vec<Value>, String) {
    let out = idnode(cluster, &["cluster", "status", "--all", "-w", "json", "--endpoints", endpoints]).await;
    let rows: Vec<Value> =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("rows JSON: {e}: {}", shown(&out)));
    (out.status.code(), rows, shown(&out))
}

/// Polls `status --all` until every member answers with one leader and equal terms.
async fn settled(cluster: &Cluster, endpoints: &str, timeout: Duration) -> Vec<Value> {
    let deadline = Instant::now() + timeout;
    loop {
        let (code, rows, report) = status_all(cluster, endpoints).await;
        let leaders = rows.iter().filter(|r| r["leader"] == true).count();
        let terms: Vec<&Value> = rows.iter().map(|r| &r["term"]).collect();
        if code == Some(0) && rows.len() == 3 && leaders == 1 && terms.windows(2).all(|w| w[0] == w[1]) {
            return rows;
        }
        assert!(Instant::now() < deadline, "no settled cluster within {timeout:?}: {report}");
        tokio::time::sleep(POLL).await;
    }
}

fn leader_id(rows: &[Value]) -> u64 {
    rows.iter().find(|r| r["leader"] == true).and_then(|r| r["id"].as_u64()).expect("a leader row")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_all_move_leader_and_exit_codes_on_a_real_cluster() {
    let mut cluster = Cluster::start(3).await;
    cluster.wait_leader(Duration::from_secs(30)).await;
    let endpoints = (0..3).map(|i| cluster.ops(i)).collect::<Vec<_>>().join(",");

    // A usage error is told apart from everything else.
    let usage = idnode(&cluster, &["cluster", "status", "--no-such-flag"]).await;
    assert_eq!(usage.status.code(), Some(2), "{}", shown(&usage));
    let usage = idnode(&cluster, &["cluster", "status", "-w", "yaml"]).await;
    assert_eq!(usage.status.code(), Some(2), "{}", shown(&usage));

    // Every member, one leader, one term; each row says who it is and where.
    let rows = settled(&cluster, &endpoints, Duration::from_secs(20)).await;
    let ids: Vec<u64> = rows.iter().filter_map(|r| r["id"].as_u64()).collect();
    assert_eq!(ids, vec![1, 2, 3], "{rows:?}");
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["endpoint"], cluster.ops(i), "{r}");
        assert_eq!(r["reachable"], true, "{r}");
        assert!(r["applied"].as_u64().is_some_and(|a| a > 0), "{r}");
        assert!(r["version"].as_str().is_some_and(|v| v.starts_with(env!("CARGO_PKG_VERSION"))), "{r}");
        assert_eq!(r["quarantined"], serde_json::json!([]), "{r}");
    }

    // The table: a header and a row per member.
    let table = idnode(&cluster, &["cluster", "status", "--all", "-w", "table", "--endpoints", &endpoints]).await;
    assert_eq!(table.status.code(), Some(0), "{}", shown(&table));
    let text = String::from_utf8_lossy(&table.stdout).into_owned();
    assert!(text.contains("IS LEADER") && text.contains("APPLIED") && text.contains("LAG"), "{text}");
    for i in 0..3 {
        let row = format!("| {} ", i + 1);
        assert_eq!(text.lines().filter(|l| l.starts_with(&row) && l.contains(&cluster.ops(i))).count(), 1, "{text}");
    }

    // One node's view through the old `--endpoint` spelling keeps its JSON shape.
    let one = idnode(&cluster, &["cluster", "status", "--endpoint", &cluster.ops(1)]).await;
    assert_eq!(one.status.code(), Some(0), "{}", shown(&one));
    let view: Value = serde_json::from_slice(&one.stdout).expect("status JSON");
    assert_eq!(view["node_id"], 2, "{view}");
    assert_eq!(view["voters"].as_array().map(Vec::len), Some(3), "{view}");

    // A healthy cluster passes the consistency check.
    let check = idnode(&cluster, &["cluster", "check", "--wait-secs", "20", "--endpoints", &endpoints]).await;
    assert_eq!(check.status.code(), Some(0), "{}", shown(&check));

    // Leadership moves to a follower, asked through a third member's endpoint.
    let old = leader_id(&rows);
    let target = (1..=3).find(|id| *id != old).expect("a follower");
    let via = (0..3).find(|i| *i as u64 + 1 != target).expect("another member");
    let moved =
        idnode(&cluster, &["cluster", "move-leader", &target.to_string(), "--endpoints", &cluster.ops(via)]).await;
    assert_eq!(moved.status.code(), Some(0), "{}", shown(&moved));
    assert!(String::from_utf8_lossy(&moved.stdout).contains(&format!("| leader | {target}")), "{}", shown(&moved));
    let rows = settled(&cluster, &endpoints, Duration::from_secs(20)).await;
    assert_eq!(leader_id(&rows), target, "{rows:?}");

    // A move to a member that is not a voter is refused (exit 4), not "unreachable".
    let refused = idnode(&cluster, &["cluster", "move-leader", "9", "--endpoints", &endpoints]).await;
    assert_eq!(refused.status.code(), Some(4), "{}", shown(&refused));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("not a voter"), "{}", shown(&refused));

    // A killed member: its row says so and the exit code is "unreachable".
    let victim = (0..3).find(|i| *i as u64 + 1 != target).expect("a follower");
    cluster.kill(victim);
    let (code, rows, report) = status_all(&cluster, &endpoints).await;
    assert_eq!(code, Some(3), "{report}");
    assert_eq!(rows.len(), 3, "{report}");
    for r in &rows {
        let dead = r["id"] == victim as u64 + 1;
        assert_eq!(r["reachable"], !dead, "{report}");
        if dead {
            assert_eq!(r["endpoint"], cluster.ops(victim), "{report}");
            assert!(r["error"].as_str().is_some_and(|e| !e.is_empty()), "{report}");
        }
    }
}
