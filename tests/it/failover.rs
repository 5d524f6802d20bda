//! A write that reaches a follower while the leader is frozen (SIGSTOP: connections accepted,
//! nothing answered) is forwarded to the new leader as soon as there is one, not after the
//! forward timeout (5 s) spent waiting on the frozen leader.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use crate::support::Cluster;

/// Above an election (lease 1 s + timeout 0.5-1 s + the vote) with room for a busy host,
/// below the 5 s forward timeout a write used to wait out.
const WITHIN: Duration = Duration::from_millis(4500);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_through_a_follower_during_an_election_goes_to_the_new_leader_at_once() {
    let mut c = Cluster::start(3).await;
    let mut took = Vec::new();
    for round in 0..2 {
        let leader = c.wait_leader(Duration::from_secs(30)).await;
        let follower = (leader + 1) % 3;
        let token = c.admin_token(follower).await;
        let url = format!("{}/v3/projects", c.api(follower));
        let body = |n: &str| json!({"project": {"name": format!("fo-{round}-{n}"), "domain_id": "default"}});
        let r = c.http.post(&url, Some(&token), &body("before")).await.unwrap();
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        c.pause(leader);
        let started = Instant::now();
        let r = c.http.post(&url, Some(&token), &body("during")).await;
        let elapsed = started.elapsed();
        c.resume(leader);
        let r = r.expect("an answer");
        assert_eq!(r.status, StatusCode::CREATED, "round {round}: {}", r.text);
        took.push(elapsed);
        c.wait_applied_converged(&[0, 1, 2], Duration::from_secs(30)).await;
    }
    eprintln!("writes during an election acknowledged after {took:?}");
    assert!(took.iter().all(|t| *t < WITHIN), "a write waited for the frozen leader: {took:?}");
}

/// A follower stopped for longer than an election timeout and then resumed has heard nothing
/// for that long by its own clock, but the leader never went away. It must not campaign on that
/// silence: a new term there made the healthy leader step down at its next append, and the
/// cluster wrote nothing until the next election (up to 3 s after five-member SIGSTOP heals,
/// docs/reliability.md).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_resumed_after_a_pause_does_not_unseat_the_leader() {
    let mut c = Cluster::start(3).await;
    let term = |text: Option<String>| {
        text.and_then(|t| crate::support::metric_value(&t, "idnode_raft_current_term")).map(|v| v as u64)
    };
    let mut unseated = Vec::new();
    for round in 0..3 {
        let leader = c.wait_leader(Duration::from_secs(30)).await;
        c.wait_applied_converged(&[0, 1, 2], Duration::from_secs(30)).await;
        let before = term(c.metrics_text(leader).await).expect("the leader's term");
        let follower = (leader + 1 + round % 2) % 3;
        c.pause(follower);
        tokio::time::sleep(Duration::from_millis(2500)).await;
        c.resume(follower);
        tokio::time::sleep(Duration::from_millis(2000)).await;
        let after = term(c.metrics_text(leader).await);
        if after != Some(before) || c.wait_leader(Duration::from_secs(30)).await != leader {
            unseated.push((round, before, after));
        }
    }
    assert!(unseated.is_empty(), "a resumed follower cost the leader its term: {unseated:?}");
}
