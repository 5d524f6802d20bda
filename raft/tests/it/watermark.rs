//! Followers answering credential checks by the watermark: no read index while in contact,
//! every acknowledged write held by every member that may answer, a silent member left
//! behind within the bound, and nothing of it below the cluster version that introduced it.

use std::time::{Duration, Instant};

use idnode_raft::WATERMARK_VERSION;

use crate::app::put;
use crate::harness::{three_nodes_versioned, wait_leader, Running, WAIT};

const LIMIT: Duration = Duration::from_secs(3);

/// A cluster at the watermark's version, once a follower answers locally.
async fn watermarked(root: &std::path::Path) -> (Vec<Running>, u64) {
    let nodes = three_nodes_versioned(root, 10_000, WATERMARK_VERSION).await;
    let leader = wait_leader(&nodes).await;
    let deadline = Instant::now() + WAIT;
    loop {
        let f = nodes.iter().find(|n| n.seat.id != leader).unwrap();
        let before = f.node.local_answers();
        f.node.ensure_fresh_local(LIMIT).await.unwrap();
        if f.node.local_answers() > before {
            return (nodes, leader);
        }
        assert!(Instant::now() < deadline, "no follower answered by the watermark");
        // Writes move the cluster version up and make the leader apply an entry of its term.
        nodes[0].node.propose(put("warm", "up")).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followers_answer_locally_and_every_acknowledged_write_is_held_by_every_member_that_answers() {
    let root = tempfile::tempdir().unwrap();
    let (nodes, leader) = watermarked(root.path()).await;
    for n in &nodes {
        assert_eq!(n.node.cluster_version(), WATERMARK_VERSION);
    }

    // Writes through each member in turn; the moment one is acknowledged, every member that
    // may answer (each, here) holds it: none misses it, whichever it asks.
    let mut last = 0;
    for i in 0..60 {
        let writer = &nodes[i % 3];
        let key = format!("k{i}");
        last = writer.node.propose(put(&key, &format!("v{i}"))).await.unwrap().0;
        for n in &nodes {
            n.node.ensure_fresh_local(LIMIT).await.unwrap();
            n.node.settle(LIMIT).await.unwrap();
            assert_eq!(
                n.get(&key).as_deref(),
                Some(format!("v{i}").as_bytes()),
                "member {} answered without write {i}, acknowledged by member {}",
                n.seat.id,
                writer.seat.id
            );
        }
    }
    let followers: Vec<&Running> = nodes.iter().filter(|n| n.seat.id != leader).collect();
    for f in &followers {
        assert!(f.node.local_answers() >= 60, "member {} took read indexes: {}", f.seat.id, f.node.local_answers());
    }
    for n in &nodes {
        let w = n.node.watermark_index();
        assert!(w >= last, "member {}: watermark {w}, last write {last}", n.seat.id);
        if n.seat.id == leader {
            assert!(w <= n.node.committed_index(), "a watermark above the commit index: {w}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_stops_is_left_behind_within_the_bound() {
    let root = tempfile::tempdir().unwrap();
    let (mut nodes, leader) = watermarked(root.path()).await;
    let pos = nodes.iter().position(|n| n.seat.id != leader).unwrap();
    let gone = nodes.remove(pos);
    let _seat = gone.stop().await;
    // The stopped member may have been answering until its lease ran out: the write waits for
    // that (twice the freshness window). Were it held back for good, the leader would give up
    // at the forward timeout and the proposal would fail here, whatever the host's speed.
    nodes[0].node.propose(put("after", "stop")).await.unwrap();
    for n in &nodes {
        n.node.ensure_fresh_local(LIMIT).await.unwrap();
        n.node.settle(LIMIT).await.unwrap();
        assert_eq!(n.get("after").as_deref(), Some(&b"stop"[..]), "member {}", n.seat.id);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn below_its_version_nobody_answers_by_a_watermark() {
    let root = tempfile::tempdir().unwrap();
    let nodes = three_nodes_versioned(root.path(), 10_000, WATERMARK_VERSION - 1).await;
    let leader = wait_leader(&nodes).await;
    for i in 0..20 {
        nodes[i % 3].node.propose(put(&format!("k{i}"), "v")).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    for n in &nodes {
        n.node.ensure_fresh_local(LIMIT).await.unwrap();
        n.node.settle(LIMIT).await.unwrap();
        assert_eq!(n.node.local_answers(), 0, "member {} (leader {leader})", n.seat.id);
        assert_eq!(n.node.watermark_index(), 0);
        assert_eq!(n.get("k19").as_deref(), Some(&b"v"[..]));
    }
}
