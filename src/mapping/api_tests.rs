//! `/v4/mappings` through the real router: the CRUD and mutate happy paths, a fresh
//! `ruleset_version` on every write, mutate atomicity, and one test per `detail` key the
//! administration can answer (status and key asserted together).

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::state::keys::ns;
use crate::state::Reader;
use crate::testkit::{Reply, TestNode};

const PASSWORD: &str = "correct horse battery";

/// Domains A and B with a project each, a group in A, an OIDC provider in each domain and a
/// global one, and a domain-scoped manager of A.
struct World {
    t: TestNode,
    d_a: String,
    d_b: String,
    p_a: String,
    p_b: String,
    g_a: String,
    idp_a: String,
    idp_b: String,
    idp_global: String,
    manager: String,
}

impl World {
    async fn new() -> World {
        let t = TestNode::start().await;
        let d_a = t.create("/v3/domains", "domain", json!({"name": "dom-a"})).await;
        let d_b = t.create("/v3/domains", "domain", json!({"name": "dom-b"})).await;
        let p_a = t.create("/v3/projects", "project", json!({"name": "pa", "domain_id": d_a})).await;
        let p_b = t.create("/v3/projects", "project", json!({"name": "pb", "domain_id": d_b})).await;
        let g_a = t.create("/v3/groups", "group", json!({"name": "ga", "domain_id": d_a})).await;
        let u = t.create("/v3/users", "user", json!({"name": "mgr", "domain_id": d_a, "password": PASSWORD})).await;
        let grant = format!("/v3/domains/{d_a}/users/{u}/roles/{}", role(&t, "manager"));
        assert_eq!(t.admin(Method::PUT, &grant, None).await.status, StatusCode::NO_CONTENT);
        let manager = t.token_for_id(&u, PASSWORD, json!({"domain": {"id": d_a}})).await;
        let idp_a = t.identity_provider(Some(&d_a), "corp").await;
        let idp_b = t.identity_provider(Some(&d_b), "corp").await;
        let idp_global = t.identity_provider(None, "corp").await;
        World { t, d_a, d_b, p_a, p_b, g_a, idp_a, idp_b, idp_global, manager }
    }

    fn role(&self, name: &str) -> String {
        role(&self.t, name)
    }

    async fn admin(&self, method: Method, path: &str, body: Option<Value>) -> Reply {
        self.t.admin(method, path, body).await
    }

    async fn as_manager(&self, method: Method, path: &str, body: Option<Value>) -> Reply {
        self.t.call(method, path, Some(&self.manager), body).await
    }

    /// A fixed-mode ruleset of domain A with one rule granting `reader` on domain A.
    fn ruleset(&self) -> Value {
        json!({
            "domain_id": self.d_a, "provider_id": "corp",
            "source": {"type": "federation", "idp_id": self.idp_a},
            "rules": [rule("first", json!([{"type": "domain", "domain_id": self.d_a, "roles": [{"id": self.role("reader")}]}]))],
        })
    }

    fn with(&self, fields: Value) -> Value {
        let mut body = self.ruleset();
        for (k, v) in fields.as_object().unwrap() {
            body[k] = v.clone();
        }
        json!({ "mapping": body })
    }
}

fn role(t: &TestNode, name: &str) -> String {
    t.node.engine.read().id_by_name(ns::ROLE_NAME, "", name).unwrap().unwrap()
}

fn rule(name: &str, authorizations: Value) -> Value {
    json!({"name": name, "match": {"all_of": [{"type": "equals", "claim": "team", "value": "ops"}]},
           "identity": {"user_name": "${claims.sub}"}, "authorizations": authorizations})
}

fn version(r: &Reply) -> String {
    let v = r.body["mapping"]["ruleset_version"].as_str().expect("ruleset_version").to_string();
    assert!(v.len() == 32 && v.bytes().all(|b| b.is_ascii_hexdigit()), "{v}");
    v
}

