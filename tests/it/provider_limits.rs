//! The per-provider rate limits are the cluster's figures, counted by the leader in leases: a
//! provisioning tool whose SCIM writes all reach one follower gets the whole figure (not the
//! follower's third of it), then 429 with `Retry-After`, and the other members refuse too
//! (docs/operations.md, "Per-provider rate limits").

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::scim_clients::realm;
use crate::support::Cluster;
use crate::token_cluster::wait_cluster_version;

const FIGURE: usize = 12;
const USER: &str = "urn:ietf:params:scim:schemas:core:2.0:User";

/// Sum of one metric over the members.
async fn total(c: &Cluster, name: &str) -> f64 {
    let mut sum = 0.0;
    for i in 0..c.len() {
        sum += c.metric(i, name).await.unwrap_or(0.0);
    }
    sum
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scim_writes_through_one_follower_get_the_clusters_whole_figure() {
    let c = Cluster::start_with_env(3, &[("IDNODE_KEYSTONE_SCIM_REALM_WRITE_RATE_LIMIT", &FIGURE.to_string())]).await;
    let leader = c.wait_leader(Duration::from_secs(30)).await;
    let follower = (leader + 1) % 3;
    let admin = c.admin_token(follower).await;
    let (d, key) = realm(&c, follower, &admin).await;
    wait_cluster_version(&c, 16.0).await;
    let term = c.metric(leader, "idnode_raft_current_term").await;
    let auth = format!("Bearer {key}");

    // All to the follower, then two to each other member.
    let order: Vec<usize> =
        std::iter::repeat_n(follower, FIGURE + 6).chain([leader, (leader + 2) % 3].repeat(2)).collect();
    let started = Instant::now();
    let mut created = vec![0usize; 3];
    let mut refused_on_follower = 0;
    for (n, i) in order.into_iter().enumerate() {
        let url = format!("{}/SCIM/v2/{d}/Users", c.api(i));
        let body =
            json!({"schemas": [USER], "externalId": format!("e{n}"), "userName": format!("u{n}"), "active": true});
        let r = c.http.request(Method::POST, &url, None, &[("authorization", &auth)], Some(&body)).await.expect("POST");
        match r.status {
            StatusCode::CREATED => created[i] += 1,
            StatusCode::TOO_MANY_REQUESTS => {
                let retry: u64 = r.header("retry-after").and_then(|v| v.parse().ok()).expect("Retry-After");
                assert!((1..=60).contains(&retry), "Retry-After {retry}");
                refused_on_follower += usize::from(i == follower);
            }
            other => panic!("{other}: {}", r.text),
        }
    }
    let elapsed = started.elapsed().as_secs_f64();

    // Bounds from both sides: at least the figure on the follower when every lease reached the
    // leader (a lease that timed out on a slow host falls back to the follower's third), at
    // most the figure plus the leader bucket's refill over the real elapsed time (figure / 60
    // a second), plus another figure if leadership moved (a new leader starts a full bucket),
    // plus the members' own shares and their refill if a lease failed (each then counts its share).
    let failed = total(&c, "idnode_raft_lease_failures_total").await;
    let moved = c.metric(leader, "idnode_raft_current_term").await != term;
    let refilled = (FIGURE as f64 * elapsed / 60.0).floor() as usize;
    let shares = if failed > 0.0 { 3 * FIGURE.div_ceil(3) + refilled } else { 0 };
    let most = FIGURE + refilled + if moved { FIGURE } else { 0 } + shares;
    let least = if failed == 0.0 { FIGURE } else { FIGURE / 3 };
    let all: usize = created.iter().sum();
    let report = format!("created per member {created:?}, {failed} failed leases, {elapsed:.1} s, term moved {moved}");
    eprintln!("provider_limits: {report}");
    assert!((least..=most).contains(&created[follower]), "follower: expected {least}..={most}; {report}");
    assert!(all <= most, "all members: expected at most {most}; {report}");
    assert!(refused_on_follower > 0 || failed > 0.0, "a figure of {FIGURE} refuses some of {}: {report}", FIGURE + 6);
    assert!(total(&c, "idnode_raft_leases_total").await > 0.0, "{report}");
}
