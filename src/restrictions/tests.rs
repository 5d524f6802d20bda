//! `/v4/tokens/restrictions` through the real router, and what a restriction does to the
//! tokens of a mapping rule that names it (an OIDC provider's JWTs, verified against keys
//! served on loopback): project scope, narrowed roles, renewal and re-scoping refused unless
//! allowed, and changes and deletion taking effect on tokens already issued.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::clock::now_secs;
use crate::providers::tests::verification::{serve_jwks, JwksServer, TestKey};
use crate::state::keys::ns;
use crate::state::read::RestrictionReads;
use crate::state::Reader;
use crate::testkit::{send_with_headers, Reply, TestNode};

const ISSUER: &str = "https://idp.restricted.test";
const CLIENT_ID: &str = "idnode";
const PW: &str = "restriction manager pw";
/// The issuer runs on loopback, which a node calls only with this setting.
const PRIVATE_NETWORKS: (&str, &str, &str) = ("federation", "allow_private_networks", "true");

fn subject(r: &Reply) -> String {
    r.headers.get("x-subject-token").and_then(|v| v.to_str().ok()).expect("x-subject-token").to_string()
}

/// The token's role names, sorted.
pub(super) fn role_names(r: &Reply) -> Vec<String> {
    let mut names: Vec<String> = r.body["token"]["roles"]
        .as_array()
        .map_or(vec![], |a| a.iter().map(|r| r["name"].as_str().unwrap().into()).collect());
    names.sort();
    names
}

/// A domain with two projects, a manager of it, an OIDC provider serving its keys on loopback.
struct World {
    t: TestNode,
    d: String,
    other_domain: String,
    p1: String,
    p2: String,
    manager: String,
    idp: String,
    key: TestKey,
    _jwks: std::sync::Arc<JwksServer>,
    _dir: tempfile::TempDir,
}

