//! Group commit: concurrent proposals, through the leader and through followers, each land
//! exactly once and answer as they would alone, in far fewer log entries than commands; a
//! proposal refused before the log fails alone; a request id sent twice in one group applies
//! once; and below the batch version nothing is batched (an older voter could not decode it).

use std::collections::BTreeSet;

use futures::future::join_all;
use idnode_raft::BATCH_VERSION;

use crate::app::incr;
use crate::harness::{members, start_versioned, wait_applied, wait_leader, Running};
use crate::upgrade::wait_cluster_version;

async fn cluster(root: &std::path::Path, version: u32) -> Vec<Running> {
    let mut nodes = Vec::new();
    for id in 1..=3 {
        nodes.push(start_versioned(None, id, root, 100_000, version).await);
    }
    let m = members(&nodes.iter().collect::<Vec<_>>());
    for n in &nodes {
        n.node.initialize(m.clone()).await.unwrap();
    }
    wait_leader(&nodes).await;
    nodes
}

/// `n` increments of `key` sent at once, spread over every node: (entry index, count) each.
async fn increments(nodes: &[Running], key: &str, n: usize) -> Vec<(u64, u64)> {
    let sent = (0..n).map(|i| nodes[i % nodes.len()].node.propose(incr(key)));
    join_all(sent)
        .await
        .into_iter()
        .map(|r| {
            let (index, reply) = r.expect("an increment is written");
            (index, postcard::from_bytes::<u64>(&reply).unwrap())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_proposals_share_entries_and_land_once() {
    let dir = tempfile::tempdir().unwrap();
    let nodes = cluster(dir.path(), BATCH_VERSION).await;
    wait_cluster_version(&nodes, BATCH_VERSION).await;

    const N: usize = 300;
    let outcomes = increments(&nodes, "k", N).await;
    let counts: BTreeSet<u64> = outcomes.iter().map(|(_, c)| *c).collect();
    assert_eq!(counts, (1..=N as u64).collect(), "every increment applied once, each saw its own count");
    let entries: BTreeSet<u64> = outcomes.iter().map(|(i, _)| *i).collect();
    assert!(entries.len() <= N / 2, "{N} concurrent commands took {} entries: not batched", entries.len());
    let last = *entries.last().unwrap();
    for n in &nodes {
        wait_applied(n, last).await;
        assert_eq!(n.get("k"), Some(postcard::to_allocvec(&(N as u64)).unwrap()), "node {}", n.seat.id);
    }

    // A payload the application refuses fails alone; the commands around it are written.
    let follower = nodes.iter().find(|n| !n.node.is_leader()).unwrap();
    let mixed = (0..20).map(|i| follower.node.propose(if i == 7 { b"not an op".to_vec() } else { incr("m") }));
    let results = join_all(mixed).await;
    for (i, r) in results.iter().enumerate() {
        match (i, r) {
            (7, Err(e)) => assert!(e.to_string().contains("refused before it entered the log"), "{e}"),
            (7, Ok(_)) => panic!("an undecodable command was written"),
            (_, r) => assert!(r.is_ok(), "command {i}: {r:?}"),
        }
    }
    let written = results.iter().filter_map(|r| r.as_ref().ok()).map(|(i, _)| *i).max().unwrap();
    wait_applied(follower, written).await;
    assert_eq!(follower.get("m"), Some(postcard::to_allocvec(&19u64).unwrap()));

    // One request id sent five times at once (retries racing): applied once, one answer.
    let id = [7u8; 16];
    let same = join_all((0..5).map(|_| follower.node.propose_with_id(id, incr("d")))).await;
    let answers: BTreeSet<Vec<u8>> = same.into_iter().map(|r| r.unwrap().1).collect();
    assert_eq!(answers.len(), 1, "a retried command answers as it first did");
    assert_eq!(follower.get("d"), Some(postcard::to_allocvec(&1u64).unwrap()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn below_the_batch_version_each_command_has_its_entry() {
    let dir = tempfile::tempdir().unwrap();
    let nodes = cluster(dir.path(), BATCH_VERSION - 1).await;
    const N: usize = 60;
    let outcomes = increments(&nodes, "k", N).await;
    let entries: BTreeSet<u64> = outcomes.iter().map(|(i, _)| *i).collect();
    assert_eq!(entries.len(), N, "a cluster that cannot decode batches got one");
    let counts: BTreeSet<u64> = outcomes.iter().map(|(_, c)| *c).collect();
    assert_eq!(counts, (1..=N as u64).collect());
}
