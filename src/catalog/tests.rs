//! HTTP-level tests of policy blobs, OS-EP-FILTER and OAuth1 consumers and domain
//! configuration, against an in-process node.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::testkit::TestNode;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_crud_with_pages() {
    let t = TestNode::start().await;
    let bad = t.admin(Method::POST, "/v3/policies", Some(json!({"policy": {"type": "application/json"}}))).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    let mut ids = Vec::new();
    for i in 0..3 {
        let body =
            json!({"policy": {"blob": format!("{{\"rule{i}\": \"\"}}"), "type": "application/json", "team": "x"}});
        let r = t.admin(Method::POST, "/v3/policies", Some(body)).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        assert_eq!(r.body["policy"]["team"], json!("x"), "extra attributes are kept");
        ids.push(r.body["policy"]["id"].as_str().unwrap().to_string());
    }
    ids.sort();
    let page = t.admin(Method::GET, "/v3/policies?limit=2", None).await;
    let got: Vec<&str> = page.body["policies"].as_array().unwrap().iter().map(|p| p["id"].as_str().unwrap()).collect();
    assert_eq!(got, &ids[..2]);
    let next = page.body["links"]["next"].as_str().expect("a next link");
    let path = next.split_once("/v3/").map(|(_, p)| format!("/v3/{p}")).unwrap();
    let rest = t.admin(Method::GET, &path, None).await;
    assert_eq!(rest.body["policies"][0]["id"], json!(ids[2]));
    assert_eq!(rest.body["links"]["next"], Value::Null);
    let r = t
        .admin(Method::PATCH, &format!("/v3/policies/{}", ids[0]), Some(json!({"policy": {"type": "text/plain"}})))
        .await;
    assert_eq!((r.status, &r.body["policy"]["type"]), (StatusCode::OK, &json!("text/plain")));
    let typed = t.admin(Method::GET, "/v3/policies?type=text/plain", None).await;
    assert_eq!(typed.body["policies"].as_array().unwrap().len(), 1);
    assert_eq!(t.admin(Method::DELETE, &format!("/v3/policies/{}", ids[0]), None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(t.admin(Method::GET, &format!("/v3/policies/{}", ids[0]), None).await.status, StatusCode::NOT_FOUND);
    // A member of a project is not an administrator.
    let user = t.create("/v3/users", "user", json!({"name": "m", "password": "pw"})).await;
    let token = t.token_for_id(&user, "pw", Value::Null).await;
    let r =
        t.call(Method::POST, "/v3/policies", Some(&token), Some(json!({"policy": {"blob": "{}", "type": "t"}}))).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endpoint_groups_filter_a_projects_catalog() {
    let t = TestNode::start().await;
    let svc = t.create("/v3/services", "service", json!({"type": "compute", "name": "nova"})).await;
    let ep = t
        .create("/v3/endpoints", "endpoint", json!({"service_id": svc, "interface": "public", "url": "http://nova"}))
        .await;
    for bad in [
        json!({"endpoint_group": {"name": "g"}}),
        json!({"endpoint_group": {"name": "g", "filters": {}}}),
        json!({"endpoint_group": {"name": "g", "filters": {"enabled": true}}}),
        json!({"endpoint_group": {"name": "g", "filters": {"interface": "sideways"}}}),
    ] {
        assert_eq!(
            t.admin(Method::POST, "/v3/OS-EP-FILTER/endpoint_groups", Some(bad.clone())).await.status,
            StatusCode::BAD_REQUEST,
            "{bad}"
        );
    }
    let r = t
        .admin(
            Method::POST,
            "/v3/OS-EP-FILTER/endpoint_groups",
            Some(json!({"endpoint_group": {"name": "compute", "filters": {"service_id": svc}}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let group = r.body["endpoint_group"].clone();
    let gid = group["id"].as_str().unwrap().to_string();
    let listed = t.admin(Method::GET, "/v3/OS-EP-FILTER/endpoint_groups", None).await;
    assert_eq!(listed.body["endpoint_groups"], json!([group]), "list entries equal the create response");
    assert_eq!(
        t.admin(Method::HEAD, &format!("/v3/OS-EP-FILTER/endpoint_groups/{gid}"), None).await.status,
        StatusCode::OK
    );
    let eps = t.admin(Method::GET, &format!("/v3/OS-EP-FILTER/endpoint_groups/{gid}/endpoints"), None).await;
    assert_eq!(eps.body["endpoints"][0]["id"], json!(ep));

    // A project tied to the group sees only the group's endpoints in its catalog.
    let project = t.create("/v3/projects", "project", json!({"name": "p1"})).await;
    let user = t.create("/v3/users", "user", json!({"name": "u1", "password": "pw"})).await;
    let member =
        t.admin(Method::GET, "/v3/roles?name=member", None).await.body["roles"][0]["id"].as_str().unwrap().to_string();
    t.admin(Method::PUT, &format!("/v3/projects/{project}/users/{user}/roles/{member}"), None).await;
    let scope = json!({"project": {"id": project}});
    let count = |body: &Value| {
        body["token"]["catalog"]
            .as_array()
            .map(|c| c.iter().map(|s| s["endpoints"].as_array().unwrap().len()).sum::<usize>())
            .unwrap_or(0)
    };
    let before = t.call(Method::POST, "/v3/auth/tokens", None, Some(json!({"auth": {"identity": {"methods": ["password"], "password": {"user": {"id": user, "password": "pw"}}}, "scope": scope}}))).await;
    assert!(count(&before.body) > 1, "every endpoint before: {}", before.body);
    let tie = format!("/v3/OS-EP-FILTER/endpoint_groups/{gid}/projects/{project}");
    assert_eq!(t.admin(Method::PUT, &tie, None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(t.admin(Method::GET, &tie, None).await.status, StatusCode::OK);
    let after = t.call(Method::POST, "/v3/auth/tokens", None, Some(json!({"auth": {"identity": {"methods": ["password"], "password": {"user": {"id": user, "password": "pw"}}}, "scope": scope}}))).await;
    assert_eq!(count(&after.body), 1, "{}", after.body);
    let services: Vec<&Value> = after.body["token"]["catalog"].as_array().unwrap().iter().map(|s| &s["type"]).collect();
    assert_eq!(services, vec![&json!("compute")], "a service left without endpoints is not listed, as in Keystone");
    let listed = t.admin(Method::GET, &format!("/v3/OS-EP-FILTER/projects/{project}/endpoints"), None).await;
    assert_eq!(listed.body["endpoints"][0]["id"], json!(ep));
    // Deleting the group deletes the tie.
    assert_eq!(
        t.admin(Method::DELETE, &format!("/v3/OS-EP-FILTER/endpoint_groups/{gid}"), None).await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(t.admin(Method::GET, &tie, None).await.status, StatusCode::NOT_FOUND);
    // Direct project endpoints.
    let direct = format!("/v3/OS-EP-FILTER/projects/{project}/endpoints/{ep}");
    assert_eq!(t.admin(Method::GET, &direct, None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(t.admin(Method::PUT, &direct, None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(t.admin(Method::GET, &direct, None).await.status, StatusCode::NO_CONTENT);
    let projects = t.admin(Method::GET, &format!("/v3/OS-EP-FILTER/endpoints/{ep}/projects"), None).await;
    assert_eq!(projects.body["projects"][0]["id"], json!(project));
    assert_eq!(
        t.admin(Method::PUT, "/v3/OS-EP-FILTER/projects/nope/endpoints/x", None).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(t.admin(Method::DELETE, &direct, None).await.status, StatusCode::NO_CONTENT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumers_show_their_secret_once() {
    let t = TestNode::start().await;
    let r = t.admin(Method::POST, "/v3/OS-OAUTH1/consumers", Some(json!({"consumer": {"description": "d"}}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.body["consumer"]["id"].as_str().unwrap().to_string();
    assert!(r.body["consumer"]["secret"].as_str().is_some_and(|s| s.len() >= 32));
    let got = t.admin(Method::GET, &format!("/v3/OS-OAUTH1/consumers/{id}"), None).await;
    assert_eq!(got.body["consumer"].get("secret"), None);
    assert_eq!(got.body["consumer"]["links"], r.body["consumer"]["links"]);
    let bad = t
        .admin(Method::PATCH, &format!("/v3/OS-OAUTH1/consumers/{id}"), Some(json!({"consumer": {"secret": "x"}})))
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    let r = t
        .admin(
            Method::PATCH,
            &format!("/v3/OS-OAUTH1/consumers/{id}"),
            Some(json!({"consumer": {"description": "d2"}})),
        )
        .await;
    assert_eq!(r.body["consumer"]["description"], json!("d2"));
    assert_eq!(
        t.admin(Method::DELETE, &format!("/v3/OS-OAUTH1/consumers/{id}"), None).await.status,
        StatusCode::NO_CONTENT
    );
    assert_eq!(
        t.admin(Method::GET, &format!("/v3/OS-OAUTH1/consumers/{id}"), None).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn domain_config_groups_options_and_secrets() {
    let t = TestNode::start().await;
    let d = t.create("/v3/domains", "domain", json!({"name": "ldapish"})).await;
    let url = format!("/v3/domains/{d}/config");
    assert_eq!(t.admin(Method::GET, &url, None).await.status, StatusCode::NOT_FOUND);
    let config = json!({"identity": {"driver": "ldap"}, "ldap": {"url": "ldap://x:389/", "user_tree_dn": "ou=Users"}});
    let mut with_secret = config.clone();
    with_secret["ldap"]["password"] = json!("hunter2");
    let r = t.admin(Method::PUT, &url, Some(json!({"config": with_secret}))).await;
    assert_eq!((r.status, &r.body["config"]), (StatusCode::CREATED, &config), "the password is never shown");
    assert_eq!(t.admin(Method::PUT, &url, Some(json!({"config": config}))).await.status, StatusCode::OK);
    let bad = t.admin(Method::PUT, &url, Some(json!({"config": {"assignment": {"driver": "x"}}}))).await;
    assert_eq!(bad.status, StatusCode::FORBIDDEN);
    let r = t.admin(Method::GET, &format!("{url}/ldap/url"), None).await;
    assert_eq!(r.body, json!({"config": {"url": "ldap://x:389/"}}));
    let r = t
        .admin(
            Method::PATCH,
            &format!("{url}/identity"),
            Some(json!({"config": {"identity": {"driver": "sql", "list_limit": 5}}})),
        )
        .await;
    assert_eq!((r.status, &r.body["config"]["identity"]), (StatusCode::OK, &json!({"driver": "sql", "list_limit": 5})));
    assert_eq!(t.admin(Method::DELETE, &format!("{url}/identity/driver"), None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(t.admin(Method::GET, &format!("{url}/identity/driver"), None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(t.admin(Method::DELETE, &format!("{url}/identity"), None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(t.admin(Method::GET, &format!("{url}/identity"), None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(t.admin(Method::DELETE, &url, None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(t.admin(Method::GET, &url, None).await.status, StatusCode::NOT_FOUND);
    let defaults = t.admin(Method::GET, "/v3/domains/config/ldap/user_tree_dn/default", None).await;
    assert_eq!(defaults.body, json!({"config": {"user_tree_dn": null}}));
    let defaults = t.admin(Method::GET, "/v3/domains/config/default", None).await;
    assert_eq!(defaults.body["config"]["identity"]["driver"], json!("sql"));
}
