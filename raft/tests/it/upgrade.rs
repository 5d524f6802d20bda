//! Rolling upgrades: the cluster version rises only once every voter runs a binary that
//! applies it, the leader refuses commands above it, an old learner cannot be promoted, and a
//! member that meets a version it cannot apply stops and says why.

use std::time::{Duration, Instant};

use crate::app::{put, put_v2};
use crate::harness::{members, start_versioned, wait_applied, wait_leader, Running, WAIT};

fn by_id(nodes: &[Running], id: u64) -> &Running {
    nodes.iter().find(|n| n.seat.id == id).unwrap()
}

pub async fn wait_cluster_version(nodes: &[Running], version: u32) {
    let deadline = Instant::now() + WAIT;
    while !nodes.iter().all(|n| n.node.cluster_version() == version) {
        assert!(Instant::now() < deadline, "cluster version never reached {version} on every node");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cluster_version_rises_only_when_every_voter_applies_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // Nodes 1 and 2 run the new binary (command version 2), node 3 the old one.
    let mut nodes = Vec::new();
    for (id, version) in [(1, 2), (2, 2), (3, 1)] {
        nodes.push(start_versioned(None, id, root, 1000, version).await);
    }
    let m = members(&nodes.iter().collect::<Vec<_>>());
    for n in &nodes {
        n.node.initialize(m.clone()).await.unwrap();
    }
    let leader = wait_leader(&nodes).await;
    let (index, _) = nodes[2].node.propose(put("a", "1")).await.expect("old commands work everywhere");
    assert_eq!(by_id(&nodes, leader).node.raise_cluster_version().await.unwrap(), 1, "node 3 holds it back");
    let err = nodes[0].node.propose(put_v2("b", "2")).await.unwrap_err().to_string();
    assert!(err.contains("needs cluster version 2") && err.contains("runs version 1"), "{err}");
    let versions = by_id(&nodes, leader).node.member_versions().await;
    let of = |id: u64| versions.iter().find(|v| v.id == id).and_then(|v| v.version.clone()).unwrap().command_version;
    assert_eq!((of(1), of(2), of(3)), (2, 2, 1));
    for n in &nodes {
        wait_applied(n, index).await;
        assert_eq!(n.get("b"), None, "the refused command reached no log");
    }

    // Upgrade node 3 in place: the leader raises the version by itself.
    let seat = nodes.pop().unwrap().stop().await;
    nodes.push(start_versioned(Some(seat), 3, root, 1000, 2).await);
    wait_cluster_version(&nodes, 2).await;
    let status = nodes[1].node.status();
    assert_eq!(status.cluster_version, 2);
    let (index, _) = nodes[2].node.propose(put_v2("b", "2")).await.expect("the new command once every voter has it");
    for n in &nodes {
        wait_applied(n, index).await;
        assert_eq!(n.get("b").as_deref(), Some(&b"2"[..]));
    }

    // An old binary may follow as a learner, but is never promoted, and stops at the version
    // entry it cannot apply instead of diverging.
    let old = start_versioned(None, 4, root, 1000, 1).await;
    let leader = wait_leader(&nodes).await;
    by_id(&nodes, leader).node.add_learner(4, old.seat.addr.to_string()).await.unwrap();
    let err = nodes[0].node.promote(4).await.unwrap_err().to_string();
    assert!(err.contains("below the cluster version 2"), "{err}");
    let deadline = Instant::now() + WAIT;
    let why = loop {
        if let Some(f) = old.node.status().fatal {
            break f;
        }
        assert!(Instant::now() < deadline, "the old learner kept applying");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(why.contains("run the newer idnode"), "{why}");
    assert!(!old.node.status().voters.iter().any(|v| v.id == 4));
}
