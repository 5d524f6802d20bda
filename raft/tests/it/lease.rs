//! Leases of a cluster-wide figure: a follower's leases and the leader's own draw on one
//! bucket at the leader; below `LEASE_VERSION`, or once the leader is gone, a lease fails
//! within its bound (the application then counts its own share).

use std::time::{Duration, Instant};

use idnode_raft::LEASE_VERSION;

use crate::harness::{three_nodes_versioned, wait_leader, Running};
use crate::upgrade::wait_cluster_version;

const WITHIN: Duration = Duration::from_millis(300);
/// The bound for leases that must succeed: generous, so a loaded host's slow round trip is not
/// taken for a failure.
const ASK_WITHIN: Duration = Duration::from_secs(5);
/// How long a lease that must fail may take on a slow host: its bound plus scheduling slack.
const FAILS_WITHIN: Duration = Duration::from_secs(3);

fn split(nodes: &[Running], leader: u64) -> (&Running, Vec<&Running>) {
    let l = nodes.iter().find(|n| n.seat.id == leader).unwrap();
    (l, nodes.iter().filter(|n| n.seat.id != leader).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followers_and_the_leader_draw_on_one_bucket_and_without_a_leader_a_lease_fails_in_time() {
    let dir = tempfile::tempdir().unwrap();
    let mut nodes = three_nodes_versioned(dir.path(), 1000, LEASE_VERSION).await;
    wait_cluster_version(&nodes, LEASE_VERSION).await;
    let leader = wait_leader(&nodes).await;
    let (l, followers) = split(&nodes, leader);
    let started = Instant::now();
    let mut granted = 0;
    for f in &followers {
        granted += f.node.lease("limit:p", 12, 5, ASK_WITHIN).await.unwrap().granted;
    }
    granted += l.node.lease("limit:p", 12, 5, ASK_WITHIN).await.unwrap().granted;
    let last = followers[0].node.lease("limit:p", 12, 5, ASK_WITHIN).await.unwrap();
    granted += last.granted;
    // 12 at once, plus what refilled meanwhile (12 a minute) on a slow host.
    let refilled = (12.0 * started.elapsed().as_secs_f64() / 60.0).floor() as u32;
    assert!((12..=12 + refilled).contains(&granted), "{granted} granted");
    if refilled == 0 {
        assert_eq!(last.granted, 0);
        assert!(last.retry_after > Duration::ZERO && last.retry_after <= Duration::from_secs(5), "{last:?}");
    }
    let other = followers[1].node.lease("limit:q", 12, 5, ASK_WITHIN).await.unwrap();
    assert_eq!(other.granted, 5, "another key has its own bucket");
    assert_eq!(followers[0].node.lease_counts(), (2, 0));

    // Stop the leader and one follower: the last member has no leader to ask.
    let keep = followers[0].seat.id;
    let mut others = Vec::new();
    while let Some(i) = nodes.iter().position(|n| n.seat.id != keep) {
        others.push(nodes.remove(i));
    }
    for n in others {
        n.stop().await;
    }
    let started = Instant::now();
    assert!(nodes[0].node.lease("limit:p", 12, 5, WITHIN).await.is_err());
    assert!(started.elapsed() < FAILS_WITHIN, "{:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn below_the_lease_version_a_lease_fails() {
    let dir = tempfile::tempdir().unwrap();
    let nodes = three_nodes_versioned(dir.path(), 1000, LEASE_VERSION - 1).await;
    wait_cluster_version(&nodes, LEASE_VERSION - 1).await;
    let leader = wait_leader(&nodes).await;
    let (l, followers) = split(&nodes, leader);
    assert!(l.node.lease("limit:p", 12, 5, WITHIN).await.is_err(), "an older leader could not decode it");
    assert!(followers[0].node.lease("limit:p", 12, 5, WITHIN).await.is_err());
    assert_eq!(followers[0].node.lease_counts(), (1, 1));
}
