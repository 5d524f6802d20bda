//! A password change on one node ends, on every node, the provider tokens another node
//! issued before it: each node compares them with its replicated user record.

use axum::http::{Method, StatusCode};
use axum::Router;
use serde_json::{json, Value};

use super::errors::{code_command, form, CB, D, FORM, PW};
use crate::clock::now_secs;
use crate::testkit::cluster::TestCluster;
use crate::testkit::send_content;

async fn post_form(router: &Router, path: &str, pairs: &[(&str, &str)]) -> (StatusCode, Value) {
    let r = send_content(router, Method::POST, path, &[], Some((FORM, form(pairs)))).await;
    (r.status, r.body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_password_change_on_one_node_ends_tokens_issued_by_another_on_every_node() {
    let c = TestCluster::start(3, &[]).await;
    let admin = c.admin_token(0).await;
    let alice =
        c.create(0, &admin, "/v3/users", "user", json!({"name": "alice", "domain_id": D, "password": PW})).await;
    let alice = alice["user"]["id"].as_str().unwrap().to_string();
    let client = json!({"name": "App", "confidential": true,
        "grant_types": ["authorization_code", "refresh_token"], "redirect_uris": [CB], "allowed_scopes": ["openid"]});
    let r = c.create(0, &admin, &format!("/v4/oauth2/{D}/clients"), "oauth2_client", client).await;
    let id = r["oauth2_client"]["client_id"].as_str().unwrap().to_string();
    let secret = r["client_secret"].as_str().unwrap().to_string();
    let (code, cmd) = code_command(c.node(0), D, &id, &alice, "openid", None, now_secs() + 60);
    let leader = c.wait_leader().await;
    c.node(leader).propose(cmd).await.unwrap();
    c.wait_converged().await;
    let token_path = format!("/v4/oauth2/{D}/token");
    let auth = [("client_id", id.as_str()), ("client_secret", secret.as_str())];
    let redeem = [("grant_type", "authorization_code"), ("code", code.as_str()), ("redirect_uri", CB)];
    let (status, tokens) = post_form(c.router(0), &token_path, &[&auth[..], &redeem[..]].concat()).await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    let access = tokens["access_token"].as_str().unwrap().to_string();
    let rt = tokens["refresh_token"].as_str().unwrap().to_string();
    c.wait_converged().await;
    for i in 0..3 {
        assert!(active(&c, i, &auth, &access).await && active(&c, i, &auth, &rt).await, "live on node {}", i + 1);
    }

    let patch = json!({"user": {"password": "alice password 2"}});
    let r = c.call(1, Method::PATCH, &format!("/v3/users/{alice}"), Some(&admin), Some(patch)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    c.wait_converged().await;
    for i in 0..3 {
        assert!(!active(&c, i, &auth, &access).await, "access token live on node {}", i + 1);
        assert!(!active(&c, i, &auth, &rt).await, "refresh token live on node {}", i + 1);
    }
    let refresh = [("grant_type", "refresh_token"), ("refresh_token", rt.as_str())];
    let (status, body) = post_form(c.router(2), &token_path, &[&auth[..], &refresh[..]].concat()).await;
    assert_eq!((status, &body["error"]), (StatusCode::BAD_REQUEST, &json!("invalid_grant")), "{body}");
}

/// Whether node `i` introspects `token` as active.
async fn active(c: &TestCluster, i: usize, auth: &[(&str, &str)], token: &str) -> bool {
    let pairs = [auth, &[("token", token)][..]].concat();
    let (status, body) = post_form(c.router(i), &format!("/v4/oauth2/{D}/introspect"), &pairs).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["active"] == json!(true)
}
