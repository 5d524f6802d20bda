//! HTTP-level tests of groups, membership, password change and federated users, against an
//! in-process node.

use axum::http::StatusCode;
use serde_json::json;

use crate::testkit::methods::{DELETE, GET, HEAD, PATCH, POST, PUT};
use crate::testkit::TestNode;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_crud() {
    let t = TestNode::start().await;
    let r = t.admin(POST, "/v3/groups", Some(json!({"group": {"name": "ops", "description": "d", "team": "x"}}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let g = r.body["group"].clone();
    assert_eq!(
        (g["name"].as_str(), g["domain_id"].as_str(), g["team"].as_str()),
        (Some("ops"), Some("default"), Some("x"))
    );
    let id = g["id"].as_str().unwrap().to_string();
    let dup = t.admin(POST, "/v3/groups", Some(json!({"group": {"name": "OPS"}}))).await;
    assert_eq!(dup.status, StatusCode::CONFLICT);
    assert_eq!(dup.body["error"]["code"], 409);
    assert_eq!(t.admin(POST, "/v3/groups", Some(json!({"group": {}}))).await.status, StatusCode::BAD_REQUEST);
    assert_eq!(t.admin(POST, "/v3/groups", Some(json!({"group": {"name": 5}}))).await.status, StatusCode::BAD_REQUEST);
    let orphan = t.admin(POST, "/v3/groups", Some(json!({"group": {"name": "x", "domain_id": "nope"}}))).await;
    assert_eq!(orphan.status, StatusCode::NOT_FOUND);
    assert_eq!(
        t.call(POST, "/v3/groups", None, Some(json!({"group": {"name": "y"}}))).await.status,
        StatusCode::UNAUTHORIZED
    );

    let got = t.admin(GET, &format!("/v3/groups/{id}"), None).await;
    assert_eq!((got.status, got.body["group"]["id"].as_str()), (StatusCode::OK, Some(id.as_str())));
    assert_eq!(t.admin(GET, "/v3/groups/nope", None).await.status, StatusCode::NOT_FOUND);
    let patched = t.admin(PATCH, &format!("/v3/groups/{id}"), Some(json!({"group": {"name": "ops2"}}))).await;
    assert_eq!((patched.status, patched.body["group"]["name"].as_str()), (StatusCode::OK, Some("ops2")));
    let moved = t.admin(PATCH, &format!("/v3/groups/{id}"), Some(json!({"group": {"domain_id": "other"}}))).await;
    assert_eq!(moved.status, StatusCode::BAD_REQUEST);
    assert_eq!(t.admin(PATCH, "/v3/groups/nope", Some(json!({"group": {}}))).await.status, StatusCode::NOT_FOUND);

    t.create("/v3/groups", "group", json!({"name": "dev"})).await;
    let names = |v: &serde_json::Value| -> Vec<String> {
        v["groups"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap().to_string()).collect()
    };
    let all = t.admin(GET, "/v3/groups", None).await;
    assert_eq!(all.body["groups"].as_array().map(Vec::len), Some(2));
    assert_eq!(names(&t.admin(GET, "/v3/groups?name=OPS2", None).await.body), vec!["ops2"]);
    assert_eq!(names(&t.admin(GET, "/v3/groups?domain_id=default&name=dev", None).await.body), vec!["dev"]);
    assert!(names(&t.admin(GET, "/v3/groups?domain_id=nope", None).await.body).is_empty());

    t.delete_then_gone(&format!("/v3/groups/{id}")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_membership() {
    let t = TestNode::start().await;
    let g = t.create("/v3/groups", "group", json!({"name": "ops"})).await;
    let u = t.create("/v3/users", "user", json!({"name": "alice", "password": "pw"})).await;
    let path = format!("/v3/groups/{g}/users/{u}");
    assert_eq!(t.admin(HEAD, &path, None).await.status, StatusCode::NOT_FOUND, "not a member yet");
    assert_eq!(t.admin(DELETE, &path, None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(t.admin(PUT, &path, None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(t.admin(PUT, &path, None).await.status, StatusCode::NO_CONTENT, "idempotent");
    assert_eq!(t.admin(HEAD, &path, None).await.status, StatusCode::NO_CONTENT);
    let users = t.admin(GET, &format!("/v3/groups/{g}/users"), None).await;
    assert_eq!(users.body["users"][0]["id"].as_str(), Some(u.as_str()));
    assert!(users.body["users"][0].get("password").is_none());
    let groups = t.admin(GET, &format!("/v3/users/{u}/groups"), None).await;
    assert_eq!(groups.body["groups"][0]["id"].as_str(), Some(g.as_str()));
    assert!(groups.body["groups"][0]["membership_expires_at"].is_null());
    // The user may list its own groups.
    let own = t.token("alice", "pw", json!("unscoped")).await;
    assert_eq!(t.call(GET, &format!("/v3/users/{u}/groups"), Some(&own), None).await.status, StatusCode::OK);
    assert_eq!(t.call(PUT, &path, Some(&own), None).await.status, StatusCode::FORBIDDEN);
    for bad in [format!("/v3/groups/nope/users/{u}"), format!("/v3/groups/{g}/users/nope")] {
        assert_eq!(t.admin(PUT, &bad, None).await.status, StatusCode::NOT_FOUND, "{bad}");
        assert_eq!(t.admin(HEAD, &bad, None).await.status, StatusCode::NOT_FOUND, "{bad}");
        assert_eq!(t.admin(DELETE, &bad, None).await.status, StatusCode::NOT_FOUND, "{bad}");
    }
    assert_eq!(t.admin(GET, "/v3/groups/nope/users", None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(t.admin(GET, "/v3/users/nope/groups", None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(t.admin(DELETE, &path, None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(t.admin(HEAD, &path, None).await.status, StatusCode::NOT_FOUND);
    // Deleting the user drops the membership.
    t.admin(PUT, &path, None).await;
    assert_eq!(t.admin(DELETE, &format!("/v3/users/{u}"), None).await.status, StatusCode::NO_CONTENT);
    let users = t.admin(GET, &format!("/v3/groups/{g}/users"), None).await;
    assert_eq!(users.body["users"].as_array().map(Vec::len), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_change() {
    let t = TestNode::start().await;
    let u = t.create("/v3/users", "user", json!({"name": "alice", "password": "old"})).await;
    t.create("/v3/users", "user", json!({"name": "bob", "password": "bobpw"})).await;
    let nonlocal = t.create("/v3/users", "user", json!({"name": "fed"})).await;
    let before = t.token("alice", "old", json!("unscoped")).await;
    let path = format!("/v3/users/{u}/password");
    let change = |orig: &str, new: &str| json!({"user": {"original_password": orig, "password": new}});
    for bad in [
        json!({}),
        json!({"user": {"password": "x"}}),
        json!({"user": {"original_password": "old"}}),
        json!({"user": {"original_password": 1, "password": "x"}}),
    ] {
        assert_eq!(
            t.call(POST, &path, Some(&before), Some(bad.clone())).await.status,
            StatusCode::BAD_REQUEST,
            "{bad}"
        );
    }
    let wrong = t.call(POST, &path, Some(&before), Some(change("nope", "new"))).await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    let bobs = t.token("bob", "bobpw", json!("unscoped")).await;
    assert_eq!(t.call(POST, &path, Some(&bobs), Some(change("old", "new"))).await.status, StatusCode::FORBIDDEN);
    let missing = t.admin(POST, "/v3/users/nope/password", Some(change("a", "b"))).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    let fed = t.admin(POST, &format!("/v3/users/{nonlocal}/password"), Some(change("a", "b"))).await;
    assert_eq!(fed.status, StatusCode::CONFLICT);

    let ok = t.call(POST, &path, Some(&before), Some(change("old", "new"))).await;
    assert_eq!(ok.status, StatusCode::NO_CONTENT, "{}", ok.body);
    assert_eq!(
        t.call(GET, "/v3/auth/projects", Some(&before), None).await.status,
        StatusCode::UNAUTHORIZED,
        "earlier tokens die"
    );
    assert_eq!(t.try_token("alice", "old", json!("unscoped")).await.status, StatusCode::UNAUTHORIZED);
    t.token("alice", "new", json!("unscoped")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn federated_users_and_unique_id() {
    let t = TestNode::start().await;
    let fed = json!([{"idp_id": "idp1", "protocols": [{"protocol_id": "oidc", "unique_id": "sub-42"}]}]);
    let r = t.admin(POST, "/v3/users", Some(json!({"user": {"name": "fed", "federated": fed}}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["user"]["federated"], fed);
    t.create("/v3/users", "user", json!({"name": "local", "password": "pw"})).await;
    let found = t.admin(GET, "/v3/users?unique_id=sub-42", None).await;
    let names: Vec<&str> = found.body["users"].as_array().unwrap().iter().filter_map(|u| u["name"].as_str()).collect();
    assert_eq!(names, vec!["fed"]);
    let none = t.admin(GET, "/v3/users?unique_id=sub-43", None).await;
    assert_eq!(none.body["users"].as_array().map(Vec::len), Some(0));
    let wrong_domain = t.admin(GET, "/v3/users?unique_id=sub-42&domain_id=other", None).await;
    assert_eq!(wrong_domain.body["users"].as_array().map(Vec::len), Some(0));
    for bad in [
        json!("x"),
        json!([{"idp_id": "i"}]),
        json!([{"idp_id": 1, "protocols": []}]),
        json!([{"idp_id": "i", "protocols": [{"protocol_id": "p"}]}]),
    ] {
        let r = t.admin(POST, "/v3/users", Some(json!({"user": {"name": "bad", "federated": bad}}))).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad}");
    }
}

/// The typed user and group bodies keep Keystone's checks, messages and order: a target is
/// loaded and authorized before its update body's fields are judged, a password is never
/// echoed, and extra attributes are kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_bodies_keep_keystone_checks() {
    let t = TestNode::start().await;
    let message = |r: &crate::testkit::Reply| r.body["error"]["message"].as_str().unwrap_or_default().to_string();
    let node = &t;
    let bad = |body: serde_json::Value| async move { node.admin(POST, "/v3/users", Some(body)).await };
    for (body, want) in [
        (json!([]), "The request body must be a JSON object."),
        (json!({}), "'user' is a required property."),
        (json!({"user": 5}), "Invalid input for field 'user': must be an object."),
        (json!({"user": {}}), "'name' is a required property."),
        (json!({"user": {"name": " "}}), "Invalid input for field 'name': must not be empty."),
        (json!({"user": {"name": "a", "enabled": null}}), "Invalid input for field 'enabled': must be a boolean."),
        (
            json!({"user": {"name": "a", "domain_id": 5, "enabled": "x"}}),
            "Invalid input for field 'domain_id': must be a string.",
        ),
        (json!({"user": {"name": "a", "options": []}}), "Invalid input for field 'options': must be an object."),
        (json!({"user": {"name": "a", "federated": [{"idp_id": "i"}]}}), "Invalid input for field 'federated'."),
        (
            json!({"user": {"name": "a", "federated": [{"idp_id": 5, "protocols": []}]}}),
            "Invalid input for field 'federated': 'idp_id' must be a string.",
        ),
        (json!({"user": {"name": "a", "password": 12345}}), "Invalid input for field 'password': must be a string."),
    ] {
        let r = bad(body.clone()).await;
        assert_eq!((r.status, message(&r)), (StatusCode::BAD_REQUEST, want.to_string()), "{body}");
    }
    let long = "p".repeat(4097);
    let r = bad(json!({"user": {"name": "a", "password": long.clone()}})).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(!r.body.to_string().contains(&long), "the password is not echoed");

    let r = t
        .admin(POST, "/v3/users", Some(json!({"user": {"name": "bob", "password": "pw", "team": {"a": 1}, "id": "x"}})))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["user"]["team"], json!({"a": 1}));
    assert_ne!(r.body["user"]["id"], json!("x"));
    let id = r.body["user"]["id"].as_str().unwrap().to_string();
    let path = format!("/v3/users/{id}");

    // 404 before the fields are judged; then the domain, then the fields in order.
    let r = t.admin(PATCH, "/v3/users/nope", Some(json!({"user": {"name": 5}}))).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = t.admin(PATCH, &path, Some(json!({"user": {"domain_id": "other", "name": 5}}))).await;
    assert_eq!(message(&r), "Update of `domain_id` is not allowed.");
    let r = t.admin(PATCH, &path, Some(json!({"user": {"name": null}}))).await;
    assert_eq!(message(&r), "'name' is a required property.");
    let r = t.admin(PATCH, &path, Some(json!({"user": {"enabled": "yes", "password": 5}}))).await;
    assert_eq!(message(&r), "Invalid input for field 'enabled': must be a boolean.");

    let p = t.create("/v3/projects", "project", json!({"name": "p1"})).await;
    let r = t.admin(PATCH, &path, Some(json!({"user": {"default_project_id": p, "team": null}}))).await;
    assert_eq!((r.status, r.body["user"]["default_project_id"].as_str()), (StatusCode::OK, Some(p.as_str())));
    assert_eq!(r.body["user"]["team"], serde_json::Value::Null);
    let r = t.admin(PATCH, &path, Some(json!({"user": {"default_project_id": null}}))).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body["user"].get("default_project_id").is_none(), "null clears it: {}", r.body);

    let r = t.admin(POST, &format!("{path}/password"), Some(json!({"user": ["pw", "x"]}))).await;
    assert_eq!(message(&r), "Invalid input for field 'user': must be an object.", "an array is no object");
    let federated = json!({"user": {"name": "f", "federated": [["i", [["p", "u"]]]]}});
    assert_eq!(message(&bad(federated).await), "Invalid input for field 'federated'.");
    let r = t.admin(POST, &format!("{path}/password"), Some(json!({"user": {"password": "x"}}))).await;
    assert_eq!(message(&r), "'original_password' is a required property.");
    let r = t
        .admin(POST, &format!("{path}/password"), Some(json!({"user": {"original_password": "pw", "password": 5}})))
        .await;
    assert_eq!(message(&r), "Invalid input for field 'password': must be a string.");

    let r = t.admin(POST, "/v3/groups", Some(json!({"group": {"name": "g", "description": 5}}))).await;
    assert_eq!(message(&r), "Invalid input for field 'description': must be a string.");
    let g = t.create("/v3/groups", "group", json!({"name": "g", "description": "d"})).await;
    let r = t.admin(PATCH, &format!("/v3/groups/{g}"), Some(json!({"group": {"description": null}}))).await;
    assert_eq!((r.status, &r.body["group"]["description"]), (StatusCode::OK, &serde_json::Value::Null));
    assert_eq!(
        t.admin(PATCH, "/v3/groups/nope", Some(json!({"group": {"name": 5}}))).await.status,
        StatusCode::NOT_FOUND
    );
}

/// A domain-scoped caller lists a group's members and a user's groups of its own domain only,
/// as Keystone filters them (keystone-tempest-plugin's RBAC suite checks both); a cloud admin
/// sees every one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn domain_scoped_membership_listings_keep_to_the_domain() {
    let t = TestNode::start().await;
    let (d_a, d_b) = (
        t.create("/v3/domains", "domain", json!({"name": "list-a"})).await,
        t.create("/v3/domains", "domain", json!({"name": "list-b"})).await,
    );
    let pw = "correct horse battery";
    let manager = t.create("/v3/users", "user", json!({"name": "mgr", "domain_id": d_a, "password": pw})).await;
    let (u_a, u_b) = (
        t.create("/v3/users", "user", json!({"name": "ua", "domain_id": d_a})).await,
        t.create("/v3/users", "user", json!({"name": "ub", "domain_id": d_b})).await,
    );
    let (g_a, g_b) = (
        t.create("/v3/groups", "group", json!({"name": "ga", "domain_id": d_a})).await,
        t.create("/v3/groups", "group", json!({"name": "gb", "domain_id": d_b})).await,
    );
    let role = t.admin(GET, "/v3/roles?name=manager", None).await.body["roles"][0]["id"].as_str().unwrap().to_string();
    let grant = t.admin(PUT, &format!("/v3/domains/{d_a}/users/{manager}/roles/{role}"), None).await;
    assert_eq!(grant.status, StatusCode::NO_CONTENT, "{}", grant.body);
    for (g, u) in [(&g_a, &u_a), (&g_a, &u_b), (&g_b, &u_a)] {
        assert_eq!(t.admin(PUT, &format!("/v3/groups/{g}/users/{u}"), None).await.status, StatusCode::NO_CONTENT);
    }
    let token = t.token_for_id(&manager, pw, json!({"domain": {"id": d_a}})).await;
    let ids = |r: crate::testkit::Reply, key: &str| {
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let mut ids: Vec<String> =
            r.body[key].as_array().unwrap().iter().map(|v| v["id"].as_str().unwrap().to_string()).collect();
        ids.sort();
        ids
    };
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    let (members, groups) = (format!("/v3/groups/{g_a}/users"), format!("/v3/users/{u_a}/groups"));
    assert_eq!(ids(t.call(GET, &members, Some(&token), None).await, "users"), vec![u_a.clone()]);
    assert_eq!(ids(t.call(GET, &groups, Some(&token), None).await, "groups"), vec![g_a.clone()]);
    assert_eq!(ids(t.admin(GET, &members, None).await, "users"), sorted(vec![u_a.clone(), u_b.clone()]));
    assert_eq!(ids(t.admin(GET, &groups, None).await, "groups"), sorted(vec![g_a.clone(), g_b.clone()]));
}
