//! The provider's limits on unauthenticated writes, client write races, the code grant's
//! redirect URI and the published revocation list.

use axum::http::{Method, StatusCode};
use serde_json::json;

use super::errors::{
    alice_and_client, assert_error, client_in, code_command, form, header, send, until_limited, Creds, CB, D,
    RATE_LIMITED,
};
use crate::clock::now_secs;
use crate::oauth2::clients;
use crate::state::oauth2::{keys, Client, OAuth2Command};
use crate::state::{cf, Command, Reader};
use crate::testkit::TestNode;

const DEVICE: &str = "urn:ietf:params:oauth:grant-type:device_code";

fn device_grants(t: &TestNode) -> usize {
    t.node.engine.read().scan_prefix(cf::OAUTH2, b"d/", usize::MAX).unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_authorization_is_rate_limited_per_source() {
    let t = TestNode::start_with(RATE_LIMITED).await;
    let c = client_in(&t, D, json!({"confidential": false, "grant_types": [DEVICE], "redirect_uris": []})).await;
    let path = format!("/v4/oauth2/{D}/device_authorization");
    let body = form(&[("client_id", c.id.as_str()), ("scope", "openid")]);
    // The burst passes, then 429 (a slow machine may refill one token in between).
    let (passed, limited) = until_limited(|_| send(&t, Method::POST, &path, &[], Some(&body))).await;
    assert!((2..4).contains(&passed), "{passed} requests passed");
    assert_error(&limited, StatusCode::TOO_MANY_REQUESTS, "invalid_request");
    assert!(limited.headers.contains_key("retry-after"));
    assert_eq!(device_grants(&t), passed, "a refused start writes nothing");
    // Another source has its own bucket.
    let r = send(&t, Method::POST, &path, &[("x-forwarded-for", "203.0.113.9")], Some(&body)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
}

/// A code of `c` for `user_id` as `/authorize` issues it, for `CB`, without PKCE.
async fn issue_code(t: &TestNode, c: &Creds, user_id: &str) -> String {
    let (code, cmd) = code_command(&t.node, D, &c.id, user_id, "openid", None, now_secs() + 60);
    t.node.propose(cmd).await.unwrap();
    code
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_without_its_redirect_uri_is_invalid_grant() {
    let (t, alice, c) = alice_and_client(json!({})).await;
    let code = issue_code(&t, &c, &alice).await;
    let token = format!("/v4/oauth2/{D}/token");
    let secret = c.secret.clone().unwrap();
    let redeem = |redirect: Option<&str>| {
        let mut pairs = vec![
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("client_id", c.id.as_str()),
            ("client_secret", secret.as_str()),
        ];
        pairs.extend(redirect.map(|r| ("redirect_uri", r)));
        let body = form(&pairs);
        let (t, token) = (&t, &token);
        async move { send(t, Method::POST, token, &[], Some(&body)).await }
    };
    assert_error(&redeem(None).await, StatusCode::BAD_REQUEST, "invalid_grant");
    assert_error(&redeem(Some("")).await, StatusCode::BAD_REQUEST, "invalid_grant");
    // The refused attempts did not spend the code.
    let r = redeem(Some(CB)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
}

fn stored_client(t: &TestNode, id: &str) -> Client {
    Reader::get(&t.node.engine.read(), cf::OAUTH2, &keys::client(D, id)).unwrap().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_racing_a_secret_rotation_loses_and_the_new_secret_stays() {
    let t = TestNode::start().await;
    let c = client_in(&t, D, json!({})).await;
    // An update reads the client; a rotation lands before the update is written.
    let read = stored_client(&t, &c.id);
    let r = t.admin(Method::POST, &format!("/v4/oauth2/{D}/clients/{}/rotate-secret", c.id), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let new_secret = r.body["client_secret"].as_str().unwrap().to_string();
    let rotated = stored_client(&t, &c.id);
    let mut patched = read.clone();
    patched.name = "Renamed".into();
    let err = clients::replace(&t.node, read, patched).await.unwrap_err();
    assert_eq!(err.status, StatusCode::CONFLICT, "{}", err.message);
    assert_eq!(stored_client(&t, &c.id), rotated, "the rotated secret stays");
    // The new secret authenticates, the old one does not.
    let token = format!("/v4/oauth2/{D}/token");
    let grant = |secret: &str| {
        form(&[("grant_type", "client_credentials"), ("client_id", c.id.as_str()), ("client_secret", secret)])
    };
    assert_eq!(send(&t, Method::POST, &token, &[], Some(&grant(&new_secret))).await.status, StatusCode::OK);
    let old = send(&t, Method::POST, &token, &[], Some(&grant(c.secret.as_deref().unwrap()))).await;
    assert_eq!(old.status, StatusCode::UNAUTHORIZED, "{}", old.text);
    // A PATCH through the API reads the current record and succeeds.
    let r = t
        .admin(
            Method::PATCH,
            &format!("/v4/oauth2/{D}/clients/{}", c.id),
            Some(json!({"oauth2_client": {"name": "Renamed"}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(stored_client(&t, &c.id).secret_hash, rotated.secret_hash);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_revocation_list_is_served_per_state_version() {
    let t = TestNode::start().await;
    let path = format!("/v4/oauth2/{D}/jwks/revocation");
    let get = || send(&t, Method::GET, &path, &[], None);
    let revoke = |jti: &str, exp: i64| {
        let cmd =
            OAuth2Command::RevokeJti { domain_id: D.into(), jti: jti.into(), exp, family_id: None, at: now_secs() };
        t.node.propose(Command::OAuth2(cmd))
    };
    let r = get().await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body, json!({"revoked_jtis": []}));
    assert_eq!(header(&r, "cache-control"), "public, max-age=60");
    assert_eq!(header(&r, "content-type"), "application/json");
    revoke("a", now_secs() + 600).await.unwrap();
    revoke("gone", now_secs() - 1).await.unwrap();
    assert_eq!(get().await.body, json!({"revoked_jtis": ["a"]}), "an expired token is not listed");
    // Held per state version: a second request is answered from the cache.
    let version = t.node.app.state_version();
    let cached = t.node.oauth2.revoked.get(&D.to_string(), version).expect("cached");
    assert_eq!(cached.ids(), vec!["a".to_string()]);
    assert_eq!(get().await.body, json!({"revoked_jtis": ["a"]}));
    // A new revocation changes the state and the answer.
    revoke("b", now_secs() + 600).await.unwrap();
    assert_eq!(get().await.body, json!({"revoked_jtis": ["a", "b"]}));
    // Another domain has its own list.
    let other = t.create("/v3/domains", "domain", json!({"name": "other"})).await;
    let r = send(&t, Method::GET, &format!("/v4/oauth2/{other}/jwks/revocation"), &[], None).await;
    assert_eq!(r.body, json!({"revoked_jtis": []}), "{}", r.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_token_stays_inactive_after_a_prune_on_a_clock_ahead() {
    let t = TestNode::start().await;
    let c = client_in(&t, D, json!({})).await;
    let secret = c.secret.clone().unwrap();
    let call = |endpoint: &str, pairs: &[(&str, &str)]| {
        let mut all = vec![("client_id", c.id.as_str()), ("client_secret", secret.as_str())];
        all.extend_from_slice(pairs);
        let (body, path) = (form(&all), format!("/v4/oauth2/{D}/{endpoint}"));
        let t = &t;
        async move { send(t, Method::POST, &path, &[], Some(&body)).await }
    };
    let issued = call("token", &[("grant_type", "client_credentials")]).await;
    assert_eq!(issued.status, StatusCode::OK, "{}", issued.text);
    let access = issued.body["access_token"].as_str().unwrap().to_string();
    assert_eq!(call("introspect", &[("token", access.as_str())]).await.body["active"], json!(true));
    assert_eq!(call("revoke", &[("token", access.as_str())]).await.status, StatusCode::OK);
    assert_eq!(call("introspect", &[("token", access.as_str())]).await.body, json!({"active": false}));
    // A node whose clock is a day ahead proposes a command: its prune drops the revoked id.
    let ahead =
        OAuth2Command::RevokeFamily { family_id: "none".into(), client_id: c.id.clone(), at: now_secs() + 86_400 };
    t.node.propose(Command::OAuth2(ahead)).await.unwrap();
    let listed = send(&t, Method::GET, &format!("/v4/oauth2/{D}/jwks/revocation"), &[], None).await;
    assert_eq!(listed.body, json!({"revoked_jtis": []}), "pruned");
    assert_eq!(call("introspect", &[("token", access.as_str())]).await.body, json!({"active": false}), "still revoked");
    // A token issued a second later expires after anything pruned and is unaffected.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let later =
        call("token", &[("grant_type", "client_credentials")]).await.body["access_token"].as_str().unwrap().to_string();
    assert_eq!(call("introspect", &[("token", later.as_str())]).await.body["active"], json!(true));
}