impl World {
    async fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let key = TestKey::ec(dir.path(), "ec-r");
        let (jwks, addr) = serve_jwks(vec![key.jwk()]).await;
        let t = TestNode::start_with(&[PRIVATE_NETWORKS]).await;
        let d = t.create("/v3/domains", "domain", json!({"name": "corp"})).await;
        let other_domain = t.create("/v3/domains", "domain", json!({"name": "elsewhere"})).await;
        let p1 = t.create("/v3/projects", "project", json!({"name": "apps", "domain_id": d})).await;
        let p2 = t.create("/v3/projects", "project", json!({"name": "ops", "domain_id": d})).await;
        let u = t.create("/v3/users", "user", json!({"name": "rm", "domain_id": d, "password": PW})).await;
        let r = t.admin(Method::PUT, &format!("/v3/domains/{d}/users/{u}/roles/{}", role(&t, "manager")), None).await;
        assert_eq!(r.status, StatusCode::NO_CONTENT);
        let manager = t.token_for_id(&u, PW, json!({"domain": {"id": d}})).await;
        let idp = t
            .create(
                "/v4/federation/identity_providers",
                "identity_provider",
                json!({"domain_id": d, "provider_id": "corp", "issuer": ISSUER, "client_id": CLIENT_ID,
                       "jwks_uri": format!("http://{addr}/jwks")}),
            )
            .await;
        World { t, d, other_domain, p1, p2, manager, idp, key, _jwks: jwks, _dir: dir }
    }

    async fn as_manager(&self, method: Method, path: &str, body: Option<Value>) -> Reply {
        self.t.call(method, path, Some(&self.manager), body).await
    }

    /// A restriction of the domain made by its manager.
    async fn restriction(&self, fields: Value) -> String {
        let mut body = json!({"domain_id": self.d, "allow_renew": false, "allow_rescope": false,
                              "roles": [{"id": role(&self.t, "reader")}]});
        for (k, v) in fields.as_object().unwrap() {
            body[k] = v.clone();
        }
        let r = self.as_manager(Method::POST, "/v4/tokens/restrictions", Some(json!({ "restriction": body }))).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        r.body["restriction"]["id"].as_str().unwrap().to_string()
    }

    async fn update(&self, id: &str, fields: Value) -> Reply {
        let path = format!("/v4/tokens/restrictions/{id}");
        self.as_manager(Method::PUT, &path, Some(json!({ "restriction": fields }))).await
    }

    /// The domain's ruleset: `@corp.example` addresses become local users holding `member`
    /// (which implies `reader`) on both projects, under `restriction` when one is named.
    async fn ruleset(&self, restriction: Option<&str>) -> Reply {
        let member = json!([{"id": role(&self.t, "member")}]);
        let mut rule = json!({"name": "staff",
            "match": {"all_of": [{"type": "matches_regex", "claim": "email", "regex": "^[a-z]+@corp\\.example$"}]},
            "identity": {"identity_mode": "local", "user_name": "${claims.email}"},
            "authorizations": [
                {"type": "project", "project_id": self.p1, "project_domain_id": self.d, "roles": member},
                {"type": "project", "project_id": self.p2, "project_domain_id": self.d, "roles": member}]});
        if let Some(id) = restriction {
            rule["token_restriction_id"] = json!(id);
        }
        let body = json!({"mapping": {"mapping_id": "corp-staff", "domain_id": self.d, "provider_id": "corp",
                                      "source": {"type": "federation", "idp_id": self.idp}, "rules": [rule]}});
        let r = self.t.admin(Method::DELETE, "/v4/mappings/corp-staff", None).await;
        assert!(r.status == StatusCode::NO_CONTENT || r.status == StatusCode::NOT_FOUND, "{}", r.body);
        self.t.admin(Method::POST, "/v4/mappings", Some(body)).await
    }

    async fn login(&self, sub: &str, scope: Option<Value>) -> Reply {
        let n = now_secs();
        let claims = json!({"iss": ISSUER, "aud": CLIENT_ID, "sub": sub, "email": format!("{sub}@corp.example"),
                            "exp": n + 300, "iat": n});
        let path = format!("/v4/federation/identity_providers/{}/jwt", self.idp);
        let bearer = format!("Bearer {}", self.key.sign(&claims));
        send_with_headers(
            &self.t.router,
            Method::POST,
            &path,
            &[("authorization", &bearer)],
            scope.map(|s| json!({"auth": {"scope": s}})),
        )
        .await
    }

    /// The token method with `token`, asking for `scope` (none: renew).
    async fn reauth(&self, token: &str, scope: Option<Value>) -> Reply {
        let mut auth = json!({"identity": {"methods": ["token"], "token": {"id": token}}});
        if let Some(s) = scope {
            auth["scope"] = s;
        }
        self.t.call(Method::POST, "/v3/auth/tokens", None, Some(json!({ "auth": auth }))).await
    }

    async fn validate(&self, token: &str) -> Reply {
        self.t.admin(Method::GET, &format!("/v3/auth/tokens#{token}"), None).await
    }
}

fn role(t: &TestNode, name: &str) -> String {
    t.node.engine.read().id_by_name(ns::ROLE_NAME, "", name).unwrap().unwrap()
}

