//! HTTP-level tests of roles, implication rules, grants, role assignments and the effective
//! roles tokens carry, against an in-process node.

use axum::http::StatusCode;
use serde_json::{json, Value};

use crate::testkit::methods::{DELETE, GET, HEAD, PATCH, POST, PUT};
use crate::testkit::TestNode;

/// The id of a bootstrap role by name.
async fn role_id(t: &TestNode, name: &str) -> String {
    let r = t.admin(GET, &format!("/v3/roles?name={name}"), None).await;
    r.body["roles"][0]["id"].as_str().unwrap_or_else(|| panic!("role {name}: {}", r.body)).to_string()
}

fn ids(v: &Value, key: &str) -> Vec<String> {
    let mut out: Vec<String> =
        v[key].as_array().unwrap().iter().map(|x| x["id"].as_str().unwrap().to_string()).collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn role_crud() {
    let t = TestNode::start().await;
    let r = t.admin(POST, "/v3/roles", Some(json!({"role": {"name": "viewer", "description": "v"}}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert!(r.body["role"]["domain_id"].is_null());
    let id = r.body["role"]["id"].as_str().unwrap().to_string();
    assert_eq!(
        t.admin(POST, "/v3/roles", Some(json!({"role": {"name": "Viewer"}}))).await.status,
        StatusCode::CONFLICT
    );
    assert_eq!(t.admin(POST, "/v3/roles", Some(json!({"role": {}}))).await.status, StatusCode::BAD_REQUEST);
    assert_eq!(t.admin(POST, "/v3/roles", Some(json!([]))).await.status, StatusCode::BAD_REQUEST);
    let bad_domain = t.admin(POST, "/v3/roles", Some(json!({"role": {"name": "x", "domain_id": "nope"}}))).await;
    assert_eq!(bad_domain.status, StatusCode::NOT_FOUND);
    let dr = t.create("/v3/roles", "role", json!({"name": "viewer", "domain_id": "default"})).await;

    assert_eq!(t.admin(GET, &format!("/v3/roles/{id}"), None).await.status, StatusCode::OK);
    assert_eq!(t.admin(GET, "/v3/roles/nope", None).await.status, StatusCode::NOT_FOUND);
    let global = t.admin(GET, "/v3/roles", None).await;
    assert!(ids(&global.body, "roles").contains(&id) && !ids(&global.body, "roles").contains(&dr), "global only");
    assert_eq!(ids(&t.admin(GET, "/v3/roles?domain_id=default", None).await.body, "roles"), vec![dr.clone()]);
    assert_eq!(ids(&t.admin(GET, "/v3/roles?name=viewer", None).await.body, "roles"), vec![id.clone()]);

    let p = t.admin(PATCH, &format!("/v3/roles/{id}"), Some(json!({"role": {"name": "watcher"}}))).await;
    assert_eq!((p.status, p.body["role"]["name"].as_str()), (StatusCode::OK, Some("watcher")));
    let clash = t.admin(PATCH, &format!("/v3/roles/{id}"), Some(json!({"role": {"name": "reader"}}))).await;
    assert_eq!(clash.status, StatusCode::CONFLICT);
    let moved = t.admin(PATCH, &format!("/v3/roles/{id}"), Some(json!({"role": {"domain_id": "default"}}))).await;
    assert_eq!(moved.status, StatusCode::BAD_REQUEST);
    assert_eq!(t.admin(PATCH, "/v3/roles/nope", Some(json!({"role": {}}))).await.status, StatusCode::NOT_FOUND);

    let member = t.create("/v3/users", "user", json!({"name": "m", "password": "pw"})).await;
    let proj = t.create("/v3/projects", "project", json!({"name": "p1"})).await;
    t.admin(PUT, &format!("/v3/projects/{proj}/users/{member}/roles/{}", role_id(&t, "member").await), None).await;
    let mt = t.token("m", "pw", json!({"project": {"id": proj}})).await;
    let denied = t.call(POST, "/v3/roles", Some(&mt), Some(json!({"role": {"name": "z"}}))).await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN);
    assert_eq!(t.call(DELETE, &format!("/v3/roles/{id}"), Some(&mt), None).await.status, StatusCode::FORBIDDEN);

    t.delete_then_gone(&format!("/v3/roles/{id}")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn implied_roles() {
    let t = TestNode::start().await;
    let a = t.create("/v3/roles", "role", json!({"name": "a"})).await;
    let b = t.create("/v3/roles", "role", json!({"name": "b"})).await;
    let rule = format!("/v3/roles/{a}/implies/{b}");
    assert_eq!(t.admin(GET, &rule, None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(t.admin(HEAD, &rule, None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(t.admin(DELETE, &rule, None).await.status, StatusCode::NOT_FOUND);
    let created = t.admin(PUT, &rule, None).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.body["role_inference"]["prior_role"]["id"].as_str(), Some(a.as_str()));
    assert_eq!(created.body["role_inference"]["implies"]["id"].as_str(), Some(b.as_str()), "a single object");
    assert_eq!(created.body["role_inference"]["implies"]["name"].as_str(), Some("b"));
    assert_eq!(t.admin(PUT, &rule, None).await.status, StatusCode::CONFLICT);
    let got = t.admin(GET, &rule, None).await;
    assert_eq!((got.status, &got.body), (StatusCode::OK, &created.body));
    assert_eq!(t.admin(HEAD, &rule, None).await.status, StatusCode::NO_CONTENT);
    let list = t.admin(GET, &format!("/v3/roles/{a}/implies"), None).await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(ids(&list.body["role_inference"], "implies"), vec![b.clone()], "a list here");
    let all = t.admin(GET, "/v3/role_inferences", None).await;
    let priors: Vec<&str> =
        all.body["role_inferences"].as_array().unwrap().iter().filter_map(|i| i["prior_role"]["id"].as_str()).collect();
    assert!(priors.contains(&a.as_str()) && priors.len() == 4, "bootstrap chain plus ours: {priors:?}");

    assert_eq!(t.admin(PUT, &format!("/v3/roles/{b}/implies/{a}"), None).await.status, StatusCode::FORBIDDEN, "cycle");
    assert_eq!(t.admin(PUT, &format!("/v3/roles/{a}/implies/nope"), None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(t.admin(PUT, &format!("/v3/roles/nope/implies/{a}"), None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(t.admin(GET, "/v3/roles/nope/implies", None).await.status, StatusCode::NOT_FOUND);
    let admin_role = role_id(&t, "admin").await;
    assert_eq!(t.admin(PUT, &format!("/v3/roles/{a}/implies/{admin_role}"), None).await.status, StatusCode::FORBIDDEN);
    assert_eq!(t.call(GET, "/v3/role_inferences", None, None).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(t.call(PUT, &rule, None, None).await.status, StatusCode::UNAUTHORIZED);
    t.create("/v3/users", "user", json!({"name": "u", "password": "pw"})).await;
    let unscoped = t.token("u", "pw", json!("unscoped")).await;
    for m in [GET, HEAD, DELETE, PUT] {
        assert_eq!(t.call(m.clone(), &rule, Some(&unscoped), None).await.status, StatusCode::FORBIDDEN, "{m}");
    }
    assert_eq!(t.call(GET, "/v3/role_inferences", Some(&unscoped), None).await.status, StatusCode::FORBIDDEN);
    assert_eq!(
        t.call(GET, &format!("/v3/roles/{a}/implies"), Some(&unscoped), None).await.status,
        StatusCode::FORBIDDEN
    );

    assert_eq!(t.admin(DELETE, &rule, None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(t.admin(HEAD, &rule, None).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grants_on_projects_domains_and_system() {
    let t = TestNode::start().await;
    let u = t.create("/v3/users", "user", json!({"name": "alice", "password": "pw"})).await;
    let g = t.create("/v3/groups", "group", json!({"name": "ops"})).await;
    let p = t.create("/v3/projects", "project", json!({"name": "p1"})).await;
    let member = role_id(&t, "member").await;
    let reader = role_id(&t, "reader").await;
    for (target, actor) in [
        (format!("/v3/projects/{p}"), format!("users/{u}")),
        (format!("/v3/projects/{p}"), format!("groups/{g}")),
        ("/v3/domains/default".to_string(), format!("users/{u}")),
        ("/v3/domains/default".to_string(), format!("groups/{g}")),
        ("/v3/system".to_string(), format!("users/{u}")),
        ("/v3/system".to_string(), format!("groups/{g}")),
    ] {
        let list = format!("{target}/{actor}/roles");
        let one = format!("{list}/{member}");
        assert_eq!(t.admin(HEAD, &one, None).await.status, StatusCode::NOT_FOUND, "{one}");
        assert_eq!(t.admin(DELETE, &one, None).await.status, StatusCode::NOT_FOUND, "{one}");
        assert_eq!(t.admin(PUT, &one, None).await.status, StatusCode::NO_CONTENT, "{one}");
        assert_eq!(t.admin(PUT, &one, None).await.status, StatusCode::NO_CONTENT, "{one} again");
        assert_eq!(t.admin(HEAD, &one, None).await.status, StatusCode::NO_CONTENT, "{one}");
        assert_eq!(
            t.admin(HEAD, &format!("{list}/{reader}"), None).await.status,
            StatusCode::NOT_FOUND,
            "implied is not granted"
        );
        let listed = t.admin(GET, &list, None).await;
        assert_eq!((listed.status, ids(&listed.body, "roles")), (StatusCode::OK, vec![member.clone()]), "{list}");
        assert_eq!(t.admin(PUT, &format!("{list}/nope"), None).await.status, StatusCode::NOT_FOUND, "unknown role");
        assert_eq!(t.call(PUT, &one, None, None).await.status, StatusCode::UNAUTHORIZED);
        assert_eq!(t.admin(DELETE, &one, None).await.status, StatusCode::NO_CONTENT, "{one}");
        assert_eq!(t.admin(HEAD, &one, None).await.status, StatusCode::NOT_FOUND, "{one}");
        assert_eq!(t.admin(GET, &list, None).await.body["roles"].as_array().map(Vec::len), Some(0));
    }
    for missing in [
        format!("/v3/projects/nope/users/{u}/roles"),
        format!("/v3/projects/default/users/{u}/roles"),
        format!("/v3/domains/nope/groups/{g}/roles"),
        format!("/v3/domains/{p}/groups/{g}/roles"),
        format!("/v3/projects/{p}/users/nope/roles"),
        format!("/v3/projects/{p}/groups/{u}/roles"),
        "/v3/system/users/nope/roles".to_string(),
        "/v3/system/groups/nope/roles".to_string(),
    ] {
        assert_eq!(t.admin(GET, &missing, None).await.status, StatusCode::NOT_FOUND, "{missing}");
        assert_eq!(t.admin(PUT, &format!("{missing}/{member}"), None).await.status, StatusCode::NOT_FOUND, "{missing}");
        assert_eq!(
            t.admin(HEAD, &format!("{missing}/{member}"), None).await.status,
            StatusCode::NOT_FOUND,
            "{missing}"
        );
        assert_eq!(
            t.admin(DELETE, &format!("{missing}/{member}"), None).await.status,
            StatusCode::NOT_FOUND,
            "{missing}"
        );
    }
    // Domain-specific roles: only on projects of their domain, never on the system.
    let other = t.create("/v3/domains", "domain", json!({"name": "other"})).await;
    let po = t.create("/v3/projects", "project", json!({"name": "po", "domain_id": other})).await;
    let dr = t.create("/v3/roles", "role", json!({"name": "dr", "domain_id": "default"})).await;
    let mismatch = t.admin(PUT, &format!("/v3/projects/{po}/users/{u}/roles/{dr}"), None).await;
    assert_eq!(mismatch.status, StatusCode::FORBIDDEN);
    assert_eq!(t.admin(PUT, &format!("/v3/system/users/{u}/roles/{dr}"), None).await.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        t.admin(PUT, &format!("/v3/projects/{p}/users/{u}/roles/{dr}"), None).await.status,
        StatusCode::NO_CONTENT
    );
    // A GET on a single grant is not an endpoint.
    let one = t.admin(GET, &format!("/v3/projects/{p}/users/{u}/roles/{dr}"), None).await;
    assert_eq!(one.status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn domain_managers_grant_within_their_domain_only() {
    let t = TestNode::start().await;
    let other = t.create("/v3/domains", "domain", json!({"name": "other"})).await;
    let mgr = t.create("/v3/users", "user", json!({"name": "mgr", "password": "pw"})).await;
    let u = t.create("/v3/users", "user", json!({"name": "u", "password": "pw"})).await;
    let p = t.create("/v3/projects", "project", json!({"name": "p1"})).await;
    let po = t.create("/v3/projects", "project", json!({"name": "po", "domain_id": other})).await;
    let manager = role_id(&t, "manager").await;
    let (member, admin) = (role_id(&t, "member").await, role_id(&t, "admin").await);
    t.admin(PUT, &format!("/v3/domains/default/users/{mgr}/roles/{manager}"), None).await;
    let tok = t.token("mgr", "pw", json!({"domain": {"id": "default"}})).await;
    let ok = t.call(PUT, &format!("/v3/projects/{p}/users/{u}/roles/{member}"), Some(&tok), None).await;
    assert_eq!(ok.status, StatusCode::NO_CONTENT, "{}", ok.body);
    let escalate = t.call(PUT, &format!("/v3/projects/{p}/users/{u}/roles/{admin}"), Some(&tok), None).await;
    assert_eq!(escalate.status, StatusCode::FORBIDDEN, "never admin");
    let elsewhere = t.call(PUT, &format!("/v3/projects/{po}/users/{u}/roles/{member}"), Some(&tok), None).await;
    assert_eq!(elsewhere.status, StatusCode::FORBIDDEN);
    let system = t.call(PUT, &format!("/v3/system/users/{u}/roles/{member}"), Some(&tok), None).await;
    assert_eq!(system.status, StatusCode::FORBIDDEN);
    let listed = t.call(GET, &format!("/v3/projects/{p}/users/{u}/roles"), Some(&tok), None).await;
    assert_eq!(listed.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_carry_group_and_implied_roles() {
    let t = TestNode::start().await;
    let u = t.create("/v3/users", "user", json!({"name": "alice", "password": "pw"})).await;
    let g = t.create("/v3/groups", "group", json!({"name": "ops"})).await;
    let p = t.create("/v3/projects", "project", json!({"name": "p1"})).await;
    let dr = t.create("/v3/roles", "role", json!({"name": "dr", "domain_id": "default"})).await;
    let member = role_id(&t, "member").await;
    assert_eq!(t.admin(PUT, &format!("/v3/roles/{dr}/implies/{member}"), None).await.status, StatusCode::CREATED);
    t.admin(PUT, &format!("/v3/groups/{g}/users/{u}"), None).await;
    t.admin(PUT, &format!("/v3/projects/{p}/groups/{g}/roles/{dr}"), None).await;
    t.admin(PUT, &format!("/v3/domains/default/groups/{g}/roles/{}", role_id(&t, "reader").await), None).await;

    let issued = t.try_token("alice", "pw", json!({"project": {"id": p}})).await;
    assert_eq!(issued.status, StatusCode::OK, "{}", issued.body);
    let mut names: Vec<&str> =
        issued.body["token"]["roles"].as_array().unwrap().iter().filter_map(|r| r["name"].as_str()).collect();
    names.sort();
    assert_eq!(names, vec!["member", "reader"], "implied through a domain role, which itself is not listed");
    let tok = t.token("alice", "pw", json!("unscoped")).await;
    assert_eq!(ids(&t.call(GET, "/v3/auth/projects", Some(&tok), None).await.body, "projects"), vec![p.clone()]);
    assert_eq!(ids(&t.call(GET, "/v3/auth/domains", Some(&tok), None).await.body, "domains"), vec!["default"]);
    assert_eq!(t.call(GET, "/v3/auth/system", Some(&tok), None).await.body["system"], json!([]));
    t.token("alice", "pw", json!({"domain": {"id": "default"}})).await;
    assert_eq!(t.try_token("alice", "pw", json!({"system": {"all": true}})).await.status, StatusCode::UNAUTHORIZED);
    t.admin(PUT, &format!("/v3/system/groups/{g}/roles/{member}"), None).await;
    assert_eq!(t.call(GET, "/v3/auth/system", Some(&tok), None).await.body["system"], json!([{"all": true}]));
    t.token("alice", "pw", json!({"system": {"all": true}})).await;
    assert_eq!(t.call(GET, "/v3/auth/system", None, None).await.status, StatusCode::UNAUTHORIZED);

    // Leaving the group takes the roles away, for tokens already issued too.
    let scoped = t.token("alice", "pw", json!({"project": {"id": p}})).await;
    t.admin(DELETE, &format!("/v3/groups/{g}/users/{u}"), None).await;
    assert_eq!(t.call(GET, "/v3/auth/projects", Some(&scoped), None).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(ids(&t.call(GET, "/v3/auth/projects", Some(&tok), None).await.body, "projects"), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn role_assignments_listing() {
    let t = TestNode::start().await;
    let u = t.create("/v3/users", "user", json!({"name": "alice", "password": "pw"})).await;
    let g = t.create("/v3/groups", "group", json!({"name": "ops"})).await;
    let p = t.create("/v3/projects", "project", json!({"name": "p1"})).await;
    let (member, reader) = (role_id(&t, "member").await, role_id(&t, "reader").await);
    t.admin(PUT, &format!("/v3/groups/{g}/users/{u}"), None).await;
    t.admin(PUT, &format!("/v3/projects/{p}/groups/{g}/roles/{member}"), None).await;
    t.admin(PUT, &format!("/v3/domains/default/users/{u}/roles/{reader}"), None).await;

    let direct = t.admin(GET, &format!("/v3/role_assignments?scope.project.id={p}"), None).await;
    assert_eq!(direct.status, StatusCode::OK);
    let base = t.node.cfg.public_base();
    assert_eq!(
        direct.body["role_assignments"],
        json!([{
            "role": {"id": member}, "group": {"id": g}, "scope": {"project": {"id": p}},
            "links": {"assignment": format!("{base}/v3/projects/{p}/groups/{g}/roles/{member}")},
        }])
    );
    let eff = t.admin(GET, &format!("/v3/role_assignments?effective&user.id={u}&scope.project.id={p}"), None).await;
    let entries = eff.body["role_assignments"].as_array().unwrap().clone();
    assert_eq!(entries.len(), 2, "member through the group, reader implied by member: {entries:?}");
    for e in &entries {
        assert_eq!(e["user"]["id"].as_str(), Some(u.as_str()));
        assert!(e.get("group").is_none());
        assert_eq!(e["links"]["membership"], json!(format!("{base}/v3/groups/{g}/users/{u}")));
        assert_eq!(e["links"]["assignment"], json!(format!("{base}/v3/projects/{p}/groups/{g}/roles/{member}")));
    }
    let implied = entries.iter().find(|e| e["role"]["id"] == json!(reader)).expect("implied entry");
    assert_eq!(implied["links"]["prior_role"], json!(format!("{base}/v3/roles/{member}/implies/{reader}")));
    let eff_true =
        t.admin(GET, &format!("/v3/role_assignments?effective=true&user.id={u}&scope.project.id={p}"), None).await;
    assert_eq!(eff_true.body["role_assignments"].as_array().map(Vec::len), Some(2));
    let by_role = t.admin(GET, &format!("/v3/role_assignments?effective&role.id={reader}&user.id={u}"), None).await;
    assert_eq!(by_role.body["role_assignments"].as_array().map(Vec::len), Some(2), "domain grant and implied");

    let named = t.admin(GET, &format!("/v3/role_assignments?user.id={u}&include_names"), None).await;
    let e = &named.body["role_assignments"][0];
    assert_eq!(e["role"]["name"], json!("reader"));
    assert_eq!(e["user"]["name"], json!("alice"));
    assert_eq!(e["user"]["domain"], json!({"id": "default", "name": "Default"}));
    assert_eq!(e["scope"]["domain"], json!({"id": "default", "name": "Default"}));
    let unnamed = t.admin(GET, &format!("/v3/role_assignments?user.id={u}&include_names=0"), None).await;
    assert!(unnamed.body["role_assignments"][0]["role"].get("name").is_none());
    let system = t.admin(GET, "/v3/role_assignments?scope.system=all&include_names=", None).await;
    let sys = system.body["role_assignments"].as_array().unwrap();
    assert!(!sys.is_empty() && sys.iter().all(|e| e["scope"] == json!({"system": {"all": true}})));
    assert_eq!(sys[0]["user"]["name"], json!("admin"));

    for bad in [
        format!("user.id={u}&group.id={g}"),
        format!("scope.project.id={p}&scope.domain.id=default"),
        format!("scope.system=all&scope.project.id={p}"),
        format!("effective&group.id={g}"),
    ] {
        let r = t.admin(GET, &format!("/v3/role_assignments?{bad}"), None).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad}");
    }
    assert_eq!(t.call(GET, "/v3/role_assignments", None, None).await.status, StatusCode::UNAUTHORIZED);

    // A domain reader sees its own domain's assignments only; a project member nothing.
    let other = t.create("/v3/domains", "domain", json!({"name": "other"})).await;
    let rd = t.create("/v3/users", "user", json!({"name": "rd", "password": "pw", "domain_id": "default"})).await;
    let po = t.create("/v3/projects", "project", json!({"name": "po", "domain_id": other})).await;
    t.admin(PUT, &format!("/v3/projects/{po}/users/{u}/roles/{member}"), None).await;
    t.admin(PUT, &format!("/v3/domains/default/users/{rd}/roles/{reader}"), None).await;
    let dtok = t.token("rd", "pw", json!({"domain": {"id": "default"}})).await;
    let seen = t.call(GET, "/v3/role_assignments", Some(&dtok), None).await;
    assert_eq!(seen.status, StatusCode::OK, "{}", seen.body);
    for e in seen.body["role_assignments"].as_array().unwrap() {
        let scope = &e["scope"];
        assert!(scope["domain"]["id"] == json!("default") || scope["project"]["id"].is_string(), "{e}");
        assert_ne!(scope["project"]["id"], json!(po), "other domain's project hidden");
        assert!(scope.get("system").is_none());
    }
    let ptok = t.token("alice", "pw", json!({"project": {"id": p}})).await;
    assert_eq!(t.call(GET, "/v3/role_assignments", Some(&ptok), None).await.status, StatusCode::FORBIDDEN);
}

/// A listing is answered from the node's cache until the state moves: the same bytes for the
/// same query and caller's view, the change visible at once after a write, and a domain-scoped
/// caller never served the cloud-wide answer kept for the admin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_are_cached_per_applied_state_and_per_view() {
    let t = TestNode::start().await;
    let d = t.create("/v3/domains", "domain", json!({"name": "lc"})).await;
    let p = t.create("/v3/projects", "project", json!({"name": "lc-p", "domain_id": d})).await;
    let u = t.create("/v3/users", "user", json!({"name": "lc-u", "domain_id": d, "password": "lc pass word"})).await;
    let member = role_id(&t, "member").await;
    let manager = role_id(&t, "manager").await;
    assert_eq!(
        t.admin(PUT, &format!("/v3/domains/{d}/users/{u}/roles/{manager}"), None).await.status,
        StatusCode::NO_CONTENT
    );
    let hits = |t: &TestNode| {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &t.node.registry).unwrap();
        text.lines()
            .find(|l| l.starts_with("idnode_cache_hits_total{cache=\"role_assignment_listings\"}"))
            .and_then(|l| l.rsplit(' ').next())
            .map_or(0, |n| n.parse::<u64>().unwrap())
    };
    let path = "/v3/role_assignments?effective&include_names";
    let first = t.admin(GET, path, None).await;
    let before = hits(&t);
    let again = t.admin(GET, path, None).await;
    assert_eq!(again.text, first.text);
    assert_eq!(hits(&t), before + 1, "the second answer came from the cache");
    // A domain-scoped manager asking the same sees its domain's only, not the cached answer.
    let mgr = t.token_for_id(&u, "lc pass word", json!({"domain": {"id": d}})).await;
    let theirs = t.call(GET, path, Some(&mgr), None).await;
    assert_eq!(theirs.status, StatusCode::OK, "{}", theirs.body);
    assert_ne!(theirs.text, first.text);
    assert!(theirs.body["role_assignments"]
        .as_array()
        .unwrap()
        .iter()
        .all(|a| a["scope"]["domain"]["id"] == json!(d) || a["scope"]["project"]["domain"]["id"] == json!(d)));
    // A grant changes the next answer at once.
    assert_eq!(
        t.admin(PUT, &format!("/v3/projects/{p}/users/{u}/roles/{member}"), None).await.status,
        StatusCode::NO_CONTENT
    );
    let after = t.admin(GET, path, None).await;
    assert_ne!(after.text, first.text);
    assert!(after.text.contains(&p), "the new grant is listed");
}
