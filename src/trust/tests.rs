//! Trusts over HTTP, against an in-process node: tempest's create/show/roles/list/delete
//! sequence, and trust-scoped tokens (impersonation, limited uses, death with the trust).

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::testkit::{Reply, TestNode};

struct Setup {
    trustor: String,
    trustee: String,
    project: String,
    delegated: String,
    kept: String,
    tor_token: String,
}

async fn setup(t: &TestNode) -> Setup {
    let project = t.create("/v3/projects", "project", json!({"name": "trust-p"})).await;
    let trustor = t.create("/v3/users", "user", json!({"name": "tor", "password": "pw"})).await;
    let trustee = t.create("/v3/users", "user", json!({"name": "tee", "password": "pw"})).await;
    let delegated = t.create("/v3/roles", "role", json!({"name": "Delegated"})).await;
    let kept = t.create("/v3/roles", "role", json!({"name": "NotDelegated"})).await;
    for r in [&delegated, &kept] {
        let r = t.admin(Method::PUT, &format!("/v3/projects/{project}/users/{trustor}/roles/{r}"), None).await;
        assert_eq!(r.status, StatusCode::NO_CONTENT);
    }
    let tor_token = t.token_for_id(&trustor, "pw", json!({"project": {"id": project}})).await;
    Setup { trustor, trustee, project, delegated, kept, tor_token }
}

async fn create(t: &TestNode, s: &Setup, extra: Value) -> Reply {
    let mut body = json!({"trustor_user_id": s.trustor, "trustee_user_id": s.trustee, "project_id": s.project,
                          "roles": [{"name": "Delegated"}], "impersonation": true, "expires_at": null});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    t.call(Method::POST, "/v3/OS-TRUST/trusts", Some(&s.tor_token), Some(json!({"trust": body}))).await
}