#[tokio::test]
async fn crud_by_the_domain_manager_with_filters_paging_and_refusals() {
    let w = World::new().await;
    let member = role(&w.t, "member");
    let id = w
        .restriction(json!({"project_id": w.p1, "allow_renew": true, "roles": [{"name": "reader"}, {"id": member}]}))
        .await;
    let shown = w.as_manager(Method::GET, &format!("/v4/tokens/restrictions/{id}"), None).await;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.body);
    let r = &shown.body["restriction"];
    assert_eq!((r["domain_id"].as_str(), r["project_id"].as_str()), (Some(w.d.as_str()), Some(w.p1.as_str())));
    assert_eq!((r["allow_renew"].as_bool(), r["allow_rescope"].as_bool()), (Some(true), Some(false)));
    let names: Vec<&str> = r["roles"].as_array().unwrap().iter().map(|x| x["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["reader", "member"], "by name or id, in the order given");
    assert!(r.get("user_id").is_none(), "an absent binding is left out: {r}");

    let second = w.restriction(json!({"project_id": w.p2})).await;
    let third = w.restriction(json!({})).await;
    let list = w.as_manager(Method::GET, "/v4/tokens/restrictions", None).await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.body);
    assert_eq!(list.body["restrictions"].as_array().unwrap().len(), 3, "a manager sees its domain's");
    let by_project = w.as_manager(Method::GET, &format!("/v4/tokens/restrictions?project_id={}", w.p2), None).await;
    let ids: Vec<&str> =
        by_project.body["restrictions"].as_array().unwrap().iter().map(|x| x["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [second.as_str()]);
    let page = w.as_manager(Method::GET, "/v4/tokens/restrictions?limit=2", None).await;
    assert_eq!(page.body["restrictions"].as_array().unwrap().len(), 2);
    assert!(page.body["links"]["next"].as_str().is_some_and(|n| n.contains("marker=")), "{}", page.body);

    // PUT changes what it names, null clears a binding; the domain stays.
    let r = w.update(&id, json!({"project_id": null, "allow_rescope": true, "roles": [{"id": member}]})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.body["restriction"].get("project_id").is_none());
    assert_eq!(r.body["restriction"]["allow_rescope"], json!(true));
    assert_eq!(r.body["restriction"]["roles"].as_array().unwrap().len(), 1);
    let stored = w.t.node.engine.read().token_restriction(&id).unwrap().unwrap();
    assert_eq!((stored.role_ids, stored.project_id), (vec![member.clone()], None));
    let r = w.update(&id, json!({"domain_id": w.other_domain})).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "the domain cannot change: {}", r.body);

    // Refusals: nothing changes.
    for (body, status) in [
        (json!({"roles": []}), StatusCode::BAD_REQUEST),
        (json!({"roles": [{"id": "no-such-role"}]}), StatusCode::NOT_FOUND),
        (json!({"roles": [{"name": "no-such-role"}]}), StatusCode::NOT_FOUND),
        (json!({"project_id": "no-such-project"}), StatusCode::NOT_FOUND),
        (json!({"user_id": "x".repeat(65)}), StatusCode::BAD_REQUEST),
        (json!({"allow_renew": "yes"}), StatusCode::BAD_REQUEST),
    ] {
        let r = w.update(&id, body.clone()).await;
        assert_eq!(r.status, status, "{body}: {}", r.body);
    }
    assert_eq!(w.t.node.engine.read().token_restriction(&id).unwrap().unwrap().role_ids, vec![member]);
    let foreign = w.t.create("/v3/projects", "project", json!({"name": "far", "domain_id": w.other_domain})).await;
    let r = w
        .as_manager(
            Method::POST,
            "/v4/tokens/restrictions",
            Some(json!({"restriction": {"domain_id": w.d, "project_id": foreign, "allow_renew": true,
                                        "allow_rescope": true, "roles": [{"name": "reader"}]}})),
        )
        .await;
    // Outside the domain is not found, like an unknown project (one answer: see below).
    assert_eq!(r.status, StatusCode::NOT_FOUND, "a project of another domain: {}", r.body);

    // Deletion answers 204, then 404; deleting the project takes its restrictions along.
    w.t.delete_then_gone(&format!("/v4/tokens/restrictions/{third}")).await;
    assert_eq!(w.t.admin(Method::DELETE, &format!("/v3/projects/{}", w.p2), None).await.status, StatusCode::NO_CONTENT);
    assert!(w.t.node.engine.read().token_restriction(&second).unwrap().is_none(), "bound to a deleted project");
    assert!(w.t.node.engine.read().token_restriction(&id).unwrap().is_some());
}

#[tokio::test]
async fn another_domain_is_refused_and_the_guard_rails_hold() {
    let w = World::new().await;
    let id = w.restriction(json!({})).await;
    // The admin of the cloud makes one in the other domain; this manager may not touch it.
    let r =
        w.t.admin(
            Method::POST,
            "/v4/tokens/restrictions",
            Some(json!({"restriction": {"domain_id": w.other_domain, "allow_renew": true, "allow_rescope": true,
                                        "roles": [{"name": "reader"}]}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let theirs = r.body["restriction"]["id"].as_str().unwrap().to_string();
    for (method, path) in [
        (Method::GET, format!("/v4/tokens/restrictions/{theirs}")),
        (Method::DELETE, format!("/v4/tokens/restrictions/{theirs}")),
        (Method::GET, "/v4/tokens/restrictions/no-such-id".to_string()),
        (Method::GET, format!("/v4/tokens/restrictions?domain_id={}", w.other_domain)),
    ] {
        let r = w.as_manager(method.clone(), &path, None).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{method} {path}: {}", r.body);
    }
    let r = w.update(&theirs, json!({"allow_renew": false})).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let create_elsewhere = json!({"restriction": {"domain_id": w.other_domain, "allow_renew": true,
                                                  "allow_rescope": true, "roles": [{"name": "reader"}]}});
    let r = w.as_manager(Method::POST, "/v4/tokens/restrictions", Some(create_elsewhere)).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let list = w.as_manager(Method::GET, "/v4/tokens/restrictions", None).await;
    assert_eq!(list.body["restrictions"].as_array().unwrap().len(), 1, "only its own: {}", list.body);
    let all = w.t.admin(Method::GET, "/v4/tokens/restrictions", None).await;
    assert_eq!(all.body["restrictions"].as_array().unwrap().len(), 2, "the cloud admin sees every domain's");

    // Guard rails: the admin role, and a user who holds it, are the cloud administrators' own.
    let admin_user = w.t.node.engine.read().bootstrap_info().unwrap().unwrap().admin_user_id;
    let r = w.update(&id, json!({"roles": [{"name": "admin"}]})).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    let d_admin = w.t.create("/v3/users", "user", json!({"name": "dadm", "domain_id": w.d, "password": PW})).await;
    let r =
        w.t.admin(Method::PUT, &format!("/v3/domains/{}/users/{d_admin}/roles/{}", w.d, role(&w.t, "admin")), None)
            .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let r = w.update(&id, json!({"user_id": d_admin})).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "a privileged user: {}", r.body);
    // The bootstrap admin is of another domain: not found, like any user outside this one.
    let r = w.update(&id, json!({"user_id": admin_user})).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    let stored = w.t.node.engine.read().token_restriction(&id).unwrap().unwrap();
    assert_eq!((stored.user_id, stored.role_ids), (None, vec![role(&w.t, "reader")]), "nothing changed");
    // The cloud admin may.
    let r =
        w.t.admin(
            Method::PUT,
            &format!("/v4/tokens/restrictions/{id}"),
            Some(json!({"restriction": {"user_id": d_admin}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    // And a manager cannot delete it now.
    let r = w.as_manager(Method::DELETE, &format!("/v4/tokens/restrictions/{id}"), None).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    // A rule may not name another domain's restriction, nor one that does not exist.
    let r = w.ruleset(Some(&theirs)).await;
    assert_eq!((r.status, &r.body["detail"]), (StatusCode::FORBIDDEN, &json!("cross_domain_mapping")), "{}", r.body);
    let r = w.ruleset(Some("no-such-restriction")).await;
    assert_eq!(
        (r.status, &r.body["detail"]),
        (StatusCode::UNPROCESSABLE_ENTITY, &json!("token_restriction_not_found")),
        "{}",
        r.body
    );
}

/// A manager naming a user or project outside its domain hears the same as for one that does
/// not exist, whether it is an ordinary user of another domain or a privileged one: the answer
/// tells nothing about other domains.
#[tokio::test]
async fn whatever_lies_outside_the_domain_gets_one_answer() {
    let w = World::new().await;
    let admin_user = w.t.node.engine.read().bootstrap_info().unwrap().unwrap().admin_user_id;
    let theirs = w.t.create("/v3/users", "user", json!({"name": "x", "domain_id": w.other_domain})).await;
    let their_project = w.t.create("/v3/projects", "project", json!({"name": "x", "domain_id": w.other_domain})).await;
    let id = w.restriction(json!({})).await;
    let answer = |r: &Reply, kind: &str, named: &str| {
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{kind} {named}: {}", r.body);
        assert_eq!(r.body["error"]["message"], json!(format!("Could not find {kind}: {named}.")), "{}", r.body);
    };
    for (kind, field, named) in [
        ("user", "user_id", theirs.as_str()),
        ("user", "user_id", admin_user.as_str()),
        ("user", "user_id", "no-such-user"),
        ("project", "project_id", their_project.as_str()),
        ("project", "project_id", "no-such-project"),
    ] {
        let mut body = json!({"domain_id": w.d, "allow_renew": true, "allow_rescope": true,
                              "roles": [{"name": "reader"}]});
        body[field] = json!(named);
        let r = w.as_manager(Method::POST, "/v4/tokens/restrictions", Some(json!({ "restriction": body }))).await;
        answer(&r, kind, named);
        let mut change = json!({});
        change[field] = json!(named);
        let r = w.update(&id, change).await;
        answer(&r, kind, named);
    }
    let list = w.as_manager(Method::GET, "/v4/tokens/restrictions", None).await;
    assert_eq!(list.body["restrictions"].as_array().unwrap().len(), 1, "nothing was written: {}", list.body);
}

#[tokio::test]
async fn a_restricted_login_is_project_scoped_narrowed_and_renews_or_rescopes_only_if_allowed() {
    let w = World::new().await;
    let reader = role(&w.t, "reader");
    let id = w.restriction(json!({"project_id": w.p1})).await;
    let r = w.ruleset(Some(&id)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);

    // No scope asked: the restriction's project; only `reader` of `member` + `reader`.
    let login = w.login("alice", None).await;
    assert_eq!(login.status, StatusCode::OK, "{}", login.body);
    assert_eq!(login.body["token"]["project"]["id"], json!(w.p1));
    assert_eq!(role_names(&login), ["reader"]);
    let token = subject(&login);
    // What it would create would outlive the restriction.
    let alice = login.body["token"]["user"]["id"].as_str().unwrap().to_string();
    let r =
        w.t.call(
            Method::POST,
            &format!("/v3/users/{alice}/application_credentials"),
            Some(&token),
            Some(json!({"application_credential": {"name": "escape"}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert!(r.text.contains("restricted token"), "{}", r.body);
    // Another project, or a domain, is refused.
    let r = w.login("alice", Some(json!({"project": {"id": w.p2}}))).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    let r = w.login("alice", Some(json!({"domain": {"id": w.d}}))).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);

    // Renewal and re-scoping by the token method: refused while not allowed.
    let r = w.reauth(&token, None).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "renewal: {}", r.body);
    let r = w.reauth(&token, Some(json!({"project": {"id": w.p1}}))).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "renewal to the same project: {}", r.body);
    let r = w.reauth(&token, Some(json!({"project": {"id": w.p2}}))).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "re-scope: {}", r.body);

    // Allowed: the renewed token stands under the restriction too.
    assert_eq!(w.update(&id, json!({"allow_renew": true})).await.status, StatusCode::OK);
    let renewed = w.reauth(&token, None).await;
    assert_eq!(renewed.status, StatusCode::OK, "{}", renewed.body);
    assert_eq!(
        (role_names(&renewed), &renewed.body["token"]["project"]["id"]),
        (vec!["reader".to_string()], &json!(w.p1))
    );
    assert_eq!(renewed.body["token"]["methods"], json!(["token", "mapped"]));
    let renewed = subject(&renewed);
    // Re-scoping: allowed only to a project the restriction permits.
    assert_eq!(w.update(&id, json!({"allow_rescope": true})).await.status, StatusCode::OK);
    let r = w.reauth(&renewed, Some(json!({"project": {"id": w.p2}}))).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "bound to p1: {}", r.body);
    assert_eq!(w.update(&id, json!({"project_id": null})).await.status, StatusCode::OK);
    let moved = w.reauth(&renewed, Some(json!({"project": {"id": w.p2}}))).await;
    assert_eq!(moved.status, StatusCode::OK, "{}", moved.body);
    assert_eq!((role_names(&moved), &moved.body["token"]["project"]["id"]), (vec!["reader".to_string()], &json!(w.p2)));
    let r = w.reauth(&renewed, Some(json!({"domain": {"id": w.d}}))).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "never a domain scope: {}", r.body);
    let r = w.reauth(&renewed, Some(json!("unscoped"))).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "never unscoped: {}", r.body);
    // Without a project of its own, a login must name one.
    let r = w.login("alice", None).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    let r = w.login("alice", Some(json!({"project": {"id": w.p2}}))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);

    // Changing the roles narrows tokens already issued; none left kills them.
    let v = w.validate(&token).await;
    assert_eq!((v.status, role_names(&v)), (StatusCode::OK, vec!["reader".to_string()]));
    assert_eq!(w.update(&id, json!({"roles": [{"name": "member"}]})).await.status, StatusCode::OK);
    let v = w.validate(&token).await;
    assert_eq!(role_names(&v), ["member", "reader"], "member implies reader: {}", v.body);
    w.t.create("/v3/roles", "role", json!({"name": "auditor"})).await;
    assert_eq!(w.update(&id, json!({"roles": [{"name": "auditor"}]})).await.status, StatusCode::OK);
    assert_eq!(w.validate(&token).await.status, StatusCode::NOT_FOUND, "no role of the restriction is held");
    assert_eq!(w.update(&id, json!({"roles": [{"id": reader}]})).await.status, StatusCode::OK);
    assert_eq!(w.validate(&token).await.status, StatusCode::OK);

    // Deleting it kills its tokens (the renewed one too), and the rule logs nobody in.
    w.t.delete_then_gone(&format!("/v4/tokens/restrictions/{id}")).await;
    for t in [&token, &renewed] {
        assert_eq!(w.validate(t).await.status, StatusCode::NOT_FOUND);
    }
    let r = w.login("alice", Some(json!({"project": {"id": w.p1}}))).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
}

#[tokio::test]
async fn a_restriction_bound_to_a_user_admits_only_that_user() {
    let w = World::new().await;
    let first = w.login("bob", Some(json!({"project": {"id": w.p1}}))).await;
    // Without a ruleset nobody logs in; make an unrestricted one to create bob.
    assert_eq!(first.status, StatusCode::NOT_FOUND, "{}", first.body);
    assert_eq!(w.ruleset(None).await.status, StatusCode::CREATED);
    let bob = w.login("bob", Some(json!({"project": {"id": w.p1}}))).await;
    assert_eq!(bob.status, StatusCode::OK, "{}", bob.body);
    assert_eq!(role_names(&bob), ["member", "reader"], "unrestricted: every role the rule grants");
    let bob_id = bob.body["token"]["user"]["id"].as_str().unwrap().to_string();
    let id = w.restriction(json!({"user_id": bob_id, "project_id": w.p1})).await;
    assert_eq!(w.ruleset(Some(&id)).await.status, StatusCode::CREATED);
    let r = w.login("bob", None).await;
    assert_eq!((r.status, role_names(&r)), (StatusCode::OK, vec!["reader".to_string()]), "{}", r.body);
    let r = w.login("carol", None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "not the bound user: {}", r.body);
    // Deleting the user takes the restriction along.
    assert_eq!(w.t.admin(Method::DELETE, &format!("/v3/users/{bob_id}"), None).await.status, StatusCode::NO_CONTENT);
    assert!(w.t.node.engine.read().token_restriction(&id).unwrap().is_none());
}
