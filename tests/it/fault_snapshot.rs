//! The bug report's fault run, scaled for CI: three nodes that snapshot often, workers that
//! stream project creates through every node, and a fault driver that SIGKILLs and restarts,
//! or SIGSTOPs and SIGCONTs, one node at a time (leader or follower, chosen by a seeded RNG),
//! keeping each victim away until the live nodes have purged their log past it, so that it
//! comes back by installing a snapshot. At the end every node is restarted (as in the report)
//! and the replicas are compared: every acknowledged create on every node, equal listings,
//! admin logins by name and by id, a duplicate `admin` refused and listed once, equal
//! `idnode cluster check` digests and no consistency-mismatch gauge, during or after the run.
//!
//! Knobs (environment of `cargo test`; the defaults suit CI: 20-45 s on two cores):
//!
//! | variable | default | meaning |
//! |---|---|---|
//! | `IDNODE_FAULT_CREATES` | 3000 | acknowledged creates to reach |
//! | `IDNODE_FAULT_ROUNDS` | 6 | faults to inject |
//! | `IDNODE_FAULT_SECONDS` | 150 | hard time limit of the create stream and the faults |
//! | `IDNODE_FAULT_SNAPSHOT_LOGS` | 200 | `IDNODE_RAFT_SNAPSHOT_LOGS_SINCE_LAST` of the nodes |
//! | `IDNODE_FAULT_CATCHUP_ENTRIES` | 20 | `IDNODE_RAFT_SNAPSHOT_CATCHUP_ENTRIES` of the nodes |
//! | `IDNODE_FAULT_CHECK_INTERVAL` | 5 | `IDNODE_RAFT_CONSISTENCY_CHECK_INTERVAL` (s, 0 = off) |
//! | `IDNODE_FAULT_WORKERS` | 4 | concurrent create streams |
//! | `IDNODE_FAULT_SEED` | random | RNG seed, printed by the test; set it to replay its fault choices |
//!
//! The bug report's run was about `IDNODE_FAULT_CREATES=60000 IDNODE_FAULT_ROUNDS=30
//! IDNODE_FAULT_SNAPSHOT_LOGS=10000 IDNODE_FAULT_CATCHUP_ENTRIES=1000 IDNODE_FAULT_SECONDS=1800`
//! (run it with `cargo test --test it fault_snapshot -- --nocapture`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use crate::support::agreement::{
    assert_admin_unique_everywhere, assert_check_consistent, assert_listings_equal, assert_logins_everywhere,
    assert_no_mismatch_metric,
};
use crate::support::{json_u64, password_auth_body, random_bytes, random_hex, Cluster, Http, POLL};

const WAIT: Duration = Duration::from_secs(60);
/// Longest a victim stays away waiting for the others to purge past it.
const AWAY_MAX: Duration = Duration::from_secs(20);
/// Poll interval of the loops that run `idnode cluster status` (a process per call).
const STATUS_POLL: Duration = Duration::from_millis(200);
/// No index: nobody is away.
const NONE: usize = usize::MAX;

/// Size of the run, from the environment (see the module documentation).
#[derive(Debug)]
struct FaultPlan {
    creates: usize,
    rounds: usize,
    seconds: u64,
    snapshot_logs: u64,
    catchup_entries: u64,
    check_interval: u64,
    workers: usize,
    seed: u64,
}

impl FaultPlan {
    fn from_env() -> FaultPlan {
        let get = |k: &str, default: u64| match std::env::var(k) {
            Ok(v) => v.trim().parse::<u64>().unwrap_or_else(|e| panic!("{k}={v:?}: {e}")),
            Err(_) => default,
        };
        let random_seed = u64::from_le_bytes(random_bytes(8).try_into().expect("8 bytes"));
        FaultPlan {
            creates: get("IDNODE_FAULT_CREATES", 3000) as usize,
            rounds: get("IDNODE_FAULT_ROUNDS", 6) as usize,
            seconds: get("IDNODE_FAULT_SECONDS", 150),
            snapshot_logs: get("IDNODE_FAULT_SNAPSHOT_LOGS", 200),
            catchup_entries: get("IDNODE_FAULT_CATCHUP_ENTRIES", 20),
            check_interval: get("IDNODE_FAULT_CHECK_INTERVAL", 5),
            workers: get("IDNODE_FAULT_WORKERS", 4).max(1) as usize,
            seed: get("IDNODE_FAULT_SEED", random_seed),
        }
    }
}

/// xorshift64*: enough randomness to pick faults, replayable from the printed seed.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        // xorshift must not start at 0; mix the seed so that nearby seeds differ at once
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n as u64) as usize
    }
}

/// State shared by the create workers and the fault driver.
struct Stream {
    /// Ids of the acknowledged (2xx) creates.
    acked: Mutex<Vec<String>>,
    count: AtomicUsize,
    stop: AtomicBool,
    /// Index of the node that is down or paused ([`NONE`]: none); workers skip it.
    away: AtomicUsize,
}

