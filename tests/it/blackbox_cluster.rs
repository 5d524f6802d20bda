//! Black-box durability under leader failure: three real `idnode` processes, a stream of project
//! creates through all of them, SIGKILL of the leader in the middle of the stream, restart of the
//! killed node, and then every create that was acknowledged with a 2xx must be readable on every
//! node.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::{random_hex, Cluster, Http};
use reqwest::StatusCode;
use serde_json::json;

const WORKERS: usize = 6;
/// Kill the leader after this long, or after `KILL_AFTER_ACKS` acknowledged creates.
const KILL_AFTER: Duration = Duration::from_secs(2);
const KILL_AFTER_ACKS: usize = 130;
/// The stream stops after this long or this many acknowledged creates (and at least one
/// acknowledged create that was sent after the kill).
const STREAM_FOR: Duration = Duration::from_secs(6);
const STREAM_MAX_ACKS: usize = 400;
/// Hard stop of the stream whatever happened.
const STREAM_HARD_STOP: Duration = Duration::from_secs(40);

#[derive(Debug, Clone)]
struct Ack {
    id: String,
    name: String,
    node: usize,
    sent_at: Instant,
}

#[derive(Default)]
struct Shared {
    acks: Mutex<Vec<Ack>>,
    /// non-2xx answers and transport errors, by kind (for the failure report only)
    failures: Mutex<BTreeMap<String, usize>>,
    stop: AtomicBool,
    ack_count: AtomicUsize,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_creates_survive_leader_sigkill_on_every_node() {
    let mut cluster = Cluster::start(3).await;
    let leader = cluster.wait_leader(Duration::from_secs(30)).await;
    let token = cluster.admin_token(0).await;
    let apis: Vec<String> = (0..cluster.len()).map(|i| cluster.api(i)).collect();
    let run = random_hex(4);

    let shared = Arc::new(Shared::default());
    let http = Http::new(Duration::from_secs(5));
    let mut tasks = Vec::new();
    for w in 0..WORKERS {
        let shared = shared.clone();
        let http = http.clone();
        let apis = apis.clone();
        let token = token.clone();
        let run = run.clone();
        tasks.push(tokio::spawn(async move {
            let mut seq = 0usize;
            while !shared.stop.load(Ordering::SeqCst) {
                seq += 1;
                let node = (w + seq) % apis.len();
                let name = format!("bb-{run}-{w}-{seq}");
                let body = json!({"project": {"name": name, "domain_id": "default",
                                              "description": "blackbox stream"}});
                let sent_at = Instant::now();
                let url = format!("{}/v3/projects", apis[node]);
                let outcome = http.post(&url, Some(&token), &body).await;
                match outcome {
                    Ok(r) if r.status.is_success() => {
                        let id = r.json["project"]["id"]
                            .as_str()
                            .unwrap_or_else(|| panic!("2xx without project.id: {}", r.text))
                            .to_owned();
                        assert_eq!(
                            r.json["project"]["name"].as_str(),
                            Some(name.as_str()),
                            "created project echoes another name: {}",
                            r.text
                        );
                        shared.acks.lock().unwrap().push(Ack { id, name, node, sent_at });
                        shared.ack_count.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(r) => {
                        *shared
                            .failures
                            .lock()
                            .unwrap()
                            .entry(format!("node{} HTTP {}", node + 1, r.status.as_u16()))
                            .or_default() += 1;
                        // back off a little so a node without a leader is not hammered
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    Err(e) => {
                        let kind = if e.is_connect() {
                            "connect"
                        } else if e.is_timeout() {
                            "timeout"
                        } else {
                            "transport"
                        };
                        *shared.failures.lock().unwrap().entry(format!("node{} {kind}", node + 1)).or_default() += 1;
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
            }
        }));
    }

    // Drive the scenario: kill the leader in the middle of the stream, keep streaming.
    let started = Instant::now();
    let mut killed_at: Option<Instant> = None;
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let acked = shared.ack_count.load(Ordering::SeqCst);
        let elapsed = started.elapsed();
        match killed_at {
            None if elapsed >= KILL_AFTER || acked >= KILL_AFTER_ACKS => {
                cluster.kill(leader);
                killed_at = Some(Instant::now());
                eprintln!("SIGKILLed leader node {} after {elapsed:?}, {acked} acknowledged creates", leader + 1);
            }
            Some(k) => {
                let after_kill = shared.acks.lock().unwrap().iter().filter(|a| a.sent_at > k).count();
                let enough = elapsed >= STREAM_FOR || acked >= STREAM_MAX_ACKS;
                if (after_kill >= 1 && enough) || elapsed >= STREAM_HARD_STOP {
                    break;
                }
            }
            None => {}
        }
    }
    shared.stop.store(true, Ordering::SeqCst);
    for t in tasks {
        t.await.expect("stream task panicked");
    }
    let killed_at = killed_at.expect("leader was killed");
    let acks = shared.acks.lock().unwrap().clone();
    let failures = shared.failures.lock().unwrap().clone();
    let before = acks.iter().filter(|a| a.sent_at < killed_at).count();
    let after = acks.iter().filter(|a| a.sent_at > killed_at).count();
    let mut per_node = [0usize; 3];
    for a in &acks {
        per_node[a.node] += 1;
    }
    eprintln!(
        "stream: {} acknowledged creates in {:?} ({before} sent before the kill, {after} after; \
         per entry node {per_node:?}); failures: {failures:?}",
        acks.len(),
        started.elapsed()
    );
    assert!(before >= 1, "no create was acknowledged before the leader was killed");
    assert!(
        after >= 1,
        "the two surviving nodes acknowledged no create within {STREAM_HARD_STOP:?} after the \
         leader was killed; failures: {failures:?}"
    );
    let mut ids: Vec<&str> = acks.iter().map(|a| a.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), acks.len(), "two acknowledged creates returned the same id");

    // Bring the killed node back on its data dir.
    cluster.restart(leader).await;
    let new_leader = cluster.wait_leader(Duration::from_secs(30)).await;
    eprintln!("restarted node {}; leader is node {}", leader + 1, new_leader + 1);

    // Every acknowledged create must be on every node (bounded catch-up time).
    let deadline = Instant::now() + Duration::from_secs(60);
    let check = Http::new(Duration::from_secs(5));
    for node in 0..cluster.len() {
        let mut pending: Vec<&Ack> = acks.iter().collect();
        let mut last_status = BTreeMap::new();
        while !pending.is_empty() {
            let mut still = Vec::new();
            for a in pending {
                let url = format!("{}/v3/projects/{}", cluster.api(node), a.id);
                match check.get(&url, Some(&token)).await {
                    Ok(r) if r.status == StatusCode::OK => {
                        assert_eq!(
                            r.json["project"]["name"].as_str(),
                            Some(a.name.as_str()),
                            "node {}: project {} has the wrong name: {}",
                            node + 1,
                            a.id,
                            r.text
                        );
                    }
                    Ok(r) => {
                        last_status.insert(a.id.clone(), format!("{} {}", r.status, r.text));
                        still.push(a);
                    }
                    Err(e) => {
                        last_status.insert(a.id.clone(), format!("error: {e}"));
                        still.push(a);
                    }
                }
            }
            pending = still;
            if pending.is_empty() {
                break;
            }
            if Instant::now() >= deadline {
                let sample: Vec<String> = pending
                    .iter()
                    .take(10)
                    .map(|a| {
                        format!(
                            "{} ({}, entered via node {}, sent {:?} after start, {}): {}",
                            a.id,
                            a.name,
                            a.node + 1,
                            a.sent_at.saturating_duration_since(started),
                            if a.sent_at < killed_at { "before kill" } else { "after kill" },
                            last_status.get(&a.id).map(String::as_str).unwrap_or("?")
                        )
                    })
                    .collect();
                panic!(
                    "node {}: {} of {} acknowledged creates missing after catch-up; first: {:#?}",
                    node + 1,
                    pending.len(),
                    acks.len(),
                    sample
                );
            }
            tokio::time::sleep(crate::support::POLL).await;
        }
    }

    // And the replicas agree on how far they have applied.
    let applied = cluster.wait_applied_converged(&[0, 1, 2], Duration::from_secs(30)).await;
    eprintln!("all nodes applied index >= {applied}");
}
