//! Three-node clusters in one process: forwarding, dedup, auth, failover, snapshot catch-up and
//! restarts from the data dirs.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use idnode_raft::storage::keys::DataKeys;
use idnode_raft::storage::Engine;
use idnode_raft::{ProposeError, RaftNode};
use openraft::ServerState;
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;

use crate::app::{all_cfs, incr, put, KvApp};
use crate::harness::{
    members, options, start, start_versioned, three_nodes, three_nodes_versioned, wait_applied, wait_leader, Running,
    SECRET, WAIT,
};

fn prev(reply: &[u8]) -> Option<Vec<u8>> {
    postcard::from_bytes(reply).unwrap()
}

fn count(reply: &[u8]) -> u64 {
    postcard::from_bytes(reply).unwrap()
}

fn by_id(nodes: &[Running], id: u64) -> &Running {
    nodes.iter().find(|n| n.seat.id == id).unwrap()
}

/// Waits until `leader` compacted its log past `index` (a node that stopped there needs a
/// snapshot to catch up).
async fn wait_purged_past(leader: &Running, index: u64) {
    let purged = |m: &openraft::RaftMetrics<u64, openraft::BasicNode>| m.purged.is_some_and(|p| p.index > index);
    leader.node.raft().wait(Some(WAIT)).metrics(purged, "leader purged the missed entries").await.unwrap();
}

