//! Mapped logins on a 3-node cluster: a ruleset change made on one node fails the tokens of
//! the old version on every node as soon as the change is acknowledged, and the shadow
//! registry's lifecycle jobs act once per cluster (the leader's pass), not once per node.

use std::time::Duration;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::jobs::{tick, Job};
use crate::providers::tests::verification::{serve_jwks, TestKey};
use crate::state::keys::ns;
use crate::state::shadow::{keys as shadow_keys, VirtualUserMetadata};
use crate::state::{cf, Reader};
use crate::testkit::cluster::TestCluster;
use crate::testkit::{send_with_headers, Reply};

const ISSUER: &str = "https://idp.cluster.test";
const DAY: i64 = 86_400;

fn subject(r: &Reply) -> String {
    r.headers.get("x-subject-token").and_then(|v| v.to_str().ok()).expect("x-subject-token").to_string()
}

async fn admin_create(c: &TestCluster, token: &str, path: &str, kind: &str, fields: Value) -> String {
    let r = c.call(0, Method::POST, path, Some(token), Some(json!({ kind: fields }))).await;
    assert_eq!(r.status, StatusCode::CREATED, "create {kind}: {}", r.body);
    r.body[kind]["id"].as_str().expect("id").to_string()
}

fn records(c: &TestCluster, i: usize) -> Vec<VirtualUserMetadata> {
    c.node(i).engine.read().scan(cf::SHADOW, shadow_keys::RECORD_PREFIX).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_ruleset_change_fails_old_tokens_everywhere_and_jobs_run_once_per_cluster() {
    let dir = tempfile::tempdir().unwrap();
    let key = TestKey::ec(dir.path(), "ec-c");
    let (_jwks, addr) = serve_jwks(vec![key.jwk()]).await;
    // The IdP runs on loopback.
    let c = TestCluster::start(3, &[super::tests::PRIVATE_NETWORKS]).await;
    c.wait_leader().await;
    let admin = c.admin_token(0).await;
    let domain = admin_create(&c, &admin, "/v3/domains", "domain", json!({"name": "fleet"})).await;
    let idp = admin_create(
        &c,
        &admin,
        "/v4/federation/identity_providers",
        "identity_provider",
        json!({"domain_id": domain, "provider_id": "fleet", "issuer": ISSUER, "client_id": "idnode",
               "jwks_uri": format!("http://{addr}/jwks")}),
    )
    .await;
    let reader = c.node(0).engine.read().id_by_name(ns::ROLE_NAME, "", "reader").unwrap().unwrap();
    let rule = |name: &str| {
        json!({"name": name, "match": {"all_of": [{"type": "equals", "claim": "fleet", "value": "yes"}]},
               "identity": {"identity_mode": "ephemeral", "user_name": "${claims.sub}"},
               "authorizations": [{"type": "domain", "domain_id": domain, "roles": [{"id": reader}]}]})
    };
    let body = json!({"mapping": {"mapping_id": "fleet", "domain_id": domain, "provider_id": "fleet",
                                  "source": {"type": "federation", "idp_id": idp}, "rules": [rule("machines")]}});
    let r = c.call(0, Method::POST, "/v4/mappings", Some(&admin), Some(body)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    c.wait_converged().await;

    // One login per node, each validated on every node.
    let now = crate::clock::now_secs();
    let mut tokens = Vec::new();
    for i in 0..3 {
        let jwt = key.sign(&json!({"iss": ISSUER, "aud": "idnode", "sub": format!("host-{i}"), "fleet": "yes",
                                   "exp": now + 600}));
        let path = format!("/v4/federation/identity_providers/{idp}/jwt");
        let bearer = format!("Bearer {jwt}");
        let router = c.router(i);
        let r = send_with_headers(
            router,
            Method::POST,
            &path,
            &[("authorization", &bearer)],
            Some(json!({"auth": {"scope": {"domain": {"id": domain}}}})),
        )
        .await;
        assert_eq!(r.status, StatusCode::OK, "login on node {}: {}", i + 1, r.body);
        tokens.push(subject(&r));
    }
    c.wait_converged().await;
    for token in &tokens {
        for i in 0..3 {
            let v = c.call(i, Method::GET, &format!("/v3/auth/tokens#{token}"), Some(&admin), None).await;
            assert_eq!(v.status, StatusCode::OK, "node {}: {}", i + 1, v.body);
        }
    }

    // A change on node 2: once acknowledged, no node accepts the old version.
    let r = c
        .call(
            1,
            Method::POST,
            "/v4/mappings/fleet/rules/mutate",
            Some(&admin),
            Some(json!({"mutations": [{"operation": "insert", "rule": rule("extra")}]})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    for token in &tokens {
        for i in 0..3 {
            let v = c.call(i, Method::GET, &format!("/v3/auth/tokens#{token}"), Some(&admin), None).await;
            assert_eq!(v.status, StatusCode::UNAUTHORIZED, "node {}: {}", i + 1, v.body);
            assert_eq!(v.body["detail"], json!("ruleset_version_mismatch"));
        }
    }

    // The lifecycle jobs: every node ticks, only the leader acts, each record once.
    let later = crate::clock::now_secs() + 91 * DAY;
    let mut acted = Vec::new();
    for i in 0..3 {
        if let Some(outcome) = tick(c.node(i), Job::Deactivate, later).await {
            acted.push((i, outcome.expect("deactivation pass")));
        }
    }
    assert_eq!(acted.len(), 1, "one node (the leader) ran the pass: {acted:?}");
    assert_eq!(acted[0].1, 3, "three virtual users disabled");
    c.wait_converged().await;
    for i in 0..3 {
        assert!(records(&c, i).iter().all(|r| !r.enabled), "node {} sees them disabled", i + 1);
    }
    // Ticking again finds nothing to do.
    let again: usize = futures::future::join_all((0..3).map(|i| tick(c.node(i), Job::Deactivate, later)))
        .await
        .into_iter()
        .flatten()
        .map(|o| o.expect("pass"))
        .sum();
    assert_eq!(again, 0);

    let much_later = later + 366 * DAY;
    let mut deleted = 0;
    let mut passes = 0;
    for i in 0..3 {
        if let Some(outcome) = tick(c.node(i), Job::ArchiveCleanup, much_later).await {
            passes += 1;
            deleted += outcome.expect("archive pass");
        }
    }
    assert_eq!((passes, deleted), (1, 3));
    c.wait_converged().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    for i in 0..3 {
        assert!(records(&c, i).is_empty(), "node {} holds no archived record", i + 1);
    }
}
