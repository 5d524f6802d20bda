//! `GET /v3/OS-REVOKE/events` through the real router: a revoked token and a password change
//! become events, `since` filters them, and only an admin or a service may list them.

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::clock::now_micros;
use crate::testkit::methods::*;
use crate::testkit::TestNode;
use crate::token::render::iso_micros;

const PATH: &str = "/v3/OS-REVOKE/events";
const PW: &str = "revoke events pw";

/// The listed events, after checking the envelope.
async fn events(t: &TestNode, query: &str) -> Vec<Value> {
    let r = t.admin(GET, &format!("{PATH}{query}"), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let links = &r.body["links"];
    assert!(links["self"].as_str().is_some_and(|s| s.ends_with(PATH)), "{links}");
    assert_eq!((&links["next"], &links["previous"]), (&Value::Null, &Value::Null));
    r.body["events"].as_array().expect("events").clone()
}

fn sorted_keys(v: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = v.as_object().expect("object").keys().map(String::as_str).collect();
    keys.sort_unstable();
    keys
}

fn with(events: &[Value], key: &str, id: &str) -> Option<Value> {
    events.iter().find(|e| e[key] == id).cloned()
}

/// Keystone's `isotime(subsecond=True)` shape: `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
fn is_iso_micros(v: &Value) -> bool {
    v.as_str().is_some_and(|s| {
        s.len() == 27
            && s.ends_with('Z')
            && s.as_bytes()[19] == b'.'
            && crate::http::fields::parse_iso_time(s).is_some()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_token_is_listed_by_its_audit_id_and_since_filters_it() {
    let t = TestNode::start().await;
    t.create("/v3/users", "user", json!({"name": "rev-alice", "password": PW})).await;
    let issued = t.try_token("rev-alice", PW, json!("unscoped")).await;
    assert_eq!(issued.status, StatusCode::OK, "{}", issued.body);
    let token = issued.headers["x-subject-token"].to_str().expect("token").to_string();
    let audit_id = issued.body["token"]["audit_ids"][0].as_str().expect("audit id").to_string();
    assert!(with(&events(&t, "").await, "audit_id", &audit_id).is_none(), "not revoked yet");

    let before = iso_micros(now_micros() - 1);
    let r = t.admin(DELETE, &format!("/v3/auth/tokens#{token}"), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);

    let all = events(&t, "").await;
    let event = with(&all, "audit_id", &audit_id).unwrap_or_else(|| panic!("no event for {audit_id}: {all:?}"));
    let keys = sorted_keys(&event);
    assert_eq!(keys, ["audit_id", "issued_before", "revoked_at"], "{event}");
    assert!(is_iso_micros(&event["revoked_at"]), "{event}");
    assert_eq!(event["issued_before"], event["revoked_at"]);
    let times: Vec<&str> = all.iter().map(|e| e["revoked_at"].as_str().expect("time")).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "oldest first: {times:?}");

    let revoked_at = event["revoked_at"].as_str().expect("time");
    let later = events(&t, &format!("?since={revoked_at}")).await;
    assert!(with(&later, "audit_id", &audit_id).is_none(), "since is exclusive: {later:?}");
    let earlier = events(&t, &format!("?since={before}")).await;
    assert_eq!(with(&earlier, "audit_id", &audit_id), Some(event));

    let bad = t.admin(GET, &format!("{PATH}?since=yesterday"), None).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.body);
    assert_eq!(bad.body["error"]["code"], 400, "{}", bad.body);
    assert!(bad.body["error"]["message"].as_str().is_some_and(|m| m.contains("'since'")), "{}", bad.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_change_is_a_user_event() {
    let t = TestNode::start().await;
    let user = t.create("/v3/users", "user", json!({"name": "rev-bob", "password": PW})).await;
    assert!(with(&events(&t, "").await, "user_id", &user).is_none(), "no cut-off yet");
    let own = t.token("rev-bob", PW, json!("unscoped")).await;
    let change = json!({"user": {"original_password": PW, "password": "a new revoke pw"}});
    let r = t.call(POST, &format!("/v3/users/{user}/password"), Some(&own), Some(change)).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);

    let all = events(&t, "").await;
    let event = with(&all, "user_id", &user).unwrap_or_else(|| panic!("no event for {user}: {all:?}"));
    let keys = sorted_keys(&event);
    assert_eq!(keys, ["issued_before", "revoked_at", "user_id"], "{event}");
    assert!(is_iso_micros(&event["issued_before"]), "{event}");
    assert_eq!(event["issued_before"], event["revoked_at"]);
    let since = event["revoked_at"].as_str().expect("time");
    assert!(with(&events(&t, &format!("?since={since}")).await, "user_id", &user).is_none());
}

async fn role_id(t: &TestNode, name: &str) -> String {
    let r = t.admin(GET, &format!("/v3/roles?name={name}"), None).await;
    r.body["roles"][0]["id"].as_str().unwrap_or_else(|| panic!("role {name}: {}", r.body)).to_string()
}

/// Keystone's `rule:service_or_admin`: a project member is refused, a holder of the `service`
/// role on a project is let through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_is_refused_and_a_service_may_list() {
    let t = TestNode::start().await;
    let project = t.create("/v3/projects", "project", json!({"name": "rev-p", "domain_id": "default"})).await;
    let scope = json!({"project": {"id": project}});
    for (name, role, expected) in
        [("rev-member", "member", StatusCode::FORBIDDEN), ("rev-service", "service", StatusCode::OK)]
    {
        let user = t.create("/v3/users", "user", json!({"name": name, "password": PW})).await;
        let grant = format!("/v3/projects/{project}/users/{user}/roles/{}", role_id(&t, role).await);
        assert_eq!(t.admin(PUT, &grant, None).await.status, StatusCode::NO_CONTENT);
        let token = t.token(name, PW, scope.clone()).await;
        let r = t.call(GET, PATH, Some(&token), None).await;
        assert_eq!(r.status, expected, "{name}: {}", r.body);
    }
}
