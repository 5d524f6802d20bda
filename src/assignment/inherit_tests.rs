//! HTTP-level tests of OS-INHERIT: the inherited grant routes, their expansion in the role
//! assignment listing, and the roles tokens on the projects below carry.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::testkit::methods::{DELETE, GET, HEAD, PUT};
use crate::testkit::TestNode;

const BASE: &str = "http://127.0.0.1:5000";

fn entries(v: &Value) -> Vec<Value> {
    v["role_assignments"].as_array().unwrap_or_else(|| panic!("no role_assignments: {v}")).clone()
}

fn inherited_url(target: &str, actor: &str, role: &str) -> String {
    format!("/v3/OS-INHERIT/{target}/{actor}/roles/{role}/inherited_to_projects")
}

/// A domain with a project and a leaf below it, a user (password `pw`) and a group holding
/// the user, all in that domain, and a fresh role.
struct Tree {
    d: String,
    p: String,
    leaf: String,
    u: String,
    g: String,
    r: String,
}

async fn tree(t: &TestNode) -> Tree {
    let d = t.create("/v3/domains", "domain", json!({"name": "inh"})).await;
    let p = t.create("/v3/projects", "project", json!({"name": "parent", "domain_id": d})).await;
    let leaf = t.create("/v3/projects", "project", json!({"name": "leaf", "domain_id": d, "parent_id": p})).await;
    let u = t.create("/v3/users", "user", json!({"name": "inheritor", "password": "pw", "domain_id": d})).await;
    let g = t.create("/v3/groups", "group", json!({"name": "heirs", "domain_id": d})).await;
    assert_eq!(t.admin(PUT, &format!("/v3/groups/{g}/users/{u}"), None).await.status, StatusCode::NO_CONTENT);
    let r = t.create("/v3/roles", "role", json!({"name": "heir"})).await;
    Tree { d, p, leaf, u, g, r }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inherited_grant_routes() {
    let t = TestNode::start().await;
    let Tree { d, p, u, g, r, .. } = tree(&t).await;
    let one = inherited_url(&format!("domains/{d}"), &format!("users/{u}"), &r);

    assert_eq!(t.admin(PUT, &one, None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(t.admin(PUT, &one, None).await.status, StatusCode::NO_CONTENT, "granting twice is silent");
    let list_path = format!("/v3/OS-INHERIT/domains/{d}/users/{u}/roles/inherited_to_projects");
    let listed = t.admin(GET, &list_path, None).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    assert_eq!(listed.body["roles"].as_array().map(Vec::len), Some(1));
    assert_eq!(listed.body["roles"][0]["id"], json!(r));
    assert_eq!(listed.body["roles"][0]["links"]["self"], json!(format!("{BASE}/v3/roles/{r}")));
    assert_eq!(listed.body["links"]["self"], json!(format!("{BASE}{list_path}")));
    assert_eq!(t.admin(HEAD, &one, None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(t.admin(GET, &one, None).await.status, StatusCode::NO_CONTENT);

    // An inherited grant is not a direct one: the regular grant API does not see it.
    assert_eq!(
        t.admin(HEAD, &format!("/v3/domains/{d}/users/{u}/roles/{r}"), None).await.status,
        StatusCode::NOT_FOUND
    );
    let direct = t.admin(GET, &format!("/v3/domains/{d}/users/{u}/roles"), None).await;
    assert_eq!(direct.body["roles"], json!([]));

    // Keystone's 404s: role first, then the domain or project; the actor is not looked up.
    let bad_role = t.admin(PUT, &inherited_url(&format!("domains/{d}"), &format!("users/{u}"), "nope"), None).await;
    assert_eq!(
        (bad_role.status, &bad_role.body["error"]["message"]),
        (StatusCode::NOT_FOUND, &json!("Could not find role: nope."))
    );
    let bad_domain = t.admin(PUT, &inherited_url("domains/nope", &format!("users/{u}"), &r), None).await;
    assert_eq!(bad_domain.body["error"]["message"], json!("Could not find domain: nope."));
    let bad_project = t.admin(PUT, &inherited_url("projects/nope", &format!("users/{u}"), &r), None).await;
    assert_eq!(bad_project.body["error"]["message"], json!("Could not find project: nope."));
    let ghost = inherited_url(&format!("domains/{d}"), "users/ghost", &r);
    assert_eq!(t.admin(PUT, &ghost, None).await.status, StatusCode::NO_CONTENT, "unknown user accepted (Keystone)");
    assert_eq!(t.admin(DELETE, &ghost, None).await.status, StatusCode::NO_CONTENT);
    let absent = inherited_url(&format!("domains/{d}"), &format!("groups/{g}"), &r);
    let missing = t.admin(GET, &absent, None).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(
        missing.body["error"]["message"],
        json!(format!(
            "Could not find role assignment with role: {r}, user or group: {g}, project, domain, or system: {d}."
        ))
    );
    assert_eq!(t.admin(HEAD, &absent, None).await.status, StatusCode::NOT_FOUND);

    // Policy: anonymous 401, a user without admin 403 (before any 404).
    assert_eq!(t.call(PUT, &one, None, None).await.status, StatusCode::UNAUTHORIZED);
    let grant_member =
        format!("/v3/projects/{p}/users/{u}/roles/{}", t.create("/v3/roles", "role", json!({"name": "plain"})).await);
    assert_eq!(t.admin(PUT, &grant_member, None).await.status, StatusCode::NO_CONTENT);
    let user_token = t.token_for_id(&u, "pw", json!({"project": {"id": p}})).await;
    assert_eq!(t.call(PUT, &one, Some(&user_token), None).await.status, StatusCode::FORBIDDEN);
    let nowhere = inherited_url("domains/nope", &format!("users/{u}"), "nope");
    assert_eq!(t.call(PUT, &nowhere, Some(&user_token), None).await.status, StatusCode::FORBIDDEN);

    assert_eq!(t.admin(DELETE, &one, None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(t.admin(DELETE, &one, None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(t.admin(HEAD, &one, None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(t.admin(GET, &list_path, None).await.body["roles"], json!([]));

    // Groups, and projects (which have no list route).
    for one in [
        inherited_url(&format!("domains/{d}"), &format!("groups/{g}"), &r),
        inherited_url(&format!("projects/{p}"), &format!("users/{u}"), &r),
        inherited_url(&format!("projects/{p}"), &format!("groups/{g}"), &r),
    ] {
        assert_eq!(t.admin(PUT, &one, None).await.status, StatusCode::NO_CONTENT, "{one}");
        assert_eq!(t.admin(HEAD, &one, None).await.status, StatusCode::NO_CONTENT, "{one}");
        assert_eq!(t.admin(DELETE, &one, None).await.status, StatusCode::NO_CONTENT, "{one}");
        assert_eq!(t.admin(HEAD, &one, None).await.status, StatusCode::NOT_FOUND, "{one}");
    }
    let groups_list =
        t.admin(GET, &format!("/v3/OS-INHERIT/domains/{d}/groups/{g}/roles/inherited_to_projects"), None).await;
    assert_eq!((groups_list.status, &groups_list.body["roles"]), (StatusCode::OK, &json!([])));
    let no_route = format!("/v3/OS-INHERIT/projects/{p}/users/{u}/roles/inherited_to_projects");
    assert_eq!(t.admin(GET, &no_route, None).await.status, StatusCode::NOT_FOUND);
    let unknown_domain =
        t.admin(GET, &format!("/v3/OS-INHERIT/domains/nope/users/{u}/roles/inherited_to_projects"), None).await;
    assert_eq!(unknown_domain.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn role_assignments_expand_inherited_grants() {
    let t = TestNode::start().await;
    let Tree { d, p, leaf, u, g, r } = tree(&t).await;
    let on_domain = inherited_url(&format!("domains/{d}"), &format!("users/{u}"), &r);
    assert_eq!(t.admin(PUT, &on_domain, None).await.status, StatusCode::NO_CONTENT);
    let link = format!("{BASE}{on_domain}");

    // Direct: the grant itself, flagged, linked under OS-INHERIT.
    let direct = t.admin(GET, &format!("/v3/role_assignments?user.id={u}"), None).await;
    assert_eq!(
        entries(&direct.body),
        vec![json!({"links": {"assignment": link}, "role": {"id": r}, "user": {"id": u},
            "scope": {"OS-INHERIT:inherited_to": "projects", "domain": {"id": d}}})]
    );
    assert_eq!(direct.body["links"]["self"], json!(format!("{BASE}/v3/role_assignments?user.id={u}")));
    let only =
        t.admin(GET, &format!("/v3/role_assignments?user.id={u}&scope.OS-INHERIT:inherited_to=projects"), None).await;
    assert_eq!(entries(&only.body).len(), 1);
    let others = t.admin(GET, &format!("/v3/role_assignments?user.id={u}&scope.OS-INHERIT:inherited_to=x"), None).await;
    assert_eq!(entries(&others.body), Vec::<Value>::new());

    // Effective: one entry per project of the domain, none on the domain itself.
    for project in [&p, &leaf] {
        let q = format!("/v3/role_assignments?scope.project.id={project}&user.id={u}&effective");
        assert_eq!(
            entries(&t.admin(GET, &q, None).await.body),
            vec![json!({"links": {"assignment": link}, "role": {"id": r}, "user": {"id": u},
                "scope": {"OS-INHERIT:inherited_to": "projects", "project": {"id": project}}})],
            "{q}"
        );
    }
    let all = t.admin(GET, &format!("/v3/role_assignments?user.id={u}&effective"), None).await;
    let mut on: Vec<Value> = entries(&all.body).iter().map(|e| e["scope"]["project"]["id"].clone()).collect();
    on.sort_by_key(|v| v.to_string());
    let mut expected = vec![json!(p), json!(leaf)];
    expected.sort_by_key(|v| v.to_string());
    assert_eq!(on, expected);
    let on_d = t.admin(GET, &format!("/v3/role_assignments?scope.domain.id={d}&user.id={u}&effective"), None).await;
    assert_eq!(entries(&on_d.body), Vec::<Value>::new());
    let contradictory =
        format!("/v3/role_assignments?effective&scope.domain.id={d}&scope.OS-INHERIT:inherited_to=projects");
    let refused = t.admin(GET, &contradictory, None).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        refused.body["error"]["message"],
        json!("Combining effective, domain and inherited filters will always result in an empty list.")
    );
    let unknown = t.admin(GET, "/v3/role_assignments?scope.project.id=nope&effective", None).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(t.admin(DELETE, &on_domain, None).await.status, StatusCode::NO_CONTENT);

    // A project's inherited grant (here through a group) reaches its descendants only.
    let on_parent = inherited_url(&format!("projects/{p}"), &format!("groups/{g}"), &r);
    assert_eq!(t.admin(PUT, &on_parent, None).await.status, StatusCode::NO_CONTENT);
    let parent = t.admin(GET, &format!("/v3/role_assignments?scope.project.id={p}&user.id={u}&effective"), None).await;
    assert_eq!(entries(&parent.body), Vec::<Value>::new());
    let below =
        t.admin(GET, &format!("/v3/role_assignments?scope.project.id={leaf}&user.id={u}&effective"), None).await;
    assert_eq!(
        entries(&below.body),
        vec![
            json!({"links": {"assignment": format!("{BASE}{on_parent}"), "membership": format!("{BASE}/v3/groups/{g}/users/{u}")},
            "role": {"id": r}, "user": {"id": u},
            "scope": {"OS-INHERIT:inherited_to": "projects", "project": {"id": leaf}}})
        ]
    );

    // include_subtree: the project's descendants are targets too.
    let tree_direct = t.admin(GET, &format!("/v3/role_assignments?scope.project.id={p}&include_subtree"), None).await;
    assert_eq!(tree_direct.status, StatusCode::OK, "{}", tree_direct.body);
    assert_eq!(entries(&tree_direct.body).len(), 1, "the stored grant on the parent");
    let tree_eff =
        t.admin(GET, &format!("/v3/role_assignments?scope.project.id={p}&include_subtree&effective"), None).await;
    let targets: Vec<Value> = entries(&tree_eff.body).iter().map(|e| e["scope"]["project"]["id"].clone()).collect();
    assert_eq!(targets, vec![json!(leaf)]);
    let no_project = t.admin(GET, "/v3/role_assignments?include_subtree", None).await;
    assert_eq!(no_project.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        t.admin(GET, "/v3/role_assignments?include_subtree&scope.project.id=nope", None).await.status,
        StatusCode::NOT_FOUND
    );

    assert_eq!(t.admin(DELETE, &on_parent, None).await.status, StatusCode::NO_CONTENT);
    let after =
        t.admin(GET, &format!("/v3/role_assignments?scope.project.id={leaf}&user.id={u}&effective"), None).await;
    assert_eq!(entries(&after.body), Vec::<Value>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_carry_inherited_roles() {
    let t = TestNode::start().await;
    let Tree { d, p, leaf, u, r, .. } = tree(&t).await;
    let roles_of = |body: &Value| -> Vec<String> {
        body["token"]["roles"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_string()).collect()
    };
    let try_token = |scope: Value| {
        let body = json!({"auth": {"identity": {"methods": ["password"],
            "password": {"user": {"id": u, "password": "pw"}}}, "scope": scope}});
        t.call(Method::POST, "/v3/auth/tokens", None, Some(body))
    };

    // On a project: the role reaches the leaf, not the project itself.
    let on_parent = inherited_url(&format!("projects/{p}"), &format!("users/{u}"), &r);
    assert_eq!(t.admin(PUT, &on_parent, None).await.status, StatusCode::NO_CONTENT);
    let leaf_token = try_token(json!({"project": {"id": leaf}})).await;
    assert_eq!(leaf_token.status, StatusCode::OK, "{}", leaf_token.body);
    assert_eq!(roles_of(&leaf_token.body), vec![r.clone()]);
    assert_eq!(try_token(json!({"project": {"id": p}})).await.status, StatusCode::UNAUTHORIZED);
    let unscoped = t.token_for_id(&u, "pw", Value::Null).await;
    let projects = t.call(GET, "/v3/auth/projects", Some(&unscoped), None).await;
    let ids: Vec<&str> =
        projects.body["projects"].as_array().unwrap().iter().filter_map(|p| p["id"].as_str()).collect();
    assert_eq!(ids, vec![leaf.as_str()]);

    // Revoking takes the role away from tokens already issued.
    let leaf_tok = leaf_token.headers.get("x-subject-token").and_then(|v| v.to_str().ok()).unwrap().to_string();
    assert_eq!(t.admin(DELETE, &on_parent, None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(t.call(GET, "/v3/auth/projects", Some(&leaf_tok), None).await.status, StatusCode::UNAUTHORIZED);

    // On a domain: every project of the domain, but not the domain itself.
    let on_domain = inherited_url(&format!("domains/{d}"), &format!("users/{u}"), &r);
    assert_eq!(t.admin(PUT, &on_domain, None).await.status, StatusCode::NO_CONTENT);
    for project in [&p, &leaf] {
        let issued = try_token(json!({"project": {"id": project}})).await;
        assert_eq!(issued.status, StatusCode::OK, "{}", issued.body);
        assert_eq!(roles_of(&issued.body), vec![r.clone()]);
    }
    assert_eq!(try_token(json!({"domain": {"id": d}})).await.status, StatusCode::UNAUTHORIZED);
}
