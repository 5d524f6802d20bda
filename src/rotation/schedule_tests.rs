//! The token key ring's schedule (`schedule`) on an in-process node: the period is measured
//! from the replicated ring, so a second look in the same period (a restarted or new leader's)
//! rotates nothing; and on a short real schedule the ring rotates while earlier tokens still
//! validate. Every wait polls with a deadline.

use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use idnode_keys::TokenKeyRing;

use super::schedule::{due_in, pass, spawn};
use crate::clock::now_secs;
use crate::state::read::TokenReads;
use crate::testkit::TestNode;

fn ring(t: &TestNode) -> TokenKeyRing {
    t.node.engine.read().token_keys().unwrap().unwrap()
}

/// Each key's id, state and creation time (the secrets left out).
fn shape(ring: &TokenKeyRing) -> Vec<(u32, String, i64)> {
    ring.keys.iter().map(|k| (k.id, format!("{:?}", k.state), k.created_at)).collect()
}

fn newest(ring: &TokenKeyRing) -> i64 {
    ring.keys.iter().map(|k| k.created_at).max().unwrap()
}

#[test]
fn a_ring_is_due_once_its_newest_key_is_as_old_as_the_schedule() {
    let day = Duration::from_secs(86_400);
    assert_eq!(due_in(1_000, 1_000, day), 86_400);
    assert_eq!(due_in(1_000, 1_000 + 86_399, day), 1);
    assert_eq!(due_in(1_000, 1_000 + 86_400, day), 0);
    assert!(due_in(1_000, 1_000 + 90_000, day) < 0);
    assert!(due_in(i64::MAX, 0, day) > 0, "no overflow");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_rotates_once_per_period_measured_from_the_replicated_ring() {
    let t = TestNode::start_with(&[
        ("token", "rotate_every", "1h"),
        ("token", "expiration", "3600"),
        ("token", "allow_expired_window", "0"),
        ("token", "max_active_keys", "4"),
    ])
    .await;
    let every = Duration::from_secs(3600);
    let core = &t.node.core;
    let before = ring(&t);
    assert!(!pass(core, every, newest(&before) + 3599).await.unwrap(), "a second early");
    assert_eq!(shape(&ring(&t)), shape(&before));
    assert!(pass(core, every, newest(&before) + 3600).await.unwrap(), "due");
    let after = ring(&t);
    assert_eq!(after.primary().map(|k| k.id), Some(2), "the staged key signs");
    // The new staged key is stamped with the clock: a look now, as a leader elected right
    // after would make, finds the period just begun.
    assert!(!pass(core, every, now_secs()).await.unwrap());
    assert_eq!(shape(&ring(&t)), shape(&after));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_two_second_schedule_the_ring_rotates_and_earlier_tokens_still_validate() {
    // ceil((60 + 0) / 2) + 2 = 32 keys keep every live token verifiable.
    let t = TestNode::start_with(&[
        ("token", "rotate_every", "2s"),
        ("token", "expiration", "60"),
        ("token", "allow_expired_window", "0"),
        ("token", "max_active_keys", "32"),
    ])
    .await;
    let first = ring(&t);
    let first_primary = first.primary().unwrap().id;
    let task = spawn(&t.node.core).expect("the schedule runs when rotate_every is set");
    let deadline = Instant::now() + Duration::from_secs(60);
    while ring(&t).primary().unwrap().id < first_primary + 2 {
        assert!(Instant::now() < deadline, "no two scheduled rotations within 60 s: {:?}", shape(&ring(&t)));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    task.abort();
    let now = ring(&t);
    // Every rotation waited out the period from the one before (however slow the host).
    let mut made: Vec<(u32, i64)> = now.keys.iter().map(|k| (k.id, k.created_at)).collect();
    made.sort_unstable();
    for pair in made.windows(2).filter(|w| w[0].0 > first_primary) {
        assert!(pair[1].1 - pair[0].1 >= 2, "rotated early: {made:?}");
    }
    // The admin token was sealed by the first primary, now a secondary: it still validates.
    assert!(now.keys.iter().any(|k| k.id == first_primary));
    let r = t.call(Method::GET, &format!("/v3/auth/tokens#{}", t.admin), Some(&t.admin), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let fresh = t
        .token("admin", "secret", serde_json::json!({"project": {"name": "admin", "domain": {"id": "default"}}}))
        .await;
    assert_ne!(fresh, t.admin);
    let r = t.call(Method::GET, &format!("/v3/auth/tokens#{fresh}"), Some(&t.admin), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

#[test]
fn a_schedule_is_refused_at_startup_when_live_tokens_would_lose_their_key() {
    let mut s = crate::config::Settings::default();
    s.set("token", "rotate_every", "24h");
    let err = crate::config::Config::from_settings(&s).unwrap_err().to_string();
    assert!(err.contains("[token] max_active_keys = 3") && err.contains("at least 5"), "{err}");
    s.set("token", "max_active_keys", "5");
    assert!(crate::config::Config::from_settings(&s).is_ok());
}
