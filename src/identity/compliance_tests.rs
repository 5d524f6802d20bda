//! `[security_compliance]` as tempest's users tests and Keystone's behaviour have it, against
//! an in-process node.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::testkit::TestNode;

async fn node(extra: &[(&str, &str, &str)]) -> TestNode {
    let mut settings = vec![
        ("security_compliance", "lockout_failure_attempts", "2"),
        ("security_compliance", "lockout_duration", "2"),
        ("security_compliance", "unique_last_password_count", "2"),
    ];
    settings.extend_from_slice(extra);
    TestNode::start_with(&settings).await
}

async fn auth(t: &TestNode, id: &str, pw: &str) -> crate::testkit::Reply {
    let body =
        json!({"auth": {"identity": {"methods": ["password"], "password": {"user": {"id": id, "password": pw}}}}});
    t.call(Method::POST, "/v3/auth/tokens", None, Some(body)).await
}

async fn change(t: &TestNode, token: &str, id: &str, old: &str, new: &str) -> crate::testkit::Reply {
    let body = json!({"user": {"original_password": old, "password": new}});
    t.call(Method::POST, &format!("/v3/users/{id}/password"), Some(token), Some(body)).await
}

fn message(r: &crate::testkit::Reply) -> &str {
    r.body["error"]["message"].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lockout_holds_even_the_right_password_until_it_expires() {
    let t = node(&[]).await;
    let id = t.create("/v3/users", "user", json!({"name": "pat", "password": "right-1"})).await;
    assert_eq!(auth(&t, &id, "right-1").await.status, StatusCode::OK);
    for _ in 0..2 {
        let r = auth(&t, &id, "wrong").await;
        assert_eq!(
            (r.status, message(&r)),
            (StatusCode::UNAUTHORIZED, "The request you have made requires authentication.")
        );
    }
    let locked = auth(&t, &id, "right-1").await;
    assert_eq!(locked.status, StatusCode::UNAUTHORIZED, "locked: the right password fails too");
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    assert_eq!(auth(&t, &id, "right-1").await.status, StatusCode::OK, "the lock ended");
    // The success ended the streak: one more failure does not lock.
    assert_eq!(auth(&t, &id, "wrong").await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(auth(&t, &id, "right-1").await.status, StatusCode::OK);
    // An administrator's update ends a lock at once.
    auth(&t, &id, "wrong").await;
    auth(&t, &id, "wrong").await;
    assert_eq!(auth(&t, &id, "right-1").await.status, StatusCode::UNAUTHORIZED);
    let r = t.admin(Method::PATCH, &format!("/v3/users/{id}"), Some(json!({"user": {"enabled": true}}))).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(auth(&t, &id, "right-1").await.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn self_service_change_keeps_history_and_revokes_old_tokens() {
    let t = node(&[]).await;
    let id = t.create("/v3/users", "user", json!({"name": "sam", "password": "pw-0"})).await;
    let token = t.token_for_id(&id, "pw-0", Value::Null).await;
    assert_eq!(change(&t, &token, &id, "pw-0", "pw-1").await.status, StatusCode::NO_CONTENT);
    // The old token is gone: re-scoping it answers 404 as Keystone does.
    let rescope = json!({"auth": {"identity": {"methods": ["token"], "token": {"id": token}}}});
    let r = t.call(Method::POST, "/v3/auth/tokens", None, Some(rescope)).await;
    assert_eq!((r.status, message(&r)), (StatusCode::NOT_FOUND, "Failed to validate token"));
    let token = t.token_for_id(&id, "pw-1", Value::Null).await;
    let history = "The new password cannot be identical to a previous password. The total number which includes the new password must be unique is 2.";
    for reused in ["pw-1", "pw-0"] {
        let r = change(&t, &token, &id, "pw-1", reused).await;
        assert_eq!((r.status, message(&r)), (StatusCode::BAD_REQUEST, history), "{reused}");
    }
    assert_eq!(auth(&t, &id, "pw-1").await.status, StatusCode::OK, "a refused change changes nothing");
    assert_eq!(change(&t, &token, &id, "pw-1", "pw-2").await.status, StatusCode::NO_CONTENT);
    let token = t.token_for_id(&id, "pw-2", Value::Null).await;
    assert_eq!(change(&t, &token, &id, "pw-2", "pw-0").await.status, StatusCode::NO_CONTENT, "pw-0 left the history");
    let r = change(&t, &token, &id, "nope", "pw-9").await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    // An administrator may reuse any password.
    for pw in ["pw-0", "pw-0"] {
        let r = t.admin(Method::PATCH, &format!("/v3/users/{id}"), Some(json!({"user": {"password": pw}}))).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    }
    assert_eq!(auth(&t, &id, "pw-0").await.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_use_pattern_and_minimum_age() {
    let t = node(&[
        ("security_compliance", "change_password_upon_first_use", "true"),
        ("security_compliance", "minimum_password_age", "1"),
        ("security_compliance", "password_regex", "^.{6,}$"),
        ("security_compliance", "password_regex_description", "at least 6 characters"),
    ])
    .await;
    let short = t.admin(Method::POST, "/v3/users", Some(json!({"user": {"name": "x", "password": "abc"}}))).await;
    assert_eq!(
        (short.status, message(&short)),
        (StatusCode::BAD_REQUEST, "The password does not match the requirements: at least 6 characters.")
    );
    let r = t.admin(Method::POST, "/v3/users", Some(json!({"user": {"name": "new", "password": "first-pw"}}))).await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert!(r.body["user"]["password_expires_at"].as_str().is_some_and(|s| !s.ends_with('Z')), "{}", r.body);
    let id = r.body["user"]["id"].as_str().unwrap().to_string();
    let r = auth(&t, &id, "first-pw").await;
    assert_eq!(
        (r.status, message(&r).to_string()),
        (StatusCode::UNAUTHORIZED, format!("The password is expired and needs to be changed for user: {id}."))
    );
    // The user may still change an expired password, with no token at all (as in Keystone: the
    // original password is the proof); a wrong original is Keystone's 401.
    let body = |old: &str| Some(json!({"user": {"original_password": old, "password": "second-pw"}}));
    let path = format!("/v3/users/{id}/password");
    assert_eq!(t.call(Method::POST, &path, None, body("wrong-pw")).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(t.call(Method::POST, &path, None, body("first-pw")).await.status, StatusCode::NO_CONTENT);
    // An invalid token is still refused, whatever the body proves.
    assert_eq!(
        t.call(Method::POST, &path, Some("not-a-token"), body("second-pw")).await.status,
        StatusCode::UNAUTHORIZED
    );
    let r = auth(&t, &id, "second-pw").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["token"]["user"]["password_expires_at"], Value::Null);
    // A self-service password must be kept a day before the user changes it again.
    let token = t.token_for_id(&id, "second-pw", Value::Null).await;
    let r = change(&t, &token, &id, "second-pw", "third-pw").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(message(&r).starts_with("You cannot change your password at this time due to the minimum password age."));
    let r = change(&t, &token, &id, "second-pw", "tiny").await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}