/// Waits until `n` more creates were acknowledged or `until` passed.
async fn wait_acks(s: &Stream, n: usize, until: Instant) {
    let target = s.count.load(Ordering::SeqCst) + n;
    while s.count.load(Ordering::SeqCst) < target && Instant::now() < until {
        tokio::time::sleep(POLL).await;
    }
}

/// One create worker: project creates through every node in turn but the one away, until
/// `stop`. A 401 (token expired in a long run) fetches a new token from the same node.
async fn create_worker(
    w: usize,
    stream: Arc<Stream>,
    apis: Vec<String>,
    mut token: String,
    admin_pw: String,
    run: String,
) {
    let http = Http::new(Duration::from_secs(5));
    let mut seq = 0usize;
    while !stream.stop.load(Ordering::SeqCst) {
        seq += 1;
        let node = (w + seq) % apis.len();
        if node == stream.away.load(Ordering::SeqCst) {
            continue;
        }
        let body = json!({"project": {"name": format!("f-{run}-{w}-{seq}"), "domain_id": "default"}});
        match http.post(&format!("{}/v3/projects", apis[node]), Some(&token), &body).await {
            Ok(r) if r.status.is_success() => {
                let id = r.json["project"]["id"].as_str().unwrap_or_else(|| panic!("no project id: {}", r.text));
                stream.acked.lock().expect("acks").push(id.to_string());
                stream.count.fetch_add(1, Ordering::SeqCst);
            }
            Ok(r) if r.status == StatusCode::UNAUTHORIZED => {
                let login = password_auth_body("admin", &admin_pw, "admin");
                if let Ok(r) = http.post(&format!("{}/v3/auth/tokens", apis[node]), None, &login).await {
                    if let Some(t) = r.header("X-Subject-Token") {
                        token = t;
                    }
                }
            }
            // node down, paused, electing, or restarting: back off a little and go on
            _ => tokio::time::sleep(POLL).await,
        }
    }
}

