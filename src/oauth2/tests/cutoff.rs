//! A password change, or a disable then re-enable, ends the user's provider tokens as it ends
//! their Keystone tokens: access tokens (introspection, userinfo, token exchange) and refresh
//! families issued before it; tokens issued after it work.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use super::errors::{alice_and_client, assert_error, code_command, form, send, Creds, CB, D};
use crate::clock::now_secs;
use crate::oauth2::tokens;
use crate::state::cf;
use crate::state::oauth2::{keys, RefreshFamily};
use crate::testkit::{Reply, TestNode};

pub(super) const EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

pub(super) async fn post(t: &TestNode, endpoint: &str, c: &Creds, pairs: &[(&str, &str)]) -> Reply {
    let mut all: Vec<(&str, String)> = vec![("client_id", c.id.clone())];
    if let Some(s) = &c.secret {
        all.push(("client_secret", s.clone()));
    }
    all.extend(pairs.iter().map(|(k, v)| (*k, v.to_string())));
    send(t, Method::POST, &format!("/v4/oauth2/{D}/{endpoint}"), &[], Some(&form(&all))).await
}

/// The token response of a code of `user_id` for `scope`, as `/authorize` would have issued
/// it (no PKCE), redeemed by `c`.
pub(super) async fn user_tokens(t: &TestNode, c: &Creds, user_id: &str, scope: &str) -> Value {
    let (code, cmd) = code_command(&t.node, D, &c.id, user_id, scope, None, now_secs() + 60);
    t.node.propose(cmd).await.unwrap();
    let r = post(t, "token", c, &[("grant_type", "authorization_code"), ("code", &code), ("redirect_uri", CB)]).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    r.body
}

pub(super) fn s(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or_else(|| panic!("no {key} in {v}")).to_string()
}

pub(super) async fn active(t: &TestNode, c: &Creds, token: &str) -> bool {
    let r = post(t, "introspect", c, &[("token", token)]).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    match r.body["active"].as_bool() {
        Some(true) => true,
        _ => {
            assert_eq!(r.body, json!({"active": false}));
            false
        }
    }
}

async fn userinfo_status(t: &TestNode, token: &str) -> StatusCode {
    let auth = format!("Bearer {token}");
    send(t, Method::GET, &format!("/v4/oauth2/{D}/userinfo"), &[("authorization", &auth)], None).await.status
}

async fn refresh(t: &TestNode, c: &Creds, rt: &str) -> Reply {
    post(t, "token", c, &[("grant_type", "refresh_token"), ("refresh_token", rt)]).await
}

fn family_revoked(t: &TestNode, rt: &str) -> bool {
    let id = tokens::split_refresh(rt).unwrap().0;
    let f = t.node.engine.read().get_t::<RefreshFamily>(cf::OAUTH2, &keys::family(id)).unwrap().expect("family");
    f.revoked_at.is_some()
}

async fn patch_user(t: &TestNode, user_id: &str, fields: Value) {
    let r = t.admin(Method::PATCH, &format!("/v3/users/{user_id}"), Some(json!({ "user": fields }))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
}

/// Every way the tokens issued before `change` are accepted refuses them afterwards; tokens
/// issued right after it (the same second) are accepted.
async fn tokens_end_with(change: Value, reenable: bool) {
    let (t, alice, c) = alice_and_client(json!({})).await;
    t.create("/v3/services", "service", json!({"type": "compute", "name": "nova"})).await;
    let old = user_tokens(&t, &c, &alice, "openid platform:api").await;
    let (access, rt) = (s(&old, "access_token"), s(&old, "refresh_token"));
    let other = user_tokens(&t, &c, &alice, "openid").await;
    let (other_access, other_rt) = (s(&other, "access_token"), s(&other, "refresh_token"));
    let exchange =
        [("grant_type", EXCHANGE), ("subject_token", access.as_str()), ("audience", "platform-apis:compute")];
    let r = post(&t, "token", &c, &exchange).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let exchanged = s(&r.body, "access_token");
    for token in [&access, &rt, &other_access, &exchanged] {
        assert!(active(&t, &c, token).await, "live before the change");
    }
    assert_eq!(userinfo_status(&t, &other_access).await, StatusCode::OK);

    patch_user(&t, &alice, change).await;
    if reenable {
        patch_user(&t, &alice, json!({"enabled": true})).await;
    }

    for token in [&access, &rt, &other_access, &exchanged, &other_rt] {
        assert!(!active(&t, &c, token).await, "introspection: {token} outlived the change");
    }
    assert_eq!(userinfo_status(&t, &other_access).await, StatusCode::UNAUTHORIZED);
    assert_error(&post(&t, "token", &c, &exchange).await, StatusCode::BAD_REQUEST, "invalid_grant");
    assert_error(&refresh(&t, &c, &rt).await, StatusCode::BAD_REQUEST, "invalid_grant");
    assert!(family_revoked(&t, &rt), "the refused family is revoked");
    assert_error(&refresh(&t, &c, &other_rt).await, StatusCode::BAD_REQUEST, "invalid_grant");

    // What the user gets afterwards works, at once.
    let new = user_tokens(&t, &c, &alice, "openid").await;
    assert!(active(&t, &c, &s(&new, "access_token")).await);
    assert_eq!(userinfo_status(&t, &s(&new, "access_token")).await, StatusCode::OK);
    let r = refresh(&t, &c, &s(&new, "refresh_token")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert!(active(&t, &c, &s(&r.body, "access_token")).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_change_ends_earlier_access_tokens_and_refresh_families() {
    tokens_end_with(json!({"password": "alice password 2"}), false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disable_then_re_enable_ends_earlier_access_tokens_and_refresh_families() {
    tokens_end_with(json!({"enabled": false}), true).await;
}
