//! A member never shows less than another member already showed: the campaign's one
//! non-linearizable key (docs/reliability.md, "A password change that never returned"), made
//! on purpose. The leader's packets to follower F are dropped, so F still counts as in contact
//! (its last word from the leader is younger than the lease) but hears of no new commit. A
//! revocation is sent to the leader and its answer not awaited (it waits for F, which does not
//! confirm); once the other follower refuses the token, F must refuse it too or answer 503.
//! Before followers took a read index per check, F answered 200 from what it had heard.

use std::time::Duration;

use reqwest::StatusCode;
use std::time::Instant;

use super::net::Net;
use crate::support::{Cluster, Http};

const ROUNDS: usize = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_never_shows_less_than_another_member_showed() {
    if let Some(why) = Net::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let net = Net::build(3);
    let mut c = Cluster::prepare_on(&net.hosts(), &[]);
    for i in 0..3 {
        c.spawn_node(i);
    }
    let deadline = Instant::now() + crate::support::READY_TIMEOUT;
    for i in 0..3 {
        c.wait_ready(i, deadline).await;
    }
    let http = Http::new(Duration::from_secs(5));
    let pw = c.admin_password.clone();
    for round in 0..ROUNDS {
        let leader = c.wait_leader(Duration::from_secs(30)).await;
        let (f, other) = ((leader + 1 + round % 2) % 3, (leader + 2 - round % 2) % 3);
        let (auth, _) = c.issue_token(leader, "admin", &pw, "admin", Duration::from_secs(30)).await;
        let (subject, _) = c.issue_token(leader, "admin", &pw, "admin", Duration::from_secs(30)).await;
        // After a heal a member may answer 503 for a moment (the cut-off follower's campaign can
        // cost the leader its term).
        for m in [f, other] {
            let until = Instant::now() + Duration::from_secs(10);
            loop {
                let r = http.validate_token(&c.api(m), &auth, &subject).await.map(|r| r.status);
                if matches!(r, Ok(StatusCode::OK)) {
                    break;
                }
                assert!(Instant::now() < until, "round {round}: member {m} did not validate a new token: {r:?}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }

        net.cut(leader, f);
        let revoking = {
            let (http, api, auth, subject) = (http.clone(), c.api(leader), auth.clone(), subject.clone());
            tokio::spawn(async move { http.revoke_token(&api, &auth, &subject).await })
        };
        let other_api = c.api(other);
        let seen_at = Instant::now() + Duration::from_secs(2);
        loop {
            let r = http.validate_token(&other_api, &auth, &subject).await;
            if matches!(r, Ok(ref r) if r.status == StatusCode::NOT_FOUND) {
                break;
            }
            assert!(Instant::now() < seen_at, "round {round}: member {other} never showed the revocation: {r:?}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Well inside the lease: F still heard the leader less than the minimum election
        // timeout ago, so only a read index keeps it from answering from the past.
        let r = http.validate_token(&c.api(f), &auth, &subject).await.map(|r| r.status);
        assert!(
            matches!(r, Ok(StatusCode::NOT_FOUND | StatusCode::SERVICE_UNAVAILABLE)),
            "round {round}: member {other} refused the revoked token, then follower {f} answered {r:?}"
        );

        net.heal();
        let revoked = revoking.await.expect("the revocation task").map(|r| r.status);
        assert!(matches!(revoked, Ok(StatusCode::NO_CONTENT)), "round {round}: the revocation answered {revoked:?}");
        let caught_up = Instant::now() + Duration::from_secs(10);
        loop {
            let r = http.validate_token(&c.api(f), &auth, &subject).await.map(|r| r.status);
            match r {
                Ok(StatusCode::NOT_FOUND) => break,
                Ok(StatusCode::OK) => panic!("round {round}: follower {f} validated a revoked token after the heal"),
                _ => assert!(Instant::now() < caught_up, "round {round}: follower {f} did not catch up: {r:?}"),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