async fn trust_token(t: &TestNode, user: &str, trust: &str) -> Reply {
    let body = json!({"auth": {"identity": {"methods": ["password"], "password": {"user": {"id": user, "password": "pw"}}},
                               "scope": {"OS-TRUST:trust": {"id": trust}}}});
    t.call(Method::POST, "/v3/auth/tokens", None, Some(body)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trust_lifecycle_as_tempest_drives_it() {
    let t = TestNode::start().await;
    let s = setup(&t).await;
    let r = create(&t, &s, json!({"expires_at": "2099-01-02T03:04:05Z"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let tr = &r.body["trust"];
    let id = tr["id"].as_str().unwrap().to_string();
    assert_eq!(tr["expires_at"], json!("2099-01-02T03:04:05.000000Z"));
    assert_eq!(
        (&tr["impersonation"], &tr["trustor_user_id"], &tr["project_id"]),
        (&json!(true), &json!(s.trustor), &json!(s.project))
    );
    assert_eq!(tr["roles"].as_array().unwrap().len(), 1);
    assert_eq!(tr["roles"][0]["name"], json!("Delegated"));
    assert!(tr["roles"][0]["links"]["self"].as_str().unwrap().ends_with(&format!("v3/roles/{}", s.delegated)));
    assert!(tr["links"]["self"].as_str().unwrap().contains("v3/OS-TRUST/trusts"));
    let url = format!("/v3/OS-TRUST/trusts/{id}");
    let got = t.call(Method::GET, &url, Some(&s.tor_token), None).await;
    assert_eq!(got.body["trust"]["id"], json!(id));
    let roles = t.call(Method::GET, &format!("{url}/roles"), Some(&s.tor_token), None).await;
    assert_eq!(roles.body["roles"].as_array().unwrap().len(), 1);
    assert_eq!(
        t.call(Method::HEAD, &format!("{url}/roles/{}", s.delegated), Some(&s.tor_token), None).await.status,
        StatusCode::OK
    );
    assert_eq!(
        t.call(Method::GET, &format!("{url}/roles/{}", s.kept), Some(&s.tor_token), None).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        t.call(Method::HEAD, &format!("{url}/roles/{}", s.kept), Some(&s.tor_token), None).await.status,
        StatusCode::NOT_FOUND
    );
    // Lists: the trustor by its own filter, the admin all; the trustor may not list all.
    let mine = t
        .call(Method::GET, &format!("/v3/OS-TRUST/trusts/?trustor_user_id={}", s.trustor), Some(&s.tor_token), None)
        .await;
    assert_eq!((mine.status, mine.body["trusts"].as_array().map(Vec::len)), (StatusCode::OK, Some(1)), "{}", mine.body);
    assert_eq!(mine.body["trusts"][0].get("roles"), None);
    assert_eq!(
        t.call(Method::GET, "/v3/OS-TRUST/trusts", Some(&s.tor_token), None).await.status,
        StatusCode::FORBIDDEN
    );
    let all = t.admin(Method::GET, "/v3/OS-TRUST/trusts/", None).await;
    assert_eq!(all.body["trusts"][0]["id"], json!(id));
    // Bad input.
    assert_eq!(create(&t, &s, json!({"expires_at": "bad.123Z"})).await.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        create(&t, &s, json!({"roles": [{"id": s.kept}], "trustor_user_id": s.trustee})).await.status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(create(&t, &s, json!({"roles": []})).await.status, StatusCode::FORBIDDEN);
    let admin_role = t.admin(Method::GET, "/v3/roles?name=admin", None).await.body["roles"][0]["id"].clone();
    assert_eq!(
        create(&t, &s, json!({"roles": [{"id": admin_role}]})).await.status,
        StatusCode::NOT_FOUND,
        "a role the trustor lacks"
    );
    assert_eq!(create(&t, &s, json!({"trustee_user_id": "nosuch"})).await.status, StatusCode::NOT_FOUND);
    // The trustee may not delete; the trustor may.
    let tee_token = t.token_for_id(&s.trustee, "pw", Value::Null).await;
    assert_eq!(t.call(Method::DELETE, &url, Some(&tee_token), None).await.status, StatusCode::FORBIDDEN);
    assert_eq!(t.call(Method::DELETE, &url, Some(&s.tor_token), None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(t.call(Method::GET, &url, Some(&s.tor_token), None).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trust_scoped_tokens() {
    let t = TestNode::start().await;
    let s = setup(&t).await;
    let r = create(&t, &s, json!({"impersonation": true})).await;
    let imp = r.body["trust"]["id"].as_str().unwrap().to_string();
    let tok = trust_token(&t, &s.trustee, &imp).await;
    assert_eq!(tok.status, StatusCode::OK, "{}", tok.body);
    let body = &tok.body["token"];
    assert_eq!(body["user"]["id"], json!(s.trustor), "impersonation: the trustor");
    assert_eq!(body["project"]["id"], json!(s.project));
    assert_eq!(body["OS-TRUST:trust"]["trustee_user"]["id"], json!(s.trustee));
    let names: Vec<&str> = body["roles"].as_array().unwrap().iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(names, ["Delegated"], "only the delegated role");
    let token = tok.headers["x-subject-token"].to_str().unwrap().to_string();
    // Only the trustee may use it; a trust token is not re-scoped.
    assert_eq!(trust_token(&t, &s.trustor, &imp).await.status, StatusCode::FORBIDDEN);
    let rescope = json!({"auth": {"identity": {"methods": ["token"], "token": {"id": token}}}});
    assert_eq!(t.call(Method::POST, "/v3/auth/tokens", None, Some(rescope)).await.status, StatusCode::FORBIDDEN);
    // Without impersonation the token is the trustee's, with the trustor's delegated roles.
    let plain = create(&t, &s, json!({"impersonation": false, "remaining_uses": 1})).await;
    let plain = plain.body["trust"]["id"].as_str().unwrap().to_string();
    let tok = trust_token(&t, &s.trustee, &plain).await;
    assert_eq!(tok.status, StatusCode::OK, "{}", tok.body);
    assert_eq!(tok.body["token"]["user"]["id"], json!(s.trustee));
    assert_eq!(tok.body["token"]["roles"][0]["name"], json!("Delegated"));
    assert_eq!(trust_token(&t, &s.trustee, &plain).await.status, StatusCode::UNAUTHORIZED, "its one use is spent");
    // The trustor losing the role, or deleting the trust, ends the token.
    assert_eq!(t.admin(Method::GET, &format!("/v3/auth/tokens#{token}"), None).await.status, StatusCode::OK);
    t.admin(Method::DELETE, &format!("/v3/projects/{}/users/{}/roles/{}", s.project, s.trustor, s.delegated), None)
        .await;
    assert_eq!(t.admin(Method::GET, &format!("/v3/auth/tokens#{token}"), None).await.status, StatusCode::NOT_FOUND);
    t.admin(Method::PUT, &format!("/v3/projects/{}/users/{}/roles/{}", s.project, s.trustor, s.delegated), None).await;
    assert_eq!(t.admin(Method::GET, &format!("/v3/auth/tokens#{token}"), None).await.status, StatusCode::OK);
    assert_eq!(
        t.call(Method::DELETE, &format!("/v3/OS-TRUST/trusts/{imp}"), Some(&s.tor_token), None).await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(t.admin(Method::GET, &format!("/v3/auth/tokens#{token}"), None).await.status, StatusCode::NOT_FOUND);
    // Deleting the trustee deletes the trusts it holds.
    let again = create(&t, &s, json!({})).await;
    let again = again.body["trust"]["id"].as_str().unwrap().to_string();
    assert_eq!(t.admin(Method::DELETE, &format!("/v3/users/{}", s.trustee), None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(t.admin(Method::GET, &format!("/v3/OS-TRUST/trusts/{again}"), None).await.status, StatusCode::NOT_FOUND);
}
