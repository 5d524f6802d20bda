//! `/v3/registered_limits`, `/v3/limits` and `/v3/limits/model` through the real router:
//! shapes, Keystone's 400s, the listing per scope, and the strict model's depth rule.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::testkit::TestNode;

const PW: &str = "limits test pw";

async fn setup(t: &TestNode) -> (String, String) {
    let service = t.create("/v3/services", "service", json!({"type": "compute"})).await;
    let r = t.admin(Method::POST, "/v3/regions", Some(json!({"region": {"id": "RegionLim"}}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let r = t
        .admin(
            Method::POST,
            "/v3/registered_limits",
            Some(json!({"registered_limits": [
                {"service_id": service, "region_id": "RegionLim", "resource_name": "cores", "default_limit": 10,
                 "description": "cores"}]})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert!(r.body.get("links").is_none(), "a create shows no collection links");
    let reg = r.body["registered_limits"][0].clone();
    assert_eq!(reg["resource_name"], "cores");
    assert_eq!(reg["default_limit"], 10);
    assert!(reg["links"]["self"]
        .as_str()
        .unwrap()
        .ends_with(&format!("/v3/registered_limits/{}", reg["id"].as_str().unwrap())));
    (service, reg["id"].as_str().unwrap().to_string())
}

fn limit_body(service: &str, owner: (&str, &str), value: i64) -> Value {
    json!({"limits": [{"service_id": service, "region_id": "RegionLim", "resource_name": "cores",
                       "resource_limit": value, owner.0: owner.1}]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registered_limits_and_limits_round_trip() {
    let t = TestNode::start().await;
    let (service, reg_id) = setup(&t).await;
    let r =
        t.admin(Method::GET, &format!("/v3/registered_limits?service_id={service}&resource_name=cores"), None).await;
    assert_eq!(r.body["registered_limits"].as_array().unwrap().len(), 1, "{}", r.body);
    let r = t.admin(Method::GET, "/v3/registered_limits?resource_name=ram", None).await;
    assert_eq!(r.body["registered_limits"], json!([]));

    let d = t.create("/v3/domains", "domain", json!({"name": "limd"})).await;
    let p = t.create("/v3/projects", "project", json!({"name": "limp", "domain_id": d})).await;
    let r = t.admin(Method::POST, "/v3/limits", Some(limit_body(&service, ("project_id", &p), 5))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let lim = r.body["limits"][0].clone();
    assert_eq!((lim["project_id"].as_str(), lim["domain_id"].clone()), (Some(p.as_str()), Value::Null));
    assert_eq!(lim["service_id"], json!(service));
    let id = lim["id"].as_str().unwrap().to_string();

    // Duplicate for the same project: 409; no registered limit: 403; in use: 403.
    let r = t.admin(Method::POST, "/v3/limits", Some(limit_body(&service, ("project_id", &p), 6))).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    let mut orphan = limit_body(&service, ("project_id", &p), 6);
    orphan["limits"][0]["resource_name"] = json!("ram");
    assert_eq!(t.admin(Method::POST, "/v3/limits", Some(orphan)).await.status, StatusCode::FORBIDDEN);
    let path = format!("/v3/registered_limits/{reg_id}");
    let r = t.admin(Method::PATCH, &path, Some(json!({"registered_limit": {"default_limit": 3}}))).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert_eq!(t.admin(Method::DELETE, &path, None).await.status, StatusCode::FORBIDDEN);

    let r = t
        .admin(
            Method::PATCH,
            &format!("/v3/limits/{id}"),
            Some(json!({"limit": {"resource_limit": 7, "description": "x"}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        (r.body["limit"]["resource_limit"].clone(), r.body["limit"]["description"].clone()),
        (json!(7), json!("x"))
    );
    let r = t.admin(Method::GET, &format!("/v3/limits?project_id={p}"), None).await;
    assert_eq!(r.body["limits"].as_array().unwrap().len(), 1, "{}", r.body);

    // Deleting the project takes its limits; then the registered limit may go.
    let r = t.admin(Method::DELETE, &format!("/v3/projects/{p}"), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    assert_eq!(t.admin(Method::GET, &format!("/v3/limits/{id}"), None).await.status, StatusCode::NOT_FOUND);
    t.delete_then_gone(&path).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_are_checked_as_keystone_checks_them() {
    let t = TestNode::start().await;
    let (service, _) = setup(&t).await;
    let bad = [
        json!({}),
        json!({"registered_limits": []}),
        json!({"registered_limits": {}}),
        json!({"registered_limits": [{"service_id": service, "resource_name": "x"}]}),
        json!({"registered_limits": [{"service_id": service, "resource_name": "x", "default_limit": -2}]}),
        json!({"registered_limits": [{"service_id": service, "resource_name": "x", "default_limit": "5"}]}),
        json!({"registered_limits": [{"service_id": service, "resource_name": " ", "default_limit": 5}]}),
        json!({"registered_limits": [{"service_id": service, "resource_name": "x", "default_limit": 5, "id": "a"}]}),
        json!({"registered_limits": [{"service_id": "nope", "resource_name": "x", "default_limit": 5}]}),
    ];
    for body in bad {
        let r = t.admin(Method::POST, "/v3/registered_limits", Some(body.clone())).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {}", r.body);
    }
    let r = t
        .admin(
            Method::POST,
            "/v3/registered_limits",
            Some(json!({"registered_limits": [{"service_id": service,
            "resource_name": "x", "default_limit": 5, "id": "a"}]})),
        )
        .await;
    assert!(r.body["error"]["message"].as_str().unwrap().contains("('id' was unexpected)"), "{}", r.body);
    let p = t.create("/v3/projects", "project", json!({"name": "bp", "domain_id": "default"})).await;
    let mut both = limit_body(&service, ("project_id", &p), 1);
    both["limits"][0]["domain_id"] = json!("default");
    let mut neither = limit_body(&service, ("project_id", &p), 1);
    neither["limits"][0].as_object_mut().unwrap().remove("project_id");
    for body in [both, neither, json!({"limits": [{"project_id": p, "service_id": service, "resource_name": "cores"}]})]
    {
        let r = t.admin(Method::POST, "/v3/limits", Some(body.clone())).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}: {}", r.body);
    }
    let r = t.admin(Method::PATCH, "/v3/limits/x", Some(json!({"limit": {"resource_name": "y"}}))).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listing_shows_what_the_scope_covers() {
    let t = TestNode::start().await;
    let (service, _) = setup(&t).await;
    let member = t.create("/v3/roles", "role", json!({"name": "limits-reader"})).await;
    let d = t.create("/v3/domains", "domain", json!({"name": "ld"})).await;
    let p1 = t.create("/v3/projects", "project", json!({"name": "l1", "domain_id": d})).await;
    let p2 = t.create("/v3/projects", "project", json!({"name": "l2", "domain_id": "default"})).await;
    let u = t.create("/v3/users", "user", json!({"name": "lu", "domain_id": d, "password": PW})).await;
    for target in [format!("projects/{p1}"), format!("domains/{d}")] {
        let grant = format!("/v3/{target}/users/{u}/roles/{member}");
        assert_eq!(t.admin(Method::PUT, &grant, None).await.status, StatusCode::NO_CONTENT);
    }
    let mut ids = Vec::new();
    for owner in [("project_id", p1.as_str()), ("project_id", p2.as_str()), ("domain_id", d.as_str())] {
        let r = t.admin(Method::POST, "/v3/limits", Some(limit_body(&service, owner, 5))).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        ids.push(r.body["limits"][0]["id"].as_str().unwrap().to_string());
    }
    let listed = |token: String| {
        let t = &t;
        async move {
            let r = t.call(Method::GET, "/v3/limits", Some(&token), None).await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.body);
            let mut v: Vec<String> =
                r.body["limits"].as_array().unwrap().iter().map(|l| l["id"].as_str().unwrap().to_string()).collect();
            v.sort();
            v
        }
    };
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    let on_p1 = t.token_for_id(&u, PW, json!({"project": {"id": p1}})).await;
    assert_eq!(listed(on_p1.clone()).await, vec![ids[0].clone()]);
    let on_d = t.token_for_id(&u, PW, json!({"domain": {"id": d}})).await;
    assert_eq!(listed(on_d.clone()).await, sorted(vec![ids[0].clone(), ids[2].clone()]));
    assert_eq!(listed(t.admin.clone()).await, sorted(ids.clone()));
    // Reading one: its own project's or domain's, not another's.
    let get = |token: &str, id: &str| {
        let (t, token, path) = (&t, token.to_string(), format!("/v3/limits/{id}"));
        async move { t.call(Method::GET, &path, Some(&token), None).await.status }
    };
    assert_eq!(get(&on_p1, &ids[0]).await, StatusCode::OK);
    assert_eq!(get(&on_p1, &ids[1]).await, StatusCode::FORBIDDEN);
    assert_eq!(get(&on_d, &ids[0]).await, StatusCode::OK);
    assert_eq!(get(&on_d, &ids[2]).await, StatusCode::OK);
    assert_eq!(get(&on_d, "nope").await, StatusCode::FORBIDDEN);
    assert_eq!(get(&t.admin, "nope").await, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_follows_the_setting() {
    let t = TestNode::start().await;
    let r = t.admin(Method::GET, "/v3/limits/model", None).await;
    assert_eq!(r.body["model"]["name"], "flat", "{}", r.body);
    let t = TestNode::start_with(&[("unified_limit", "enforcement_model", "strict_two_level")]).await;
    let r = t.admin(Method::GET, "/v3/limits/model", None).await;
    assert_eq!(r.body["model"]["name"], "strict_two_level", "{}", r.body);
    assert!(r.body["model"]["description"].as_str().unwrap().contains("depth of two"));
    // Projects nest two deep under their domain, no deeper.
    let a = t.create("/v3/projects", "project", json!({"name": "a", "domain_id": "default"})).await;
    let b = t.create("/v3/projects", "project", json!({"name": "b", "parent_id": a})).await;
    let r = t.admin(Method::POST, "/v3/projects", Some(json!({"project": {"name": "c", "parent_id": b}}))).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert!(r.body["error"]["message"].as_str().unwrap().contains("Max hierarchy depth"), "{}", r.body);
}