/// The leader's `idnode cluster status` field `key`, 0 when it cannot be read.
async fn leader_status_field(c: &Cluster, leader: usize, key: &str) -> u64 {
    c.try_status_cli(leader).await.map(|s| json_u64(&s, key)).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn faults_and_snapshot_installs_leave_identical_replicas() {
    let plan = FaultPlan::from_env();
    println!("fault run: seed {} (IDNODE_FAULT_SEED={} replays its fault choices); {plan:?}", plan.seed, plan.seed);
    let env_values =
        [plan.snapshot_logs.to_string(), plan.catchup_entries.to_string(), plan.check_interval.to_string()];
    let env = [
        ("IDNODE_RAFT_SNAPSHOT_LOGS_SINCE_LAST", env_values[0].as_str()),
        // The entry count alone: many snapshots in a short run, whatever their size.
        ("IDNODE_RAFT_SNAPSHOT_LOG_RATIO", "0"),
        ("IDNODE_RAFT_SNAPSHOT_CATCHUP_ENTRIES", env_values[1].as_str()),
        ("IDNODE_RAFT_CONSISTENCY_CHECK_INTERVAL", env_values[2].as_str()),
    ];
    let started = Instant::now();
    let mut c = Cluster::start_with_env(3, &env).await;
    let hard_stop = Instant::now() + Duration::from_secs(plan.seconds);
    c.wait_leader(WAIT).await;
    let token = c.admin_token(0).await;

    let stream = Arc::new(Stream {
        acked: Mutex::new(Vec::new()),
        count: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        away: AtomicUsize::new(NONE),
    });
    let apis: Vec<String> = (0..c.len()).map(|i| c.api(i)).collect();
    let run = random_hex(4);
    let workers: Vec<_> = (0..plan.workers)
        .map(|w| {
            let (pw, run) = (c.admin_password.clone(), run.clone());
            tokio::spawn(create_worker(w, stream.clone(), apis.clone(), token.clone(), pw, run))
        })
        .collect();

    let mut rng = Rng::new(plan.seed);
    let mut faults: Vec<String> = Vec::new();
    let mut forced = 0usize;
    let mut snapshots: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new();
    let mut mismatches: Vec<String> = Vec::new();
    let mut cut_short = false;
    for round in 0..plan.rounds {
        // The creates still to come, spread over the phases left: before and during each
        // remaining fault, and after the last one.
        let per_phase =
            plan.creates.saturating_sub(stream.count.load(Ordering::SeqCst)) / (2 * (plan.rounds - round) + 1);
        wait_acks(&stream, per_phase, hard_stop).await;
        if Instant::now() >= hard_stop {
            cut_short = true;
            break;
        }
        let leader = c.wait_leader(WAIT).await;
        let victim = if rng.below(2) == 0 { leader } else { (leader + 1 + rng.below(2)) % 3 };
        let kill = rng.below(2) == 0;
        // Everything the victim can hold in its log: what it reported just before the signal,
        // plus what the in-flight requests can add; for a follower, never more than the leader.
        let before = c.metric(victim, "idnode_raft_last_log_index").await.unwrap_or(0.0) as u64;
        stream.away.store(victim, Ordering::SeqCst);
        if kill {
            c.kill(victim);
        } else {
            c.pause(victim);
        }
        let mut held = before + plan.workers as u64 + 2;
        if victim != leader {
            held = held.min(leader_status_field(&c, leader, "last_log_index").await.max(before));
        }

        // Away until the live leader has purged past the victim's log (then it must come back
        // by a snapshot install), at least `per_phase` more creates, and at most AWAY_MAX.
        let away_until = (Instant::now() + AWAY_MAX).min(hard_stop);
        let acks_target = stream.count.load(Ordering::SeqCst) + per_phase;
        let mut purged = 0;
        while Instant::now() < away_until {
            let live_leader = c.wait_leader(WAIT).await;
            purged = leader_status_field(&c, live_leader, "purged_index").await;
            if purged > held && stream.count.load(Ordering::SeqCst) >= acks_target {
                break;
            }
            tokio::time::sleep(STATUS_POLL).await;
        }
        if purged > held {
            forced += 1;
        }
        if kill {
            c.restart(victim).await;
        } else {
            c.resume(victim);
        }
        stream.away.store(NONE, Ordering::SeqCst);
        let what = if kill { "kill" } else { "pause" };
        let role = if victim == leader { "leader" } else { "follower" };
        faults.push(format!("{what} {} ({role}, log <= {held}, purged {purged})", victim + 1));
        println!(
            "fault {}: {}, {} creates acked, {:.1?}",
            round + 1,
            faults[round],
            stream.count.load(Ordering::SeqCst),
            started.elapsed()
        );

        for i in 0..c.len() {
            if let Some(text) = c.metrics_text(i).await {
                let m = |name: &str| crate::support::metric_value(&text, name).unwrap_or(0.0);
                snapshots.entry(c.nodes[i].id).or_default().insert(m("idnode_raft_snapshot_index") as u64);
                if m("idnode_raft_consistency_mismatch") != 0.0 {
                    mismatches.push(format!("node {} after fault {}", c.nodes[i].id, round + 1));
                }
            }
        }
    }
    // Faults done (or out of time): the stream runs on to its target.
    while stream.count.load(Ordering::SeqCst) < plan.creates && Instant::now() < hard_stop {
        tokio::time::sleep(POLL).await;
    }
    cut_short |= stream.count.load(Ordering::SeqCst) < plan.creates;
    stream.stop.store(true, Ordering::SeqCst);
    for w in workers {
        // each request is bounded by the worker client's timeout
        tokio::time::timeout(WAIT, w).await.expect("a create worker did not stop").expect("create worker");
    }
    let acked: BTreeSet<String> = stream.acked.lock().expect("acks").iter().cloned().collect();
    assert_eq!(acked.len(), stream.count.load(Ordering::SeqCst), "acknowledged ids are distinct");

    // Bring everything back, let it settle, then restart every node, as in the report.
    c.heal().await;
    let all: Vec<usize> = (0..c.len()).collect();
    c.wait_applied_converged(&all, WAIT).await;
    c.restart_all(Duration::from_secs(20)).await;
    c.wait_leader(WAIT).await;
    c.wait_applied_converged(&all, WAIT).await;
    let token = c.admin_token(0).await;

    for i in 0..c.len() {
        let listed = c.list_ids(i, &token, "/v3/projects", "projects").await;
        let missing: Vec<&String> = acked.difference(&listed).take(5).collect();
        assert!(missing.is_empty(), "node {} lost acknowledged creates, e.g. {missing:?}", i + 1);
    }
    let sizes = assert_listings_equal(&c, &token, &[("/v3/projects", "projects"), ("/v3/users", "users")]).await;
    let admin_id = assert_logins_everywhere(&c, &[]).await;
    assert_admin_unique_everywhere(&c, &token, &admin_id, WAIT).await;
    let report = assert_check_consistent(&c, 0).await;
    assert_no_mismatch_metric(&c).await;

    let seen: BTreeMap<u64, Vec<u64>> =
        snapshots.iter().map(|(id, s)| (*id, s.iter().copied().filter(|x| *x > 0).collect())).collect();
    println!(
        "fault run passed: seed {}, {} creates acknowledged, {} projects on every node, {}/{} faults done ({} came back by snapshot) {:?}, snapshot indexes seen {:?}, check at index {}, {:.1?}{}",
        plan.seed,
        acked.len(),
        sizes[0],
        faults.len(),
        plan.rounds,
        forced,
        faults,
        seen,
        report["index"],
        started.elapsed(),
        if cut_short { " (hard time limit reached)" } else { "" }
    );
    assert!(mismatches.is_empty(), "consistency checks flagged a diverged node during the run: {mismatches:?}");
    if !cut_short && plan.rounds > 0 {
        assert!(forced > 0, "no victim was away long enough to need a snapshot install: {faults:?}");
    }
}
