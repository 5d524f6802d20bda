//! Token restrictions on a 3-node cluster: a change or a deletion made through one node holds
//! for the restriction's tokens on every node as soon as it is acknowledged (each node reads
//! the restriction as it applied it; the write answers once every member applied it).

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use super::tests::role_names;
use crate::providers::tests::verification::{serve_jwks, TestKey};
use crate::state::keys::ns;
use crate::state::read::RestrictionReads;
use crate::state::Reader;
use crate::testkit::cluster::TestCluster;
use crate::testkit::send_with_headers;

const ISSUER: &str = "https://idp.restricted-cluster.test";

async fn admin_create(c: &TestCluster, i: usize, token: &str, path: &str, kind: &str, fields: Value) -> String {
    let r = c.call(i, Method::POST, path, Some(token), Some(json!({ kind: fields }))).await;
    assert_eq!(r.status, StatusCode::CREATED, "create {kind}: {}", r.body);
    r.body[kind]["id"].as_str().expect("id").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restriction_changed_or_deleted_on_one_node_holds_on_every_node_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let key = TestKey::ec(dir.path(), "ec-rc");
    let (_jwks, addr) = serve_jwks(vec![key.jwk()]).await;
    let c = TestCluster::start(3, &[("federation", "allow_private_networks", "true")]).await;
    c.wait_leader().await;
    let admin = c.admin_token(0).await;
    let domain = admin_create(&c, 0, &admin, "/v3/domains", "domain", json!({"name": "edge"})).await;
    let project =
        admin_create(&c, 0, &admin, "/v3/projects", "project", json!({"name": "apps", "domain_id": domain})).await;
    let idp = admin_create(
        &c,
        0,
        &admin,
        "/v4/federation/identity_providers",
        "identity_provider",
        json!({"domain_id": domain, "provider_id": "edge", "issuer": ISSUER, "client_id": "idnode",
               "jwks_uri": format!("http://{addr}/jwks")}),
    )
    .await;
    let role = |name: &str| c.node(0).engine.read().id_by_name(ns::ROLE_NAME, "", name).unwrap().unwrap();
    let restriction = admin_create(
        &c,
        1,
        &admin,
        "/v4/tokens/restrictions",
        "restriction",
        json!({"domain_id": domain, "project_id": project, "allow_renew": false, "allow_rescope": false,
               "roles": [{"id": role("reader")}]}),
    )
    .await;
    let rule = json!({"name": "apps", "match": {"all_of": [{"type": "equals", "claim": "team", "value": "apps"}]},
        "identity": {"identity_mode": "ephemeral", "user_name": "${claims.sub}"},
        "authorizations": [{"type": "project", "project_id": project, "project_domain_id": domain,
                            "roles": [{"id": role("member")}]}],
        "token_restriction_id": restriction});
    let body = json!({"mapping": {"mapping_id": "edge-apps", "domain_id": domain, "provider_id": "edge",
                                  "source": {"type": "federation", "idp_id": idp}, "rules": [rule]}});
    let r = c.call(0, Method::POST, "/v4/mappings", Some(&admin), Some(body)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);

    // A workload logs in on each node; every node sees each token narrowed to `reader`.
    let now = crate::clock::now_secs();
    let mut tokens = Vec::new();
    for i in 0..3 {
        let jwt = key.sign(&json!({"iss": ISSUER, "aud": "idnode", "sub": format!("svc-{i}"), "team": "apps",
                                   "exp": now + 600}));
        let path = format!("/v4/federation/identity_providers/{idp}/jwt");
        let r =
            send_with_headers(c.router(i), Method::POST, &path, &[("authorization", &format!("Bearer {jwt}"))], None)
                .await;
        assert_eq!(r.status, StatusCode::OK, "login on node {}: {}", i + 1, r.body);
        assert_eq!(r.body["token"]["project"]["id"], json!(project));
        tokens.push(r.headers["x-subject-token"].to_str().unwrap().to_string());
    }
    c.wait_converged().await;
    let validate_everywhere = |expect: StatusCode, roles: Vec<&'static str>| {
        let (c, tokens, admin) = (&c, &tokens, &admin);
        async move {
            for t in tokens {
                for i in 0..3 {
                    let v = c.call(i, Method::GET, &format!("/v3/auth/tokens#{t}"), Some(admin), None).await;
                    assert_eq!(v.status, expect, "node {}: {}", i + 1, v.body);
                    if expect == StatusCode::OK {
                        assert_eq!(role_names(&v), roles, "node {}", i + 1);
                    }
                }
            }
        }
    };
    validate_everywhere(StatusCode::OK, vec!["reader"]).await;

    // A role added on node 2: no waiting, every node shows it on the tokens already issued.
    let path = format!("/v4/tokens/restrictions/{restriction}");
    let widen = json!({"restriction": {"roles": [{"id": role("reader")}, {"id": role("member")}]}});
    let r = c.call(1, Method::PUT, &path, Some(&admin), Some(widen)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    validate_everywhere(StatusCode::OK, vec!["member", "reader"]).await;
    // Removed again on node 3.
    let narrow = json!({"restriction": {"roles": [{"id": role("reader")}]}});
    let r = c.call(2, Method::PUT, &path, Some(&admin), Some(narrow)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    validate_everywhere(StatusCode::OK, vec!["reader"]).await;

    // Deleted on node 3: refused everywhere, at once.
    let r = c.call(2, Method::DELETE, &path, Some(&admin), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    validate_everywhere(StatusCode::NOT_FOUND, vec![]).await;
    // The replicas agree with each other on what is stored.
    c.wait_converged().await;
    let views: Vec<_> = (0..3).map(|i| c.node(i).engine.read().token_restrictions().unwrap()).collect();
    assert!(views.iter().all(|v| v.is_empty()) && views[0] == views[1] && views[1] == views[2]);
}
