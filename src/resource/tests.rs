//! HTTP-level tests of the Keystone behaviours tempest exercises on domains, projects, project
//! tags and a user's projects, against an in-process node.

use axum::http::{Method, StatusCode};
use serde_json::json;

use crate::state::Reader;
use crate::testkit::TestNode;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn domain_description_defaults_to_empty_string() {
    let t = TestNode::start().await;
    let r = t.admin(Method::POST, "/v3/domains", Some(json!({"domain": {"name": "no-desc"}}))).await;
    assert_eq!((r.status, &r.body["domain"]["description"]), (StatusCode::CREATED, &json!("")), "{}", r.body);
    let r =
        t.admin(Method::POST, "/v3/domains", Some(json!({"domain": {"name": "null-desc", "description": null}}))).await;
    assert_eq!(r.body["domain"]["description"], json!(null), "an explicit null stays null");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn project_tags_add_check_replace_delete() {
    let t = TestNode::start().await;
    let p = t.create("/v3/projects", "project", json!({"name": "tagged"})).await;
    let tags = format!("/v3/projects/{p}/tags");
    let r = t.admin(Method::PUT, &format!("{tags}/blue"), None).await;
    assert_eq!((r.status, &r.body), (StatusCode::CREATED, &json!(null)), "201 without a body");
    assert_eq!(t.admin(Method::PUT, &format!("{tags}/blue"), None).await.status, StatusCode::CREATED, "idempotent");
    assert_eq!(t.admin(Method::GET, &format!("{tags}/blue"), None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(t.admin(Method::GET, &tags, None).await.body, json!({"tags": ["blue"]}));

    let r = t.admin(Method::PUT, &tags, Some(json!({"tags": ["a", "b", "a"]}))).await;
    assert_eq!((r.status, &r.body), (StatusCode::OK, &json!({"tags": ["a", "b"]})));
    let project = t.admin(Method::GET, &format!("/v3/projects/{p}"), None).await;
    assert_eq!(project.body["project"]["tags"], json!(["a", "b"]), "tags are the project's field");
    assert_eq!(t.admin(Method::DELETE, &format!("{tags}/a"), None).await.status, StatusCode::NO_CONTENT);
    let gone = t.admin(Method::GET, &format!("{tags}/a"), None).await;
    assert_eq!((gone.status, gone.body["error"]["code"].as_u64()), (StatusCode::NOT_FOUND, Some(404)));
    assert_eq!(t.admin(Method::DELETE, &format!("{tags}/a"), None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(t.admin(Method::DELETE, &tags, None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(t.admin(Method::GET, &tags, None).await.body, json!({"tags": []}));

    // Keystone's limits; a refused request leaves the tags as they were.
    t.admin(Method::PUT, &tags, Some(json!({"tags": ["keep"]}))).await;
    for bad in [
        json!({"tags": ["a,b"]}),
        json!({"tags": [""]}),
        json!({"tags": ["x".repeat(256)]}),
        json!({"tags": 5}),
        json!({}),
    ] {
        let r = t.admin(Method::PUT, &tags, Some(bad.clone())).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad}: {}", r.body);
    }
    let many: Vec<String> = (0..81).map(|i| format!("t{i}")).collect();
    assert_eq!(t.admin(Method::PUT, &tags, Some(json!({"tags": many}))).await.status, StatusCode::BAD_REQUEST);
    let r =
        t.admin(Method::POST, "/v3/projects", Some(json!({"project": {"name": "bad-tags", "tags": ["a/b"]}}))).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(t.admin(Method::GET, &tags, None).await.body, json!({"tags": ["keep"]}));
    assert_eq!(t.admin(Method::GET, "/v3/projects/nope/tags", None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(t.admin(Method::GET, "/v3/projects/default/tags", None).await.status, StatusCode::NOT_FOUND, "a domain");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_projects_are_those_it_holds_a_role_on() {
    let t = TestNode::start().await;
    let (p1, p2, p3) = (
        t.create("/v3/projects", "project", json!({"name": "p1"})).await,
        t.create("/v3/projects", "project", json!({"name": "p2", "enabled": false})).await,
        t.create("/v3/projects", "project", json!({"name": "p3"})).await,
    );
    let u = t.create("/v3/users", "user", json!({"name": "u", "password": "long enough pw"})).await;
    let g = t.create("/v3/groups", "group", json!({"name": "g"})).await;
    let member = t.node.engine.read().id_by_name(crate::state::keys::ns::ROLE_NAME, "", "member").unwrap().unwrap();
    for path in [
        format!("/v3/projects/{p1}/users/{u}/roles/{member}"),
        format!("/v3/groups/{g}/users/{u}"),
        format!("/v3/projects/{p2}/groups/{g}/roles/{member}"),
    ] {
        assert_eq!(t.admin(Method::PUT, &path, None).await.status, StatusCode::NO_CONTENT, "{path}");
    }

    let ids = |body: &serde_json::Value| {
        let mut v: Vec<String> =
            body["projects"].as_array().unwrap().iter().map(|p| p["id"].as_str().unwrap().to_string()).collect();
        v.sort();
        v
    };
    let mut both = vec![p1.clone(), p2.clone()];
    both.sort();
    let r = t.admin(Method::GET, &format!("/v3/users/{u}/projects"), None).await;
    assert_eq!((r.status, ids(&r.body)), (StatusCode::OK, both), "direct and group grants, disabled included");
    let r = t.admin(Method::GET, &format!("/v3/users/{u}/projects?enabled=true"), None).await;
    assert_eq!(ids(&r.body), vec![p1.clone()]);
    assert!(!ids(&r.body).contains(&p3));
    let own = t.token_for_id(&u, "long enough pw", json!({"project": {"id": p1}})).await;
    let r = t.call(Method::GET, &format!("/v3/users/{u}/projects"), Some(&own), None).await;
    assert_eq!(r.status, StatusCode::OK, "a user lists its own projects");
    let info = t.node.engine.read().bootstrap_info().unwrap().unwrap();
    let r = t.call(Method::GET, &format!("/v3/users/{}/projects", info.admin_user_id), Some(&own), None).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "but not another user's");
    assert_eq!(t.admin(Method::GET, "/v3/users/nobody/projects", None).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_list_pages_by_limit_and_marker() {
    let t = TestNode::start().await;
    for i in 0..3 {
        t.create("/v3/projects", "project", json!({"name": format!("paged-{i}")})).await;
        t.create("/v3/users", "user", json!({"name": format!("paged-{i}")})).await;
    }
    for (path, key) in
        [("/v3/projects", "projects"), ("/v3/users", "users"), ("/v3/roles", "roles"), ("/v3/domains", "domains")]
    {
        let all = t.admin(Method::GET, path, None).await.body[key].as_array().unwrap().len();
        let mut seen = 0;
        let mut next = Some(format!("{path}?limit=2"));
        while let Some(url) = next {
            let r = t.admin(Method::GET, &url, None).await;
            assert_eq!(r.status, StatusCode::OK, "{url}: {}", r.body);
            let n = r.body[key].as_array().unwrap().len();
            assert!(n <= 2);
            seen += n;
            next = r.body["links"]["next"]
                .as_str()
                .map(|u| u.split_once("/v3/").map(|(_, p)| format!("/v3/{p}")).unwrap());
        }
        assert_eq!(seen, all, "{path}: the pages hold every item once");
    }
    let bad = t.admin(Method::GET, "/v3/projects?limit=0", None).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
}