fn a_follower(nodes: &[Running], leader: u64) -> &Running {
    nodes.iter().find(|n| n.seat.id != leader).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follower_writes_dedup_auth_and_full_restart() {
    let root = tempfile::tempdir().unwrap();
    let nodes = three_nodes(root.path(), 5000).await;
    let leader_id = wait_leader(&nodes).await;
    let leader = by_id(&nodes, leader_id);
    let follower = a_follower(&nodes, leader_id);

    // (a) A write proposed through a follower is applied there before propose returns, and
    // reaches every node.
    let (idx, reply) = follower.node.propose(put("alpha", "1")).await.unwrap();
    assert_eq!(prev(&reply), None);
    assert!(follower.node.applied_index() >= idx, "read-your-writes on the proposing follower");
    assert_eq!(follower.get("alpha").as_deref(), Some(&b"1"[..]));
    for n in &nodes {
        wait_applied(n, idx).await;
        assert_eq!(n.get("alpha").as_deref(), Some(&b"1"[..]), "node {}", n.seat.id);
    }
    let (_, reply) = leader.node.propose(put("alpha", "2")).await.unwrap();
    assert_eq!(prev(&reply).as_deref(), Some(&b"1"[..]));

    // (f) A repeated request id is applied once and answered with the stored reply, whichever
    // node it arrives through.
    let rid = [7u8; 16];
    let (i1, r1) = follower.node.propose_with_id(rid, incr("ctr")).await.unwrap();
    let (i2, r2) = leader.node.propose_with_id(rid, incr("ctr")).await.unwrap();
    assert!(i2 > i1, "the retry is a new log entry");
    assert_eq!(count(&r1), 1);
    assert_eq!(r1, r2);
    for n in &nodes {
        wait_applied(n, i2).await;
        assert_eq!(n.get("ctr").map(|v| count(&v)), Some(1), "node {}", n.seat.id);
        assert_eq!(n.app.applies.load(Ordering::SeqCst), 3, "node {} applied a duplicate", n.seat.id);
    }
    let (_, r3) = follower.node.propose_with_id([8u8; 16], incr("ctr")).await.unwrap();
    assert_eq!(count(&r3), 2, "a new request id applies");

    // Linearizable barrier through a follower and on the leader.
    follower.node.linearizable_barrier().await.unwrap();
    leader.node.linearizable_barrier().await.unwrap();

    // (e) Peer routes refuse callers without the cluster credential.
    let http = reqwest::Client::new();
    for path in ["/raft/append", "/raft/vote", "/raft/snapshot", "/raft/leader"] {
        let url = format!("http://{}{path}", leader.seat.addr);
        let none = http.post(&url).body(vec![0u8; 4]).send().await.unwrap();
        assert_eq!(none.status(), 401, "{path} without credential");
        let wrong = http.post(&url).header("x-idnode-cluster-auth", "00ff").body(vec![0u8; 4]).send().await.unwrap();
        assert_eq!(wrong.status(), 401, "{path} with a wrong credential");
        let other = idnode_raft::sign_request("another-cluster", leader_id, "POST", path, &[0u8; 4]);
        let wrong = http.post(&url).header(other.0, other.1).body(vec![0u8; 4]).send().await.unwrap();
        assert_eq!(wrong.status(), 401, "{path} with another cluster's credential");
        // The previous release's static bearer (hex SHA-256 of a label and the secret).
        let bearer = {
            use sha2::Digest;
            let mut h = sha2::Sha256::new();
            h.update(b"idnode-raft-peer-credential-v1\0");
            h.update(SECRET.as_bytes());
            h.finalize().iter().map(|b| format!("{b:02x}")).collect::<String>()
        };
        let old = http.post(&url).header("x-idnode-cluster-auth", bearer).body(vec![0u8; 4]).send().await.unwrap();
        assert_eq!(old.status(), 401, "{path} with the old static credential");
    }
    let vote = format!("http://{}/raft/vote", leader.seat.addr);
    let (name, value) = idnode_raft::sign_request(SECRET, leader_id, "POST", "/raft/vote", &[0xffu8; 4]);
    let ok = http.post(&vote).header(name, value.clone()).body(vec![0xffu8; 4]);
    assert_eq!(ok.send().await.unwrap().status(), 400, "credential accepted, garbage body refused");
    // The same signed request again: a replay.
    let again = http.post(&vote).header(name, value).body(vec![0xffu8; 4]).send().await.unwrap();
    assert_eq!(again.status(), 401, "a replayed request");
    assert_eq!(again.text().await.unwrap(), "request replayed");
    // Signed for another body, or another path.
    let (name, value) = idnode_raft::sign_request(SECRET, leader_id, "POST", "/raft/vote", &[0xffu8; 4]);
    let tampered = http.post(&vote).header(name, value).body(vec![0xfeu8; 4]).send().await.unwrap();
    assert_eq!(tampered.status(), 401, "a tampered body");
    let (name, value) = idnode_raft::sign_request(SECRET, leader_id, "POST", "/raft/append", &[0xffu8; 4]);
    let moved = http.post(&vote).header(name, value).body(vec![0xffu8; 4]).send().await.unwrap();
    assert_eq!(moved.status(), 401, "a request signed for another path");
    // Signed for another member: a request captured on its way to a follower is no good here.
    let other_member = nodes.iter().map(|n| n.seat.id).find(|id| *id != leader_id).unwrap();
    let (name, value) = idnode_raft::sign_request(SECRET, other_member, "POST", "/raft/vote", &[0xffu8; 4]);
    let misdirected = http.post(&vote).header(name, value).body(vec![0xffu8; 4]).send().await.unwrap();
    assert_eq!(misdirected.status(), 401, "a request signed for another member");
    // The open route a tool learns the id from.
    let id_url = format!("http://{}{}", leader.seat.addr, idnode_raft::PATH_MEMBER_ID);
    assert_eq!(http.get(&id_url).send().await.unwrap().text().await.unwrap(), leader_id.to_string());

    // Status and readiness.
    for n in &nodes {
        let st = n.node.status();
        assert_eq!(st.voters.len(), 3);
        assert_eq!(st.leader_id, Some(leader_id));
        let ready = n.node.readiness();
        assert!(ready.ok, "node {} not ready: {:?}", n.seat.id, ready.reasons);
    }
    let last_written = leader.node.status().last_log_index.unwrap();

    // (d) Every node restarts from its data dir with all acknowledged writes.
    let mut seats = Vec::new();
    for n in nodes {
        seats.push(n.stop().await);
    }
    let mut nodes = Vec::new();
    for seat in seats {
        nodes.push(start(Some(seat.clone()), seat.id, root.path(), 5000).await);
    }
    let m = members(&nodes.iter().collect::<Vec<_>>());
    for n in &nodes {
        // Must be ignored on an initialized data dir.
        n.node.initialize(m.clone()).await.unwrap();
        assert!(n.node.applied_index() >= idx, "applied position reloaded");
    }
    let leader_id = wait_leader(&nodes).await;
    for n in &nodes {
        n.node.linearizable_barrier().await.unwrap();
        assert!(n.node.applied_index() >= last_written);
        assert_eq!(n.get("alpha").as_deref(), Some(&b"2"[..]), "node {}", n.seat.id);
        assert_eq!(n.get("ctr").map(|v| count(&v)), Some(2), "node {}", n.seat.id);
        assert_eq!(n.app.applies.load(Ordering::SeqCst), 0, "nothing re-applied after restart");
    }
    let follower = a_follower(&nodes, leader_id);
    let (_, reply) = follower.node.propose(put("alpha", "3")).await.unwrap();
    assert_eq!(prev(&reply).as_deref(), Some(&b"2"[..]));
    // The dedup table survived the restart too.
    let (_, again) = follower.node.propose_with_id(rid, incr("ctr")).await.unwrap();
    assert_eq!(count(&again), 1);
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_and_snapshot_catch_up() {
    let root = tempfile::tempdir().unwrap();
    let mut nodes = three_nodes(root.path(), 50).await;
    let old_leader_id = wait_leader(&nodes).await;
    let (first, _) = a_follower(&nodes, old_leader_id).node.propose(put("before", "x")).await.unwrap();
    for n in &nodes {
        wait_applied(n, first).await;
    }

    // (b) The leader goes down; the others elect a new one, which takes writes, also through
    // the surviving follower.
    let pos = nodes.iter().position(|n| n.seat.id == old_leader_id).unwrap();
    let old = nodes.remove(pos);
    let old_last_log = old.node.status().last_log_index.unwrap();
    let old_seat = old.stop().await;
    let new_leader_id = wait_leader(&nodes).await;
    assert_ne!(new_leader_id, old_leader_id);
    let survivor = a_follower(&nodes, new_leader_id);
    let (i, _) = survivor.node.propose(put("after", "y")).await.unwrap();
    assert!(i > old_last_log);
    let (i, _) = by_id(&nodes, new_leader_id).node.propose(put("after2", "z")).await.unwrap();
    assert!(i > old_last_log);
    survivor.node.linearizable_barrier().await.unwrap();
    assert!(survivor.node.applied_index() >= i);
    assert_eq!(survivor.get("after2").as_deref(), Some(&b"z"[..]));

    // (c) Many writes (more than the snapshot interval) while the old leader is down.
    let mut last = 0;
    for chunk in 0..6 {
        let props = (0..25).map(|j| {
            let k = chunk * 25 + j;
            let via = &nodes[k % 2];
            via.node.propose(put(&format!("k{k}"), &format!("v{k}")))
        });
        for r in join_all(props).await {
            last = last.max(r.unwrap().0);
        }
    }
    // The leader has compacted away the entries the old leader is missing.
    wait_purged_past(by_id(&nodes, new_leader_id), old_last_log).await;

    let back = start(Some(old_seat), old_leader_id, root.path(), 50).await;
    wait_applied(&back, last).await;
    assert!(back.app.snapshots_installed.load(Ordering::SeqCst) >= 1, "caught up by snapshot install");
    let snap = back.node.status().snapshot_index.unwrap();
    assert!(snap > old_last_log, "snapshot {snap} covers entries missed after {old_last_log}");
    for k in 0..150 {
        assert_eq!(back.get(&format!("k{k}")), Some(format!("v{k}").into_bytes()), "k{k}");
    }
    assert_eq!(back.get("before").as_deref(), Some(&b"x"[..]));
    assert_eq!(back.get("after2").as_deref(), Some(&b"z"[..]));

    // It rejoins as a follower and serves writes.
    nodes.push(back);
    let leader_id = wait_leader(&nodes).await;
    let back = by_id(&nodes, old_leader_id);
    assert_ne!(leader_id, old_leader_id);
    let (i, _) = back.node.propose(put("rejoined", "1")).await.unwrap();
    assert!(back.node.applied_index() >= i);
    assert!(back.node.readiness().ok, "{:?}", back.node.readiness().reasons);
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_node_without_secret_and_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Arc::new(Engine::open(dir.path(), &all_cfs(), Arc::new(DataKeys::ephemeral())).unwrap());
    let addr = "127.0.0.1:9".parse().unwrap();
    let mut opts = options(1, addr, 5000);
    opts.cluster_secret = None;
    opts.forward_timeout = Duration::from_millis(300);
    let node = RaftNode::start(opts, engine, Arc::new(KvApp::default())).await.unwrap();

    // Never silently degrade: no leader, no barrier.
    assert_eq!(node.linearizable_barrier().await, Err(ProposeError::NoLeader));
    let ready = node.readiness();
    assert!(!ready.ok && !ready.fatal, "{ready:?}");

    node.initialize(BTreeMap::from([(1, addr.to_string())])).await.unwrap();
    node.raft().wait(Some(WAIT)).state(ServerState::Leader, "single node leads").await.unwrap();
    let (i, _) = node.propose(put("a", "b")).await.unwrap();
    assert!(node.applied_index() >= i);
    node.linearizable_barrier().await.unwrap();
    assert!(node.readiness().ok, "{:?}", node.readiness().reasons);
    node.add_learner(1, addr.to_string()).await.ok();
    assert!(node.remove(42).await.is_ok(), "removing a non-member is a no-op");

    let mut registry = Registry::default();
    node.register_metrics(&mut registry);
    let mut text = String::new();
    encode(&mut text, &registry).unwrap();
    for series in [
        "idnode_raft_is_leader 1",
        "idnode_raft_leader_id 1",
        "idnode_raft_voters 1",
        "idnode_raft_proposals_total 1",
        "idnode_raft_apply_lag ",
        "idnode_raft_quarantined_partitions 0",
        "idnode_raft_apply_seconds_count",
        "idnode_keys_epoch_current 1",
        "idnode_keys_sealed_total",
        "idnode_storage_disk_usage_bytes",
    ] {
        assert!(text.contains(series), "missing {series} in\n{text}");
    }
    node.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistency_check_names_the_member_that_differs() {
    names_the_member_that_differs(KvApp::default().command_version).await;
}

/// The same with running digests (the cluster version that compares them): the check costs
/// no walk, and judges exactly as the walk did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistency_check_with_running_digests_names_the_member_that_differs() {
    names_the_member_that_differs(idnode_raft::RUNNING_DIGEST_VERSION).await;
}

async fn names_the_member_that_differs(version: u32) {
    let root = tempfile::tempdir().unwrap();
    let mut nodes = three_nodes_versioned(root.path(), 40, version).await;
    let leader_id = wait_leader(&nodes).await;
    let deadline = Instant::now() + WAIT;
    while nodes.iter().any(|n| n.node.cluster_version() != version) {
        assert!(Instant::now() < deadline, "the cluster version did not reach {version}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A follower misses enough to need a snapshot; once back, every digest agrees.
    let pos = nodes.iter().position(|n| n.seat.id != leader_id).unwrap();
    let away = nodes.remove(pos);
    let away_id = away.seat.id;
    let away_applied = away.node.applied_index();
    let seat = away.stop().await;
    for k in 0..120 {
        nodes[k % 2].node.propose(put(&format!("k{k}"), "v")).await.unwrap();
    }
    wait_purged_past(by_id(&nodes, leader_id), away_applied).await;
    nodes.push(start_versioned(Some(seat), away_id, root.path(), 40, version).await);
    // Caught up first: a checkpoint appended while the snapshot was still on its way would be
    // covered by the install, and that member would rightly answer "no digest" for it.
    let caught_up = by_id(&nodes, leader_id).node.applied_index();
    wait_applied(by_id(&nodes, away_id), caught_up).await;
    assert!(by_id(&nodes, away_id).app.snapshots_installed.load(Ordering::SeqCst) >= 1);
    let report = by_id(&nodes, away_id).node.check_consistency(WAIT).await.unwrap();
    assert!(report.consistent(), "{report:?}");
    assert_eq!(report.members.iter().filter(|m| m.digest == report.reference).count(), 3);

    // Corrupt one follower's state behind raft's back (a value sealed properly, so only the
    // digest can tell): the next check names it, quarantines the family that differs there,
    // and it alone turns unready and says so in its metrics.
    let victim = a_follower(&nodes, leader_id);
    let victim_id = victim.seat.id;
    let original = victim.get("k7").unwrap();
    let mut b = victim.node.engine().batch();
    b.put(crate::app::KV, b"k7".to_vec(), b"tampered");
    victim.node.engine().write(b, true).unwrap();
    let report = by_id(&nodes, leader_id).node.check_consistency(WAIT).await.unwrap();
    assert_eq!(report.mismatched, vec![victim_id], "{report:?}");
    assert!(!report.consistent());
    let victim = by_id(&nodes, victim_id);
    assert_eq!(victim.node.engine().quarantined(), [crate::app::KV], "only the family that differs");
    let err = victim.node.engine().read().get(crate::app::KV, b"k7").unwrap_err();
    assert!(matches!(err, idnode_raft::storage::StorageError::Quarantined(ref cf) if cf == crate::app::KV), "{err}");
    let ready = victim.node.readiness();
    assert!(!ready.ok && ready.reasons.iter().any(|r| r.contains("differs")), "{ready:?}");
    assert!(ready.reasons.iter().any(|r| r.contains("quarantined column families: kv")), "{ready:?}");
    let mut registry = Registry::default();
    victim.node.register_metrics(&mut registry);
    let mut text = String::new();
    encode(&mut text, &registry).unwrap();
    assert!(text.contains("idnode_raft_consistency_mismatch 1"), "{text}");
    assert!(text.contains("idnode_raft_quarantined_partitions 1"), "{text}");
    assert!(text.contains("idnode_raft_snapshot_installs_total "), "{text}");
    drop(registry);
    for n in nodes.iter().filter(|n| n.seat.id != victim_id) {
        assert!(n.node.readiness().ok, "node {} {:?}", n.seat.id, n.node.readiness());
        assert!(n.node.engine().quarantined().is_empty(), "node {}", n.seat.id);
        assert_eq!(n.get("k7"), Some(original.clone()), "node {} still serves", n.seat.id);
    }

    // Only a rebuild lifts a quarantine: even repaired behind raft's back, the victim does not
    // match at a later check (its digest cannot read the quarantined family), stays unready,
    // and the others stay ready.
    let mut b = victim.node.engine().batch();
    b.put(crate::app::KV, b"k7".to_vec(), &original);
    victim.node.engine().write(b, true).unwrap();
    let report = by_id(&nodes, leader_id).node.check_consistency(WAIT).await.unwrap();
    assert!(!report.consistent(), "{report:?}");
    let row = report.members.iter().find(|m| m.id == victim_id).unwrap();
    assert_ne!(row.status, "match", "{report:?}");
    assert_eq!(report.members.iter().filter(|m| m.status == "match").count(), 2, "{report:?}");
    let victim = by_id(&nodes, victim_id);
    assert!(!victim.node.readiness().ok);
    assert_eq!(victim.node.engine().quarantined(), [crate::app::KV]);
    for n in nodes.iter().filter(|n| n.seat.id != victim_id) {
        assert!(n.node.readiness().ok, "node {} {:?}", n.seat.id, n.node.readiness());
    }
    for n in nodes {
        n.stop().await;
    }
}

/// Issue 50, finding 3: with one of three members down, a leader whose state diverged and the
/// one healthy follower tie 1-1. Neither holds a majority of the voters, so no one is
/// quarantined (the old rule let the leader's digest break the tie and quarantined the healthy
/// follower); both raise the mismatch alarm instead, naming the family that differs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tie_with_one_member_down_quarantines_no_one() {
    let root = tempfile::tempdir().unwrap();
    let mut nodes = three_nodes(root.path(), 5000).await;
    let leader_id = wait_leader(&nodes).await;
    let (i, _) = by_id(&nodes, leader_id).node.propose(put("k1", "v1")).await.unwrap();
    for n in &nodes {
        wait_applied(n, i).await;
    }
    let pos = nodes.iter().position(|n| n.seat.id != leader_id).unwrap();
    let down_id = nodes[pos].seat.id;
    nodes.remove(pos).stop().await;
    let follower_id = a_follower(&nodes, leader_id).seat.id;

    // The leader's state diverges behind raft's back in one family.
    let leader = by_id(&nodes, leader_id);
    let mut b = leader.node.engine().batch();
    b.put(crate::app::KV, b"k1".to_vec(), b"tampered");
    leader.node.engine().write(b, true).unwrap();

    let report = leader.node.check_consistency(WAIT).await.unwrap();
    assert!(report.mismatched.is_empty(), "no one is judged against on a tie: {report:?}");
    assert_eq!(report.reference, None, "{report:?}");
    assert!(report.tie, "the report says tie: {report:?}");
    assert_eq!(report.disputed, [crate::app::KV], "{report:?}");
    assert!(!report.consistent());
    for m in &report.members {
        let expected = if m.id == down_id { "unavailable" } else { "undecided" };
        assert_eq!(m.status, expected, "member {}: {report:?}", m.id);
    }
    for n in &nodes {
        assert!(n.node.engine().quarantined().is_empty(), "node {} quarantined on a tie", n.seat.id);
        let ready = n.node.readiness();
        assert!(!ready.ok, "node {} ready despite the tie", n.seat.id);
        assert!(
            ready.reasons.iter().any(|r| r.contains("(a tie)") && r.contains("families that differ: kv")),
            "node {}: {ready:?}",
            n.seat.id
        );
        assert!(n.node.divergence().is_none(), "node {} told it differs", n.seat.id);
        let mut registry = Registry::default();
        n.node.register_metrics(&mut registry);
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        assert!(text.contains("idnode_raft_consistency_mismatch 1"), "node {}: {text}", n.seat.id);
        assert!(text.contains("idnode_raft_consistency_tie 1"), "node {}: {text}", n.seat.id);
        assert!(text.contains("idnode_raft_quarantined_partitions 0"), "node {}: {text}", n.seat.id);
    }
    // The same through the follower: it runs on the leader, with the same outcome.
    let report = by_id(&nodes, follower_id).node.check_consistency(WAIT).await.unwrap();
    assert!(report.tie && report.mismatched.is_empty(), "{report:?}");
    assert!(by_id(&nodes, follower_id).node.engine().quarantined().is_empty());
    for n in nodes {
        n.stop().await;
    }
}
