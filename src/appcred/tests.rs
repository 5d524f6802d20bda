//! Application credentials and access rules over HTTP, against an in-process node: the
//! secret shown once, roles limited to the creator's, tokens scoped to the credential's
//! project that die with it, and Keystone's refusals.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::testkit::{Reply, TestNode};

struct Member {
    user: String,
    project: String,
    token: String,
}

async fn member(t: &TestNode, name: &str) -> Member {
    let project = t.create("/v3/projects", "project", json!({"name": format!("{name}-p")})).await;
    let user = t.create("/v3/users", "user", json!({"name": name, "password": "pw"})).await;
    let roles = t.admin(Method::GET, "/v3/roles?name=member", None).await;
    let role = roles.body["roles"][0]["id"].as_str().unwrap().to_string();
    t.admin(Method::PUT, &format!("/v3/projects/{project}/users/{user}/roles/{role}"), None).await;
    let token = t.token_for_id(&user, "pw", json!({"project": {"id": project}})).await;
    Member { user, project, token }
}

async fn auth_with(t: &TestNode, cred: Value) -> Reply {
    let body = json!({"auth": {"identity": {"methods": ["application_credential"], "application_credential": cred}}});
    t.call(Method::POST, "/v3/auth/tokens", None, Some(body)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credential_tokens_carry_the_credentials_roles_and_die_with_it() {
    let t = TestNode::start().await;
    let m = member(&t, "kube").await;
    let url = format!("/v3/users/{}/application_credentials", m.user);
    let r = t.call(Method::POST, &url, Some(&m.token), Some(json!({"application_credential": {"name": "ci"}}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let ac = r.body["application_credential"].clone();
    let (id, secret) = (ac["id"].as_str().unwrap().to_string(), ac["secret"].as_str().unwrap().to_string());
    assert_eq!(secret.len(), 86);
    assert_eq!(ac["project_id"], json!(m.project));
    let names: Vec<&str> = ac["roles"].as_array().unwrap().iter().filter_map(|r| r["name"].as_str()).collect();
    assert!(names.contains(&"member") && names.contains(&"reader"), "{names:?}");
    assert_eq!(ac.get("access_rules"), None, "no rules, no key");
    let shown = t.call(Method::GET, &format!("{url}/{id}"), Some(&m.token), None).await;
    assert_eq!(shown.body["application_credential"].get("secret"), None);
    let dup = t.call(Method::POST, &url, Some(&m.token), Some(json!({"application_credential": {"name": "ci"}}))).await;
    assert_eq!(dup.status, StatusCode::CONFLICT);

    let r = auth_with(&t, json!({"id": id, "secret": secret})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["token"]["project"]["id"], json!(m.project));
    assert_eq!(r.body["token"]["methods"], json!(["application_credential"]));
    assert_eq!(r.body["token"]["application_credential"], json!({"id": id, "name": "ci", "restricted": true}));
    let ac_token = r.headers["x-subject-token"].to_str().unwrap().to_string();
    // By name and owner, too; a wrong secret or a scope is refused.
    let by_name = auth_with(&t, json!({"name": "ci", "secret": secret, "user": {"id": m.user}})).await;
    assert_eq!(by_name.status, StatusCode::OK);
    assert_eq!(auth_with(&t, json!({"id": id, "secret": "wrong"})).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(auth_with(&t, json!({"id": "nope", "secret": "x"})).await.status, StatusCode::NOT_FOUND);
    let scoped = json!({"auth": {"identity": {"methods": ["application_credential"], "application_credential": {"id": id, "secret": secret}}, "scope": {"project": {"id": m.project}}}});
    assert_eq!(t.call(Method::POST, "/v3/auth/tokens", None, Some(scoped)).await.status, StatusCode::UNAUTHORIZED);
    // A restricted credential's token cannot make more credentials, nor be re-scoped.
    let more =
        t.call(Method::POST, &url, Some(&ac_token), Some(json!({"application_credential": {"name": "more"}}))).await;
    assert_eq!(more.status, StatusCode::FORBIDDEN);
    let rescope = json!({"auth": {"identity": {"methods": ["token"], "token": {"id": ac_token}}}});
    assert_eq!(t.call(Method::POST, "/v3/auth/tokens", None, Some(rescope)).await.status, StatusCode::FORBIDDEN);
    // Deleting the credential kills its tokens.
    assert_eq!(
        t.call(Method::DELETE, &format!("{url}/{id}"), Some(&m.token), None).await.status,
        StatusCode::NO_CONTENT
    );
    let v = t.admin(Method::GET, &format!("/v3/auth/tokens#{ac_token}"), None).await;
    assert_eq!(v.status, StatusCode::NOT_FOUND);
    assert_eq!(auth_with(&t, json!({"id": id, "secret": secret})).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_expiry_and_access_rules() {
    let t = TestNode::start().await;
    let m = member(&t, "tf").await;
    let other = member(&t, "other").await;
    let url = format!("/v3/users/{}/application_credentials", m.user);
    let post = |body: Value| {
        let (url, token) = (url.clone(), m.token.clone());
        let t = &t;
        async move { t.call(Method::POST, &url, Some(&token), Some(json!({"application_credential": body}))).await }
    };
    let admin_role = t.admin(Method::GET, "/v3/roles?name=admin", None).await.body["roles"][0]["id"].clone();
    let r = post(json!({"name": "x", "roles": [{"id": admin_role}]})).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "a role the creator lacks: {}", r.body);
    assert_eq!(post(json!({"name": "x", "roles": [{"name": "nosuch"}]})).await.status, StatusCode::NOT_FOUND);
    assert_eq!(post(json!({"name": "x", "expires_at": "bad.123Z"})).await.status, StatusCode::BAD_REQUEST);
    assert_eq!(post(json!({"name": "x", "expires_at": "2001-01-01T00:00:00"})).await.status, StatusCode::BAD_REQUEST);
    assert_eq!(post(json!({"name": "x", "bogus": 1})).await.status, StatusCode::BAD_REQUEST);
    let r = post(json!({"name": "r", "roles": [{"name": "reader"}], "expires_at": "2099-01-02T03:04:05.123456"})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["application_credential"]["expires_at"], json!("2099-01-02T03:04:05.123456"));
    let names: Vec<&str> = r.body["application_credential"]["roles"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, ["reader"]);
    let cred =
        json!({"id": r.body["application_credential"]["id"], "secret": r.body["application_credential"]["secret"]});
    let tok = auth_with(&t, cred).await;
    let roles: Vec<&str> =
        tok.body["token"]["roles"].as_array().unwrap().iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(roles, ["reader"], "only the credential's roles");

    // Another user cannot create for this one, nor read its credentials.
    let r =
        t.call(Method::POST, &url, Some(&other.token), Some(json!({"application_credential": {"name": "y"}}))).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(t.call(Method::GET, &url, Some(&other.token), None).await.status, StatusCode::FORBIDDEN);

    // Access rules are reused, listed, and kept until no credential uses them.
    let rule = json!({"path": "/v2.1/servers/*/ips", "method": "GET", "service": "compute"});
    let r = post(json!({"name": "ruled", "access_rules": [rule]})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let mut got = r.body["application_credential"]["access_rules"][0].clone();
    let rule_id = got.as_object_mut().unwrap().remove("id").unwrap();
    assert_eq!(got, rule);
    let again = post(json!({"name": "ruled2", "access_rules": [rule]})).await;
    assert_eq!(again.body["application_credential"]["access_rules"][0]["id"], rule_id, "the same rule is reused");
    let rules_url = format!("/v3/users/{}/access_rules", m.user);
    assert_eq!(
        t.call(Method::GET, &rules_url, Some(&m.token), None).await.body["access_rules"].as_array().unwrap().len(),
        1
    );
    let rule_url = format!("{rules_url}/{}", rule_id.as_str().unwrap());
    let r = t.call(Method::DELETE, &rule_url, Some(&m.token), None).await;
    assert_eq!(
        (r.status, r.body["error"]["message"].as_str()),
        (StatusCode::FORBIDDEN, Some("May not delete access rule in use"))
    );
    for name in ["ruled", "ruled2"] {
        let list = t.call(Method::GET, &format!("{url}?name={name}"), Some(&m.token), None).await;
        let id = list.body["application_credentials"][0]["id"].as_str().unwrap().to_string();
        assert_eq!(
            t.call(Method::DELETE, &format!("{url}/{id}"), Some(&m.token), None).await.status,
            StatusCode::NO_CONTENT
        );
    }
    assert_eq!(
        t.call(Method::GET, &rule_url, Some(&m.token), None).await.status,
        StatusCode::OK,
        "the rule outlives them"
    );
    assert_eq!(t.call(Method::DELETE, &rule_url, Some(&m.token), None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(t.call(Method::GET, &rule_url, Some(&m.token), None).await.status, StatusCode::NOT_FOUND);

    // Deleting the user deletes its credentials.
    assert_eq!(t.admin(Method::DELETE, &format!("/v3/users/{}", m.user), None).await.status, StatusCode::NO_CONTENT);
    let view = t.node.engine.read();
    use crate::state::Reader;
    assert!(view.child_docs(crate::state::model::DocKind::ApplicationCredential, &m.user).unwrap().is_empty());
}