fn names(r: &Reply) -> Vec<String> {
    r.body["mapping"]["rules"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap().to_string()).collect()
}

#[track_caller]
fn assert_detail(r: &Reply, status: u16, key: &str) {
    assert_eq!((r.status.as_u16(), r.body["detail"].as_str()), (status, Some(key)), "{}", r.body);
    assert_eq!(r.body["error"]["code"], json!(status), "{}", r.body);
}

async fn create(w: &World, body: Value) -> Reply {
    w.admin(Method::POST, "/v4/mappings", Some(body)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crud_with_a_fresh_version_on_every_write() {
    let w = World::new().await;
    let r = create(&w, w.with(json!({}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.body["mapping"]["mapping_id"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 32, "a server-assigned uuid hex: {id}");
    let v1 = version(&r);
    let path = format!("/v4/mappings/{id}");
    let got = w.admin(Method::GET, &path, None).await;
    assert_eq!((got.status, version(&got)), (StatusCode::OK, v1.clone()));
    assert_eq!(got.body["mapping"]["rules"][0]["name"], "first");

    let named = create(&w, w.with(json!({"mapping_id": "named"}))).await;
    assert_eq!(named.status, StatusCode::CREATED, "{}", named.body);
    let dup = create(&w, w.with(json!({"mapping_id": "named"}))).await;
    assert_eq!(dup.status, StatusCode::CONFLICT, "{}", dup.body);
    let global =
        w.with(json!({"domain_resolution_mode": "claims_only", "allowed_domains": [w.d_b], "mapping_id": "global",
        "rules": [{"name": "g", "match": {"any_of": [{"type": "matches_regex", "claim": "iss", "regex": "^https://"}]},
                   "identity": {"user_name": "${claims.sub}", "user_domain_id": "${claims.domain}"}}]}));
    let g = create(&w, global).await;
    assert_eq!((g.status, &g.body["mapping"]["domain_id"]), (StatusCode::CREATED, &Value::Null), "{}", g.body);

    let all = w.admin(Method::GET, "/v4/mappings", None).await;
    assert_eq!(all.body["mappings"].as_array().unwrap().len(), 3, "{}", all.body);
    let in_a = w.admin(Method::GET, &format!("/v4/mappings?domain_id={}", w.d_a), None).await;
    assert_eq!(in_a.body["mappings"].as_array().unwrap().len(), 2, "{}", in_a.body);
    let first = w.admin(Method::GET, "/v4/mappings?limit=1", None).await;
    assert_eq!(first.body["mappings"].as_array().unwrap().len(), 1, "{}", first.body);
    assert!(first.body["mappings"][0].get("id").is_none(), "{}", first.body);
    assert!(first.body["links"]["next"].as_str().unwrap().contains("marker="), "{}", first.body);

    let mut body = w.with(json!({"enabled": false}));
    body["mapping"]["ruleset_version"] = json!(v1);
    let put = w.admin(Method::PUT, &path, Some(body)).await;
    assert_eq!((put.status, &put.body["mapping"]["enabled"]), (StatusCode::OK, &json!(false)), "{}", put.body);
    let v2 = version(&put);
    assert_ne!(v2, v1);

    let reader = json!([{"type": "domain", "domain_id": w.d_a, "roles": [{"id": w.role("reader")}]}]);
    let mutations = json!({"mutations": [
        {"operation": "insert", "rule": rule("zeroth", reader.clone()), "position": {"type": "before", "anchor": "first"}},
        {"operation": "insert", "rule": rule("last", reader.clone())},
        {"operation": "insert", "rule": rule("second", reader.clone()), "position": {"type": "after", "anchor": "first"}},
        {"operation": "update", "rule_name": "last", "rule": rule("final", reader.clone())},
        {"operation": "delete", "rule_name": "zeroth"},
    ]});
    let m = w.admin(Method::POST, &format!("{path}/rules/mutate"), Some(mutations)).await;
    assert_eq!(m.status, StatusCode::OK, "{}", m.body);
    assert_eq!(names(&m), ["first", "second", "final"]);
    let v3 = version(&m);
    assert!(v3 != v2 && v3 != v1);

    assert_eq!(w.admin(Method::DELETE, &path, None).await.status, StatusCode::NO_CONTENT);
    assert_detail(&w.admin(Method::GET, &path, None).await, 404, "mapping_not_found");
    assert_detail(&w.admin(Method::DELETE, &path, None).await, 404, "mapping_not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_administers_the_rulesets_of_its_domain() {
    let w = World::new().await;
    let r = w.as_manager(Method::POST, "/v4/mappings", Some(w.with(json!({"mapping_id": "mine"})))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let own = create(
        &w,
        w.with(json!({"mapping_id": "other", "domain_id": w.d_b,
        "rules": [rule("x", json!([{"type": "domain", "domain_id": w.d_b, "roles": [{"id": w.role("reader")}]}]))]})),
    )
    .await;
    assert_eq!(own.status, StatusCode::CREATED, "{}", own.body);
    let listed = w.as_manager(Method::GET, "/v4/mappings", None).await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    let ids: Vec<&str> =
        listed.body["mappings"].as_array().unwrap().iter().map(|m| m["mapping_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["mine"]);
    assert_eq!(w.as_manager(Method::GET, "/v4/mappings/other", None).await.status, StatusCode::FORBIDDEN);
    assert_eq!(
        w.as_manager(Method::GET, &format!("/v4/mappings?domain_id={}", w.d_b), None).await.status,
        StatusCode::FORBIDDEN
    );
    let put = w.as_manager(Method::PUT, "/v4/mappings/mine", Some(w.with(json!({"enabled": false})))).await;
    assert_eq!(put.status, StatusCode::OK, "{}", put.body);
    assert_eq!(w.as_manager(Method::DELETE, "/v4/mappings/mine", None).await.status, StatusCode::NO_CONTENT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_mutation_leaves_the_ruleset_untouched() {
    let w = World::new().await;
    let before = create(&w, w.with(json!({"mapping_id": "m"}))).await;
    let reader = json!([{"type": "domain", "domain_id": w.d_a, "roles": [{"id": w.role("reader")}]}]);
    for (second, status) in [
        (json!({"operation": "delete", "rule_name": "nope"}), 409),
        (
            json!({"operation": "insert", "rule": rule("x", reader.clone()), "position": {"type": "after", "anchor": "nope"}}),
            409,
        ),
        (json!({"operation": "insert", "rule": rule("new", reader.clone())}), 422),
    ] {
        let body = json!({"mutations": [{"operation": "insert", "rule": rule("new", reader.clone())}, second]});
        let r = w.admin(Method::POST, "/v4/mappings/m/rules/mutate", Some(body)).await;
        assert_eq!(r.status.as_u16(), status, "{}", r.body);
        let now = w.admin(Method::GET, "/v4/mappings/m", None).await;
        assert_eq!(now.body, before.body, "unchanged, version included");
    }
}

/// A rule with this identity and these authorizations in the ruleset of domain A.
fn one_rule(w: &World, identity: Value, authorizations: Value, extra: Value) -> Value {
    let mut r = rule("r1", authorizations);
    r["identity"] = identity;
    if let Some(o) = extra.as_object() {
        for (k, v) in o {
            r[k] = v.clone();
        }
    }
    w.with(json!({"rules": [r]}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_roles_are_role_not_found() {
    let w = World::new().await;
    let body = one_rule(
        &w,
        json!({"user_name": "u"}),
        json!([{"type": "domain", "domain_id": w.d_a, "roles": [{"id": "nope"}]}]),
        json!({}),
    );
    assert_detail(&create(&w, body).await, 422, "role_not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn system_mappings_are_immutable_but_deletable() {
    let w = World::new().await;
    let system = json!([{"type": "system", "system_id": "all", "roles": [{"id": w.role("reader")}]}]);
    let mut body = one_rule(&w, json!({"user_name": "svc", "is_system": true}), system.clone(), json!({}));
    body["mapping"]["mapping_id"] = json!("sys");
    let r = create(&w, body.clone()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_detail(&w.admin(Method::PUT, "/v4/mappings/sys", Some(body)).await, 422, "system_mapping_immutable");
    let m = json!({"mutations": [{"operation": "delete", "rule_name": "r1"}]});
    assert_detail(
        &w.admin(Method::POST, "/v4/mappings/sys/rules/mutate", Some(m)).await,
        422,
        "system_mapping_immutable",
    );
    assert_eq!(w.admin(Method::DELETE, "/v4/mappings/sys", None).await.status, StatusCode::NO_CONTENT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_put_cannot_move_a_ruleset_to_another_domain() {
    let w = World::new().await;
    assert_eq!(create(&w, w.with(json!({"mapping_id": "m"}))).await.status, StatusCode::CREATED);
    let moved = w.with(json!({"domain_id": w.d_b,
        "rules": [rule("x", json!([{"type": "domain", "domain_id": w.d_b, "roles": [{"id": w.role("reader")}]}]))]}));
    assert_detail(&w.admin(Method::PUT, "/v4/mappings/m", Some(moved)).await, 422, "domain_id_immutable");
}

/// One test per `detail` key: `$call` (using the world `$w`) answers `$status` with `$key`.
macro_rules! detail_test {
    ($name:ident, $status:literal, $key:literal, |$w:ident| $call:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let $w = World::new().await;
            assert_detail(&$call.await, $status, $key);
        }
    };
}

fn reader_on(w: &World, domain: &str) -> Value {
    json!([{"type": "domain", "domain_id": domain, "roles": [{"id": w.role("reader")}]}])
}

fn project_auth(w: &World, project: &str, domain: &str, role: &str) -> Value {
    json!([{"type": "project", "project_id": project, "project_domain_id": domain, "roles": [{"id": w.role(role)}]}])
}

fn user(name: &str) -> Value {
    json!({ "user_name": name })
}

// Stateless write-time validation (any caller).
detail_test!(system_token_shadowing, 422, "system_token_shadowing", |w| create(
    &w,
    one_rule(&w, user("${claims.enclosing_domain_id}"), reader_on(&w, &w.d_a), json!({}))
));
detail_test!(domain_claim_required, 422, "domain_claim_required", |w| create(
    &w,
    w.with(json!({"domain_resolution_mode": "claims_only", "allowed_domains": [w.d_a],
        "rules": [rule("r1", reader_on(&w, &w.d_a))]}))
));
detail_test!(domain_override_fixed_mode, 422, "domain_override_fixed_mode", |w| create(
    &w,
    one_rule(&w, json!({"user_name": "u", "user_domain_id": "${claims.dom}"}), reader_on(&w, &w.d_a), json!({}))
));
detail_test!(invalid_rule_name, 422, "invalid_rule_name", |w| create(
    &w,
    w.with(json!({"rules": [rule("bad name!", reader_on(&w, &w.d_a))]}))
));
detail_test!(duplicate_rule_name, 422, "duplicate_rule_name", |w| create(
    &w,
    w.with(json!({"rules": [rule("a", reader_on(&w, &w.d_a)), rule("a", reader_on(&w, &w.d_a))]}))
));
detail_test!(regex_safety_violation, 422, "regex_safety_violation", |w| create(
    &w,
    one_rule(
        &w,
        user("u"),
        reader_on(&w, &w.d_a),
        json!({"match": {"all_of": [{"type": "matches_regex", "claim": "c", "regex": "(a)\\1"}]}})
    )
));
detail_test!(system_scope_requires_is_system, 422, "system_scope_requires_is_system", |w| create(
    &w,
    one_rule(
        &w,
        user("u"),
        json!([{"type": "system", "system_id": "all", "roles": [{"id": w.role("reader")}]}]),
        json!({})
    )
));
detail_test!(allowed_domains_required, 422, "allowed_domains_required", |w| create(
    &w,
    w.with(json!({"domain_resolution_mode": "claims_or_mapping", "rules": [rule("r1", reader_on(&w, &w.d_a))]}))
));
detail_test!(mapping_not_found, 404, "mapping_not_found", |w| w.admin(Method::GET, "/v4/mappings/nope", None));

// The operator checks (tier 2): a manager of domain A holds manager, member and reader on
// domain A and nothing on its projects.
detail_test!(role_grant_unauthorized, 403, "role_grant_unauthorized", |w| w.as_manager(
    Method::POST,
    "/v4/mappings",
    Some(one_rule(&w, user("u"), project_auth(&w, &w.p_a, &w.d_a, "reader"), json!({})))
));
detail_test!(role_grant_unauthorized_on_the_domain, 403, "role_grant_unauthorized", |w| w.as_manager(
    Method::POST,
    "/v4/mappings",
    Some(one_rule(
        &w,
        user("u"),
        json!([{"type": "domain", "domain_id": w.d_a, "roles": [{"id": w.role("admin")}]}]),
        json!({})
    ))
));
detail_test!(cross_domain_mapping, 403, "cross_domain_mapping", |w| w.as_manager(
    Method::POST,
    "/v4/mappings",
    Some(one_rule(&w, user("u"), project_auth(&w, &w.p_b, &w.d_b, "reader"), json!({})))
));
detail_test!(cross_domain_mapping_of_the_ruleset, 403, "cross_domain_mapping", |w| w.as_manager(
    Method::POST,
    "/v4/mappings",
    Some(w.with(json!({"domain_id": w.d_b})))
));
detail_test!(domain_mapping_unauthorized, 403, "domain_mapping_unauthorized", |w| w.as_manager(
    Method::POST,
    "/v4/mappings",
    Some(one_rule(&w, user("u"), reader_on(&w, &w.d_b), json!({})))
));
detail_test!(group_assignment_unauthorized, 403, "group_assignment_unauthorized", |w| w.as_manager(
    Method::POST,
    "/v4/mappings",
    Some(one_rule(&w, user("u"), reader_on(&w, &w.d_a), json!({"groups": [{"group_id": w.g_a, "group_name": "ga"}]})))
));
detail_test!(domain_resolution_mode_requires_admin, 422, "domain_resolution_mode_requires_admin", |w| w.as_manager(
    Method::POST,
    "/v4/mappings",
    Some(w.with(json!({"domain_resolution_mode": "claims_or_mapping", "allowed_domains": [w.d_a]})))
));

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn is_system_rules_need_a_system_administrator_and_the_admin_skips_tier_two() {
    let w = World::new().await;
    // Tier 1: the spec names no key for it.
    let sys = one_rule(&w, json!({"user_name": "u", "is_system": true}), reader_on(&w, &w.d_a), json!({}));
    let r = w.as_manager(Method::POST, "/v4/mappings", Some(sys)).await;
    assert_eq!((r.status, r.body.get("detail")), (StatusCode::FORBIDDEN, None), "{}", r.body);
    // What the manager may not do, the admin may.
    let groups = json!({"groups": [{"group_id": w.g_a, "group_name": "ga"}]});
    let r = create(&w, one_rule(&w, user("u"), project_auth(&w, &w.p_b, &w.d_b, "admin"), groups)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    // Nothing refused was stored.
    assert_eq!(w.admin(Method::GET, "/v4/mappings", None).await.body["mappings"].as_array().unwrap().len(), 1);
}

/// A user of domain A holding `admin` on A, with a domain-scoped token: under
/// `admin_scope = any` a cloud administrator for policy, never for the guard rails.
async fn domain_admin(w: &World) -> String {
    let u = w.t.create("/v3/users", "user", json!({"name": "dadm", "domain_id": w.d_a, "password": PASSWORD})).await;
    let grant = format!("/v3/domains/{}/users/{u}/roles/{}", w.d_a, w.role("admin"));
    assert_eq!(w.admin(Method::PUT, &grant, None).await.status, StatusCode::NO_CONTENT);
    w.t.token_for_id(&u, PASSWORD, json!({"domain": {"id": w.d_a}})).await
}

async fn count(w: &World) -> usize {
    w.admin(Method::GET, "/v4/mappings", None).await.body["mappings"].as_array().unwrap().len()
}

async fn trust_domain(w: &World, domain: &str, name: &str, pem: &str) -> String {
    w.t.create(
        "/v4/spiffe/trust_domains",
        "trust_domain",
        json!({"domain_id": domain, "provider_id": "mesh", "trust_domain": name, "trust_bundle_pem": pem}),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_cloud_administrator_names_a_global_or_another_domains_provider() {
    let w = World::new().await;
    let dadm = domain_admin(&w).await;
    let pem = crate::providers::tests::CERT;
    let td_b = trust_domain(&w, &w.d_b, "mesh.example", pem).await;
    let td_a = trust_domain(&w, &w.d_a, "mesh-a.example", pem).await;
    for (source, what) in [
        (json!({"type": "federation", "idp_id": w.idp_b}), "another domain's provider"),
        (json!({"type": "federation", "idp_id": w.idp_global}), "a global provider"),
        (json!({"type": "federation", "idp_id": "no-such-idp"}), "no provider"),
        (json!({"type": "k8s", "cluster_id": w.idp_a}), "a provider of another kind"),
        (json!({"type": "spiffe", "trust_domain": td_b}), "B's trust domain by id"),
        (json!({"type": "spiffe", "trust_domain": "mesh.example"}), "B's trust domain by name"),
    ] {
        for (who, token) in [("manager", &w.manager), ("domain admin", &dadm)] {
            let r = w.t.call(Method::POST, "/v4/mappings", Some(token), Some(w.with(json!({"source": source})))).await;
            assert_eq!(r.body["detail"], json!("cross_domain_mapping"), "{who}, {what}: {}", r.body);
            assert_detail(&r, 403, "cross_domain_mapping");
        }
    }
    assert_eq!(count(&w).await, 0, "nothing refused is stored");
    // Its own domain's providers, by id or (a trust domain) by name.
    for source in [
        json!({"type": "federation", "idp_id": w.idp_a}),
        json!({"type": "spiffe", "trust_domain": td_a}),
        json!({"type": "spiffe", "trust_domain": "mesh-a.example"}),
    ] {
        let r = w.as_manager(Method::POST, "/v4/mappings", Some(w.with(json!({"source": source})))).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    }
    // A PUT cannot move the source out either.
    let id = w.as_manager(Method::GET, "/v4/mappings", None).await.body["mappings"][0]["mapping_id"].clone();
    let moved = w.with(json!({"source": {"type": "federation", "idp_id": w.idp_b}}));
    let r = w.as_manager(Method::PUT, &format!("/v4/mappings/{}", id.as_str().unwrap()), Some(moved)).await;
    assert_detail(&r, 403, "cross_domain_mapping");
    // The cloud administrator may.
    let r = create(&w, w.with(json!({"source": {"type": "federation", "idp_id": w.idp_global}}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_domain_admin_names_no_privileged_or_foreign_user_group_or_role() {
    let w = World::new().await;
    let dadm = domain_admin(&w).await;
    let admin_id = w.t.node.engine.read().bootstrap_info().unwrap().unwrap().admin_user_id;
    let admin_role = w.role("admin");
    // A group and a user of A made privileged by the cloud administrator, a group of B, and
    // a role implying service that the domain admin holds on A.
    let ops = w.t.create("/v3/groups", "group", json!({"name": "ops", "domain_id": w.d_a})).await;
    let boss = w.t.create("/v3/users", "user", json!({"name": "boss", "domain_id": w.d_a})).await;
    for who in [format!("groups/{ops}"), format!("users/{boss}")] {
        let grant = format!("/v3/projects/{}/{who}/roles/{admin_role}", w.p_a);
        assert_eq!(w.admin(Method::PUT, &grant, None).await.status, StatusCode::NO_CONTENT);
    }
    let g_b = w.t.create("/v3/groups", "group", json!({"name": "gb", "domain_id": w.d_b})).await;
    let sup = w.t.create("/v3/roles", "role", json!({"name": "super"})).await;
    let r = w.admin(Method::PUT, &format!("/v3/roles/{sup}/implies/{}", w.role("service")), None).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let dadm_id = w.t.node.engine.read().id_by_name(ns::USER_NAME, &w.d_a, "dadm").unwrap().unwrap();
    let grant = format!("/v3/domains/{}/users/{dadm_id}/roles/{sup}", w.d_a);
    assert_eq!(w.admin(Method::PUT, &grant, None).await.status, StatusCode::NO_CONTENT);

    let local = |id: &str| json!({"identity_mode": "local", "user_name": "x", "user_id": id});
    let on_a = |role: &str| json!([{"type": "domain", "domain_id": w.d_a, "roles": [{"id": role}]}]);
    let reader = reader_on(&w, &w.d_a);
    let cases = [
        (
            "the bootstrap admin by id",
            one_rule(&w, local(&admin_id), reader.clone(), json!({})),
            "cross_domain_mapping",
        ),
        (
            "a privileged user of the domain",
            one_rule(&w, local(&boss), reader.clone(), json!({})),
            "user_mapping_unauthorized",
        ),
        (
            "a privileged group by name",
            one_rule(&w, user("u"), reader.clone(), json!({"groups": [{"group_name": "ops"}]})),
            "group_assignment_unauthorized",
        ),
        (
            "a privileged group by id",
            one_rule(&w, user("u"), reader.clone(), json!({"groups": [{"group_id": ops, "group_name": "ops"}]})),
            "group_assignment_unauthorized",
        ),
        (
            "B's group by id",
            one_rule(&w, user("u"), reader.clone(), json!({"groups": [{"group_id": g_b, "group_name": "x"}]})),
            "cross_domain_mapping",
        ),
        (
            "B's group by name",
            one_rule(
                &w,
                user("u"),
                reader.clone(),
                json!({"groups": [{"group_name": "gb", "group_domain_id": w.d_b}]}),
            ),
            "cross_domain_mapping",
        ),
        ("admin on its domain", one_rule(&w, user("u"), on_a(&admin_role), json!({})), "role_grant_unauthorized"),
        ("a role implying service", one_rule(&w, user("u"), on_a(&sup), json!({})), "role_grant_unauthorized"),
    ];
    for (what, body, key) in &cases {
        let r = w.t.call(Method::POST, "/v4/mappings", Some(&dadm), Some(body.clone())).await;
        assert_eq!(r.body["detail"], json!(key), "{what}: {}", r.body);
        assert_detail(&r, 403, key);
    }
    // A manager, who holds no admin on the domain, binds no group by name either.
    let by_name = one_rule(&w, user("u"), reader.clone(), json!({"groups": [{"group_name": "ga"}]}));
    assert_detail(
        &w.as_manager(Method::POST, "/v4/mappings", Some(by_name)).await,
        403,
        "group_assignment_unauthorized",
    );
    assert_eq!(count(&w).await, 0, "nothing refused is stored");
    // Its own ordinary group, by name or id, and a user id of its domain nobody holds, pass.
    let fine = one_rule(
        &w,
        local("someone-new"),
        reader,
        json!({"groups": [{"group_name": "ga"}, {"group_id": w.g_a, "group_name": "ga"}]}),
    );
    let r = w.t.call(Method::POST, "/v4/mappings", Some(&dadm), Some(fine)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    // The cloud administrator skips tier two.
    for (what, body, _) in cases {
        assert_eq!(create(&w, body).await.status, StatusCode::CREATED, "the admin: {what}");
    }
}
