//! A password change on one node ends, on every node, the provider tokens another node
//! issued before it: each node compares them with its replicated user record.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Method, Request, StatusCode};
use axum::Router;
use serde_json::{json, Value};
use tower::ServiceExt;

use super::errors::{form, CB, D, PW};
use crate::clock::now_secs;
use crate::oauth2::secrets::{self, keyed_hash};
use crate::state::oauth2::{AuthCode, OAuth2Command};
use crate::state::Command;
use crate::testkit::cluster::TestCluster;

async fn post_form(router: &Router, path: &str, pairs: &[(&str, &str)]) -> (StatusCode, Value) {
    let mut req = Request::builder()
        .method(Method::POST)
        .uri(path)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(form(pairs)))
        .unwrap();
    req.extensions_mut().insert(ConnectInfo(SocketAddr::from(([192, 0, 2, 1], 40000))));
    let resp = router.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20).await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_password_change_on_one_node_ends_tokens_issued_by_another_on_every_node() {
    let c = TestCluster::start(3, &[]).await;
    let admin = c.admin_token(0).await;
    let r = c
        .call(
            0,
            Method::POST,
            "/v3/users",
            Some(&admin),
            Some(json!({"user": {"name": "alice", "domain_id": D, "password": PW}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let alice = r.body["user"]["id"].as_str().unwrap().to_string();
    let client = json!({"oauth2_client": {"name": "App", "confidential": true,
        "grant_types": ["authorization_code", "refresh_token"], "redirect_uris": [CB],
        "allowed_scopes": ["openid"]}});
    let r = c.call(0, Method::POST, &format!("/v4/oauth2/{D}/clients"), Some(&admin), Some(client)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.body["oauth2_client"]["client_id"].as_str().unwrap().to_string();
    let secret = r.body["client_secret"].as_str().unwrap().to_string();
    let code = secrets::new_secret();
    let hash = keyed_hash(c.node(0), secrets::CODE, &code).unwrap();
    let record = AuthCode {
        domain_id: D.into(),
        client_id: id.clone(),
        user_id: alice.clone(),
        redirect_uri: CB.into(),
        scopes: vec!["openid".into()],
        code_challenge: None,
        nonce: None,
        auth_time: now_secs(),
        expires_at: now_secs() + 60,
        redeemed: None,
    };
    let leader = c.wait_leader().await;
    c.node(leader)
        .propose(Command::OAuth2(OAuth2Command::IssueCode { hash, code: record, consent: None }))
        .await
        .unwrap();
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
