//! A password change ends what a sign-in on the provider's pages has not yet turned into
//! tokens: a consent page still open, an authorization code not yet redeemed, a device
//! approval not yet polled. Before, each of these minted fresh tokens after the change (a code
//! for its whole 60 s life, a signed-in page for ten minutes).

use axum::http::{Method, StatusCode};
use serde_json::json;

use super::errors::{assert_error, send};
use super::pages::{
    authorize_url, client, cookie, decide, device_start, form, location, page_state, param, sign_in_with, stored_code,
    user, CB, D, PW, VERIFIER,
};
use crate::oauth2::cutoff::code_seen_us;
use crate::testkit::{Reply, TestNode};

const DEVICE: &str = "urn:ietf:params:oauth:grant-type:device_code";
const PW2: &str = "alice password 2";

async fn redeem(t: &TestNode, cid: &str, code: &str) -> Reply {
    let body = form(&[
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", CB),
        ("code_verifier", VERIFIER),
        ("client_id", cid),
    ]);
    send(t, Method::POST, &format!("/v4/oauth2/{D}/token"), &[], Some(&body)).await
}

async fn poll(t: &TestNode, cid: &str, device_code: &str) -> Reply {
    let body = form(&[("grant_type", DEVICE), ("device_code", device_code), ("client_id", cid)]);
    send(t, Method::POST, &format!("/v4/oauth2/{D}/token"), &[], Some(&body)).await
}

/// A device flow started and signed in with `password`: the device code, the consent page
/// and the cookie.
async fn device_sign_in(t: &TestNode, cid: &str, password: &str) -> (String, Reply, String) {
    let start = device_start(t, cid, Some("openid")).await;
    let device_code = start.body["device_code"].as_str().unwrap().to_string();
    let uri = start.body["verification_uri_complete"].as_str().unwrap().to_string();
    let login = send(t, Method::GET, uri.trim_start_matches(&t.node.cfg.public_base()), &[], None).await;
    assert_eq!(login.status, StatusCode::OK, "{}", login.text);
    let c = cookie(&login);
    let body = form(&[("page_state", &page_state(&login)), ("username", "alice"), ("password", password)]);
    let consent = send(t, Method::POST, &format!("/v4/oauth2/{D}/device/login"), &[("cookie", &c)], Some(&body)).await;
    assert_eq!(consent.status, StatusCode::OK, "{}", consent.text);
    (device_code, consent, c)
}

async fn device_approve(t: &TestNode, consent: &Reply, c: &str) -> Reply {
    let body = form(&[("page_state", &page_state(consent)), ("decision", "approve")]);
    send(t, Method::POST, &format!("/v4/oauth2/{D}/device/consent"), &[("cookie", c)], Some(&body)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_change_ends_open_sign_ins_unredeemed_codes_and_unpolled_approvals() {
    let t = TestNode::start().await;
    let alice = user(&t, "alice").await;
    let cid = client(&t, json!({"grant_types": ["authorization_code", DEVICE]})).await;
    let url = authorize_url(&cid, &[("scope", "openid")]);

    // Before the change: a code not yet redeemed, a consent page not yet answered, a device
    // approved but not yet polled, and a device signed in but not yet approved.
    let (consent, c) = sign_in_with(&t, &url, "alice", PW).await;
    let (_, q) = location(&decide(&t, &consent, &c, "approve", false).await);
    let code = param(&q, "code").unwrap().to_string();
    assert_eq!(code_seen_us(&code), Some(0), "the code carries the cut-off its sign-in read");
    let (open_consent, open_c) = sign_in_with(&t, &url, "alice", PW).await;
    let (approved_device, device_consent, dc) = device_sign_in(&t, &cid, PW).await;
    assert_eq!(device_approve(&t, &device_consent, &dc).await.status, StatusCode::OK);
    let (_, unapproved_consent, uc) = device_sign_in(&t, &cid, PW).await;

    let r = t.admin(Method::PATCH, &format!("/v3/users/{alice}"), Some(json!({"user": {"password": PW2}}))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);

    let r = redeem(&t, &cid, &code).await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_grant");
    assert!(r.text.contains("sign in again"), "{}", r.text);
    assert!(stored_code(&t, &code).redeemed.is_none(), "a refused redemption spends nothing");
    let r = decide(&t, &open_consent, &open_c, "approve", false).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.text);
    assert!(r.text.contains("after you signed in"), "{}", r.text);
    assert_error(&poll(&t, &cid, &approved_device).await, StatusCode::BAD_REQUEST, "invalid_grant");
    let r = device_approve(&t, &unapproved_consent, &uc).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.text);

    // Signing in again with the new password works at once, in the change's second too.
    let (consent, c) = sign_in_with(&t, &url, "alice", PW2).await;
    let (_, q) = location(&decide(&t, &consent, &c, "approve", false).await);
    let code = param(&q, "code").unwrap().to_string();
    assert!(code_seen_us(&code).is_some_and(|seen| seen > 0));
    let r = redeem(&t, &cid, &code).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert!(r.body["access_token"].is_string(), "{}", r.body);
}
