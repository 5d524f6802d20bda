//! A node that was cut off never answers from the past. Rounds of SIGSTOP/SIGCONT, of the
//! leader and of a follower, on a 3-node cluster: while the victim is stopped a token it has
//! validated (and cached) is revoked through another node and a user is created; a validation
//! of that token is sent to the victim while it is still stopped (it waits in the socket and
//! runs the instant the process resumes, before any word from the leader), and more follow
//! once it runs. No answer may be 200 after the revocation returned 204; the victim may
//! catch up first or answer 503. At the end every acknowledged user exists on every node.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use tokio::time::Instant;

use crate::support::{Cluster, Http, Resp};

const ROUNDS: usize = 8;

/// Retries `f` until it answers with `ok` or `limit` passes; the last answer either way.
async fn until<F, Fut>(limit: Duration, ok: StatusCode, mut f: F) -> Option<Resp>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Resp, reqwest::Error>>,
{
    let deadline = Instant::now() + limit;
    let mut last = None;
    while Instant::now() < deadline {
        if let Ok(r) = f().await {
            if r.status == ok {
                return Some(r);
            }
            last = Some(r);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    last
}

fn accepted(r: &Result<Resp, reqwest::Error>) -> bool {
    matches!(r, Ok(r) if r.status == StatusCode::OK)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_was_cut_off_never_validates_a_revoked_token() {
    let mut cluster = Cluster::start(3).await;
    let http = Http::new(Duration::from_secs(20));
    let pw = cluster.admin_password.clone();
    let mut created: Vec<String> = Vec::new();
    let started = Instant::now();

    for round in 0..ROUNDS {
        let leader = cluster.wait_leader(Duration::from_secs(30)).await;
        let victim = if round % 2 == 0 { leader } else { (leader + 1 + round / 2 % 2) % 3 };
        let other = (0..3).find(|i| *i != victim).unwrap_or(0);
        let (auth, _) = cluster.issue_token(other, "admin", &pw, "admin", Duration::from_secs(30)).await;
        let (subject, _) = cluster.issue_token(other, "admin", &pw, "admin", Duration::from_secs(30)).await;
        // The victim validates (and caches) both before it is cut off.
        let victim_api = cluster.api(victim);
        let r =
            until(Duration::from_secs(20), StatusCode::OK, || http.validate_token(&victim_api, &auth, &subject)).await;
        assert_eq!(r.map(|r| r.status), Some(StatusCode::OK), "round {round}: victim did not validate a fresh token");

        cluster.pause(victim);
        let revoker = (0..3).filter(|i| *i != victim).nth(round % 2).unwrap_or(other);
        let revoker_api = cluster.api(revoker);
        let revoked =
            until(Duration::from_secs(30), StatusCode::NO_CONTENT, || http.revoke_token(&revoker_api, &auth, &subject))
                .await;
        // A revocation whose answer was lost (a 503 while leadership moved away from the paused
        // node) may still have been applied; a retry then finds the token revoked (404). Either
        // way the revoker must now refuse the token.
        let done = match revoked.as_ref().map(|r| r.status) {
            Some(StatusCode::NO_CONTENT) => true,
            Some(StatusCode::NOT_FOUND) => http
                .validate_token(&revoker_api, &auth, &subject)
                .await
                .is_ok_and(|r| r.status == StatusCode::NOT_FOUND),
            _ => false,
        };
        assert!(
            done,
            "round {round}: revocation through node {} never succeeded: {:?}",
            revoker + 1,
            revoked.map(|r| (r.status, r.text))
        );
        let name = format!("stale-{round}");
        let body = json!({"user": {"name": name, "domain_id": "default", "password": "pw-stale-1"}});
        let url = format!("{}/v3/users", cluster.api(revoker));
        if let Some(r) =
            until(Duration::from_secs(30), StatusCode::CREATED, || http.post(&url, Some(&auth), &body)).await
        {
            if r.status == StatusCode::CREATED {
                created.push(r.json["user"]["id"].as_str().unwrap_or_default().to_string());
            }
        }

        // A validation waiting in the stopped victim's socket, then the victim resumes.
        let early = {
            let (http, url, auth, subject) = (http.clone(), cluster.api(victim), auth.clone(), subject.clone());
            tokio::spawn(async move { http.validate_token(&url, &auth, &subject).await })
        };
        tokio::time::sleep(Duration::from_millis(200 + 150 * (round as u64 % 4))).await;
        cluster.resume(victim);
        let early = early.await.expect("validation task");
        assert!(
            !accepted(&early),
            "round {round}: node {} accepted a token revoked while it was stopped (first request after SIGCONT): {:?}",
            victim + 1,
            early.map(|r| r.text)
        );
        for _ in 0..10 {
            for node in 0..3 {
                let r = http.validate_token(&cluster.api(node), &auth, &subject).await;
                assert!(!accepted(&r), "round {round}: node {} accepted a revoked token", node + 1);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    cluster.heal().await;
    let last = cluster.wait_leader(Duration::from_secs(30)).await;
    cluster.wait_applied_converged(&[0, 1, 2], Duration::from_secs(30)).await;
    let admin = cluster.admin_token(last).await;
    for node in 0..3 {
        for id in &created {
            let r = http.get(&format!("{}/v3/users/{id}", cluster.api(node)), Some(&admin)).await.expect("get user");
            assert_eq!(r.status, StatusCode::OK, "node {}: acknowledged user {id} is missing: {}", node + 1, r.text);
        }
    }
    assert!(created.len() >= ROUNDS / 2, "too few acknowledged creates to judge: {}", created.len());
    eprintln!("{ROUNDS} rounds, {} users acknowledged, in {:?}", created.len(), started.elapsed());
}
