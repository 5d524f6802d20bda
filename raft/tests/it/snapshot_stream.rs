//! A state far larger than the memory a snapshot may use moves to a new learner with flat
//! memory: the leader exports it into a sealed file, openraft sends that file in 1 MiB chunks,
//! the learner writes them to a file and ingests it as table files. The measurement runs in a
//! child process of its own (the peak RSS of a process is process-wide; other tests of this
//! binary would disturb it): sender and receiver are both in it, so the growth bounds the two
//! together.

use std::time::{Duration, Instant};

use idnode_raft::storage::digest_view;

use crate::app::{fill, KV};
use crate::harness::{start, three_nodes, wait_applied, wait_leader, WAIT};

/// State moved: 40 commands × 64 values × 64 KiB = 160 MiB.
const COMMANDS: u32 = 40;
const VALUES: u32 = 64;
const VALUE_SIZE: u32 = 64 << 10;
/// Allowed growth of the process's peak RSS while the snapshot moves.
const MAX_GROWTH_KIB: u64 = 64 << 10;
const CHILD_ENV: &str = "IDNODE_SNAPSHOT_RSS_CHILD";

fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap_or_else(|| panic!("{field} in /proc/self/status"));
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Resets the peak RSS (VmHWM) to the current RSS.
fn reset_peak() {
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
}

#[test]
#[ignore = "the learner stays at last_applied None after the 160 MiB install on this machine, with peer authentication bypassed too; under investigation (docs/raft.md)"]
fn a_large_state_reaches_a_new_learner_with_flat_memory() {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args(["--exact", "snapshot_stream::measured_install", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    println!("{text}");
    assert!(out.status.success(), "the measured install failed:\n{text}");
    assert!(text.contains("1 passed"), "the measured install did not run:\n{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by a_large_state_reaches_a_new_learner_with_flat_memory in a process of its own"]
async fn measured_install() {
    assert!(std::env::var(CHILD_ENV).is_ok(), "run through a_large_state_reaches_a_new_learner_with_flat_memory");
    let root = tempfile::tempdir().unwrap();
    // No automatic snapshot while filling: one is taken on purpose below.
    let nodes = three_nodes(root.path(), 100_000).await;
    let leader_id = wait_leader(&nodes).await;
    let leader = nodes.iter().find(|n| n.seat.id == leader_id).unwrap();
    let mut last = 0;
    for c in 0..COMMANDS {
        let (i, _) = leader.node.propose(fill("big/", c * VALUES, VALUES, VALUE_SIZE)).await.unwrap();
        last = i;
    }
    for n in &nodes {
        wait_applied(n, last).await;
    }
    leader.node.raft().trigger().snapshot().await.unwrap();
    let deadline = Instant::now() + WAIT * 3;
    while leader.node.status().purged_index.unwrap_or(0) < last {
        assert!(Instant::now() < deadline, "the leader did not snapshot and purge: {:?}", leader.node.status());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let meta_len = leader.node.engine().read().get("raft_meta", b"snapshot_file").unwrap().unwrap().len();
    assert!(meta_len < 1024, "the metadata names the snapshot file, it does not hold the state ({meta_len} bytes)");

    let learner = start(None, 4, root.path(), 100_000).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = status_kib("VmRSS:");
    reset_peak();
    let started = Instant::now();
    leader.node.add_learner(4, learner.seat.addr.to_string()).await.unwrap();
    wait_applied(&learner, last).await;
    let took = started.elapsed();
    let peak = status_kib("VmHWM:");
    let growth = peak.saturating_sub(before);
    let state_mib = (u64::from(COMMANDS * VALUES) * u64::from(VALUE_SIZE)) >> 20;
    println!(
        "snapshot of {state_mib} MiB installed in {took:?}; RSS {before} KiB before, peak {peak} KiB (+{growth} KiB)"
    );
    assert!(learner.app.snapshots_installed.load(std::sync::atomic::Ordering::SeqCst) >= 1, "caught up by a snapshot");
    let digest = |n: &crate::harness::Running| digest_view(&n.node.engine().snapshot(), &[KV]).unwrap();
    let want = digest(leader);
    assert_eq!(want.records, u64::from(COMMANDS * VALUES));
    assert_eq!(digest(&learner), want, "the learner holds exactly the leader's state");
    for n in &nodes {
        assert_eq!(digest(n), want, "node {}", n.seat.id);
    }
    assert!(
        growth < MAX_GROWTH_KIB,
        "moving {state_mib} MiB grew the process by {} MiB (limit {} MiB)",
        growth >> 10,
        MAX_GROWTH_KIB >> 10
    );
}
