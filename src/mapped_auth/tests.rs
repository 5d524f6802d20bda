//! Logins through mappings against real token issuers on loopback (a JWKS endpoint with an RSA
//! and an EC key, a TokenReview API over HTTPS, a SPIFFE bundle), through the real router:
//! each kind of principal, the ruleset-version checks of mapped tokens with their detail
//! keys, the virtual user's limits, the per-provider rate limits and the regex deadline's
//! audit event.

use std::net::SocketAddr;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::clock::now_secs;
use crate::providers::tests::verification::{serve_api, serve_jwks, TestKey};
use crate::state::keys::ns;
use crate::state::scim::{derived_user_id, DerivedBy};
use crate::state::shadow::{keys as shadow_keys, virtual_user_id, VirtualUserMetadata};
use crate::state::{cf, Reader};
use crate::testkit::{send_with_headers, Reply, TestNode};

const ISSUER: &str = "https://idp.example.test";
/// The issuers these tests run are on loopback, which a node calls only with this setting.
pub(crate) const PRIVATE_NETWORKS: (&str, &str, &str) = ("federation", "allow_private_networks", "true");
const CLIENT_ID: &str = "idnode-client";

fn role(t: &TestNode, name: &str) -> String {
    t.node.engine.read().id_by_name(ns::ROLE_NAME, "", name).unwrap().unwrap()
}

fn subject(r: &Reply) -> String {
    r.headers.get("x-subject-token").and_then(|v| v.to_str().ok()).expect("x-subject-token").to_string()
}

fn claims(sub: &str, email: &str) -> Value {
    let n = now_secs();
    json!({"iss": ISSUER, "aud": CLIENT_ID, "sub": sub, "email": email, "exp": n + 300, "iat": n, "nbf": n})
}

/// The claims of `sub` (`{sub}@corp.example`) naming `target` as the user to become.
fn claims_targeting(sub: &str, target: &str) -> Value {
    let mut c = claims(sub, &format!("{sub}@corp.example"));
    c["target"] = json!(target);
    c
}

/// A domain with a project, an OIDC provider whose keys are served on loopback, and the ids.
struct Fed {
    t: TestNode,
    domain: String,
    project: String,
    idp: String,
    rsa: TestKey,
    ec: TestKey,
    _dir: tempfile::TempDir,
}

/// An OIDC provider `provider_id` of `domain` whose keys `jwks` serves.
async fn provider(t: &TestNode, domain: &str, provider_id: &str, jwks: SocketAddr) -> String {
    t.create(
        "/v4/federation/identity_providers",
        "identity_provider",
        json!({"domain_id": domain, "provider_id": provider_id, "issuer": ISSUER, "client_id": CLIENT_ID,
               "jwks_uri": format!("http://{jwks}/jwks")}),
    )
    .await
}

impl Fed {
    async fn new(settings: &[(&str, &str, &str)]) -> Fed {
        let dir = tempfile::tempdir().unwrap();
        let rsa = TestKey::rsa(dir.path(), "rsa-1");
        let ec = TestKey::ec(dir.path(), "ec-1");
        let (_server, addr) = serve_jwks(vec![rsa.jwk(), ec.jwk()]).await;
        let mut settings = settings.to_vec();
        settings.push(PRIVATE_NETWORKS);
        let t = TestNode::start_with(&settings).await;
        let domain = t.create("/v3/domains", "domain", json!({"name": "corp"})).await;
        let project = t.create("/v3/projects", "project", json!({"name": "apps", "domain_id": domain})).await;
        let idp = provider(&t, &domain, "corp", addr).await;
        Fed { t, domain, project, idp, rsa, ec, _dir: dir }
    }

    /// A fixed ruleset of the domain naming `source`, with `rules`.
    async fn mapping(&self, id: &str, source: Value, rules: Value) -> Reply {
        let body = json!({"mapping": {"mapping_id": id, "domain_id": self.domain, "provider_id": "corp",
                                      "source": source, "rules": rules}});
        self.t.admin(Method::POST, "/v4/mappings", Some(body)).await
    }

    /// A rule granting `member` on the project to `@corp.example` addresses.
    fn staff_rule(&self, mode: &str) -> Value {
        json!({"name": "staff",
               "match": {"all_of": [{"type": "matches_regex", "claim": "email", "regex": "^[a-z]+@corp\\.example$"}]},
               "identity": {"identity_mode": mode, "user_name": "${claims.email}"},
               "authorizations": [{"type": "project", "project_id": self.project, "project_domain_id": self.domain,
                                   "roles": [{"id": role(&self.t, "member")}]}]})
    }

    async fn jwt_login(&self, jwt: &str, scope: Option<Value>) -> Reply {
        let path = format!("/v4/federation/identity_providers/{}/jwt", self.idp);
        let bearer = format!("Bearer {jwt}");
        let body = scope.map(|s| json!({"auth": {"scope": s}}));
        send_with_headers(&self.t.router, Method::POST, &path, &[("authorization", &bearer)], body).await
    }

    /// `sub`'s unscoped login asking to become `target`, which it does.
    async fn logs_in_as(&self, sub: &str, target: &str) {
        let r = self.jwt_login(&self.ec.sign(&claims_targeting(sub, target)), None).await;
        assert_eq!((r.status, &r.body["token"]["user"]["id"]), (StatusCode::OK, &json!(target)), "{}", r.body);
    }

    fn project_scope(&self) -> Value {
        json!({"project": {"id": self.project}})
    }

    async fn validate(&self, token: &str) -> Reply {
        self.t.admin(Method::GET, &format!("/v3/auth/tokens#{token}"), None).await
    }
}

fn role_names(r: &Reply) -> Vec<String> {
    r.body["token"]["roles"]
        .as_array()
        .map_or(vec![], |a| a.iter().map(|r| r["name"].as_str().unwrap().into()).collect())
}

#[tokio::test]
async fn an_idp_jwt_signed_by_rsa_or_ec_logs_a_local_user_in_and_a_bad_one_is_401() {
    let f = Fed::new(&[]).await;
    let r =
        f.mapping("corp-staff", json!({"type": "federation", "idp_id": f.idp}), json!([f.staff_rule("local")])).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);

    for key in [&f.rsa, &f.ec] {
        let r = f.jwt_login(&key.sign(&claims("alice", "alice@corp.example")), Some(f.project_scope())).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        assert_eq!(r.body["token"]["methods"], json!(["mapped"]));
        assert_eq!(r.body["token"]["project"]["id"], json!(f.project));
        assert!(role_names(&r).contains(&"member".to_string()), "{}", r.body);
        assert_eq!(r.body["token"]["user"]["name"], json!("alice@corp.example"));
        let v = f.validate(&subject(&r)).await;
        assert_eq!(v.status, StatusCode::OK, "{}", v.body);
    }
    // A real user, federated, found again (not created twice) on the next login.
    let uid = derived_user_id(DerivedBy::Mapped, &f.domain, &f.idp, "alice");
    let users = f.t.admin(Method::GET, "/v3/users?unique_id=alice", None).await;
    assert_eq!(users.body["users"].as_array().unwrap().len(), 1, "{}", users.body);
    assert_eq!(users.body["users"][0]["id"], json!(uid));
    let before = f.t.node.app.state_version();
    let r = f.jwt_login(&f.ec.sign(&claims("alice", "alice@corp.example")), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.body["token"].get("project").is_none(), "no scope asked: unscoped");
    assert_eq!(f.t.node.app.state_version(), before, "an unchanged user is not written again");

    // Each refusal is 401.
    let n = now_secs();
    let bad: Vec<(&str, String)> = vec![
        ("no rule matches", f.ec.sign(&claims("mallory", "mallory@elsewhere.example"))),
        ("wrong issuer", f.ec.sign(&json!({"iss": "https://other.example", "aud": CLIENT_ID, "sub": "a", "email": "a@corp.example", "exp": n + 300}))),
        ("wrong audience", f.ec.sign(&json!({"iss": ISSUER, "aud": "someone-else", "sub": "a", "email": "a@corp.example", "exp": n + 300}))),
        ("expired", f.ec.sign(&json!({"iss": ISSUER, "aud": CLIENT_ID, "sub": "a", "email": "a@corp.example", "exp": n - 3600}))),
        ("not yet valid", f.ec.sign(&json!({"iss": ISSUER, "aud": CLIENT_ID, "sub": "a", "email": "a@corp.example", "exp": n + 7200, "nbf": n + 3600}))),
        ("unknown kid", {
            let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
            h.kid = Some("no-such-kid".into());
            jsonwebtoken::encode(&h, &claims("a", "a@corp.example"), &f.ec.enc).unwrap()
        }),
        ("bad signature", {
            let good = f.rsa.sign(&claims("a", "a@corp.example"));
            let (head, _) = good.rsplit_once('.').unwrap();
            format!("{head}.{}", "A".repeat(342))
        }),
    ];
    for (why, jwt) in bad {
        let r = f.jwt_login(&jwt, None).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{why}: {}", r.body);
    }
    let path = format!("/v4/federation/identity_providers/{}/jwt", f.idp);
    let r = send_with_headers(&f.t.router, Method::POST, &path, &[], None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "no bearer");
    let r = f
        .jwt_login(&f.ec.sign(&claims("alice", "alice@corp.example")), Some(json!({"domain": {"id": f.domain}})))
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "no role on the domain: {}", r.body);
}

#[tokio::test]
async fn a_changed_disabled_or_deleted_ruleset_fails_its_tokens_with_the_spec_detail() {
    let f = Fed::new(&[]).await;
    let source = json!({"type": "federation", "idp_id": f.idp});
    let mut spare = f.staff_rule("ephemeral");
    spare["name"] = json!("spare");
    let r = f.mapping("m1", source, json!([f.staff_rule("ephemeral"), spare])).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let login = || async { f.jwt_login(&f.ec.sign(&claims("svc", "svc@corp.example")), Some(f.project_scope())).await };

    let detail = |r: &Reply| r.body["detail"].as_str().unwrap_or_default().to_string();
    let token = subject(&login().await);
    assert_eq!(f.validate(&token).await.status, StatusCode::OK);
    // Any change: the version no longer matches (the versions are not echoed).
    let mut changed = f.staff_rule("ephemeral");
    changed["name"] = json!("spare");
    changed["description"] = json!("changed");
    let r =
        f.t.admin(
            Method::POST,
            "/v4/mappings/m1/rules/mutate",
            Some(json!({"mutations": [{"operation": "update", "rule_name": "spare", "rule": changed}]})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let v = f.validate(&token).await;
    assert_eq!((v.status, detail(&v).as_str()), (StatusCode::UNAUTHORIZED, "ruleset_version_mismatch"), "{}", v.body);
    assert!(!v.text.contains("ruleset_version\""), "{}", v.text);
    // As a caller's own token too.
    let me = f.t.call(Method::GET, "/v3/auth/projects", Some(&token), None).await;
    assert_eq!((me.status, detail(&me).as_str()), (StatusCode::UNAUTHORIZED, "ruleset_version_mismatch"));

    let token = subject(&login().await);
    let r =
        f.t.admin(
            Method::POST,
            "/v4/mappings/m1/rules/mutate",
            Some(json!({"mutations": [{"operation": "delete", "rule_name": "staff"}]})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let v = f.validate(&token).await;
    assert_eq!((v.status, detail(&v).as_str()), (StatusCode::FORBIDDEN, "mapping_rule_removed"), "{}", v.body);
    assert!(!v.text.contains("staff"), "the rule's name is not echoed: {}", v.text);

    let token = subject(&login().await); // the spare rule matches now
    let mut body = f.t.admin(Method::GET, "/v4/mappings/m1", None).await.body;
    body["mapping"]["enabled"] = json!(false);
    body["mapping"].as_object_mut().unwrap().remove("ruleset_version");
    let r = f.t.admin(Method::PUT, "/v4/mappings/m1", Some(body)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let v = f.validate(&token).await;
    assert_eq!((v.status, detail(&v).as_str()), (StatusCode::FORBIDDEN, "mapping_disabled"), "{}", v.body);
    let r = login().await;
    assert_eq!((r.status, detail(&r).as_str()), (StatusCode::FORBIDDEN, "mapping_disabled"), "{}", r.body);

    assert_eq!(f.t.admin(Method::DELETE, "/v4/mappings/m1", None).await.status, StatusCode::NO_CONTENT);
    let v = f.validate(&token).await;
    assert_eq!((v.status, detail(&v).as_str()), (StatusCode::NOT_FOUND, "mapping_not_found"), "{}", v.body);
    let r = login().await;
    assert_eq!((r.status, detail(&r).as_str()), (StatusCode::NOT_FOUND, "mapping_not_found"), "{}", r.body);
}

/// A domain `k8s` with a project `web`, a group `readers` holding `group_role` there, a
/// cluster instance served on loopback, and a ruleset whose rule `web` makes the `apps`
/// namespace's service accounts virtual users bound to `readers`, with `rule_role` on `web`.
struct K8sWeb {
    t: TestNode,
    project: String,
    group: String,
    instance: String,
    /// The group's grant.
    grant: String,
    _api: std::sync::Arc<crate::providers::tests::verification::ApiServer>,
    _dir: tempfile::TempDir,
}

impl K8sWeb {
    async fn new(settings: &[(&str, &str, &str)], group_role: &str, rule_role: &str) -> K8sWeb {
        let dir = tempfile::tempdir().unwrap();
        let (api, addr, ca) = serve_api(dir.path()).await;
        let mut settings = settings.to_vec();
        settings.push(PRIVATE_NETWORKS);
        let t = TestNode::start_with(&settings).await;
        let domain = t.create("/v3/domains", "domain", json!({"name": "k8s"})).await;
        let project = t.create("/v3/projects", "project", json!({"name": "web", "domain_id": domain})).await;
        let group = t.create("/v3/groups", "group", json!({"name": "readers", "domain_id": domain})).await;
        let grant = format!("/v3/projects/{project}/groups/{group}/roles/{}", role(&t, group_role));
        assert_eq!(t.admin(Method::PUT, &grant, None).await.status, StatusCode::NO_CONTENT);
        let instance = t
            .create(
                "/v4/k8s_auth/instances",
                "instance",
                json!({"domain_id": domain, "provider_id": "prod", "kubernetes_host": format!("https://{addr}"),
                       "kubernetes_ca_cert": ca, "token_reviewer_jwt": "reviewer-jwt"}),
            )
            .await;
        let rule = json!({"name": "web",
            "match": {"all_of": [{"type": "equals", "claim": "namespace", "value": "apps"},
                                 {"type": "equals", "claim": "service_account", "value": "web"}]},
            "identity": {"user_name": "${claims.namespace}-${claims.service_account}"},
            "groups": [{"group_name": "readers", "strategy": "get"}],
            "authorizations": [{"type": "project", "project_id": project, "project_domain_id": domain,
                                "roles": [{"id": role(&t, rule_role)}]}]});
        let body = json!({"mapping": {"mapping_id": "k8s-web", "domain_id": domain, "provider_id": "prod",
                                      "source": {"type": "k8s", "cluster_id": instance}, "rules": [rule]}});
        assert_eq!(t.admin(Method::POST, "/v4/mappings", Some(body)).await.status, StatusCode::CREATED);
        K8sWeb { t, project, group, instance, grant, _api: api, _dir: dir }
    }
}

#[tokio::test]
async fn a_kubernetes_service_account_becomes_a_virtual_user_that_cannot_use_credentials_or_trusts() {
    let K8sWeb { t, project, group, instance, .. } = &K8sWeb::new(&[], "reader", "member").await;

    let path = format!("/v4/k8s_auth/instances/{instance}/auth");
    let r = t
        .call(Method::POST, &path, None, Some(json!({"jwt": "sa-token", "scope": {"project": {"id": project}}})))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let roles = role_names(&r);
    assert!(roles.contains(&"member".into()) && roles.contains(&"reader".into()), "rule and group roles: {roles:?}");
    assert_eq!(r.body["token"]["user"]["name"], json!("apps-web"));
    let token = subject(&r);

    // The shadow registry holds it; no user record does.
    let uid = virtual_user_id(instance, "system:serviceaccount:apps:web");
    assert_eq!(r.body["token"]["user"]["id"], json!(uid));
    let rec: VirtualUserMetadata =
        t.node.engine.read().get_t(cf::SHADOW, &shadow_keys::record(&uid)).unwrap().expect("shadow record");
    assert_eq!((rec.mapping_id.as_str(), rec.matched_rule_name.as_str(), rec.enabled), ("k8s-web", "web", true));
    assert_eq!(rec.resolved_group_bindings[0].resolved_group_id, *group);
    assert!(t.node.engine.read().user(&uid).unwrap().is_none());

    // Spec, Authentication item 6.
    let trust = json!({"trust": {"trustor_user_id": uid, "trustee_user_id": uid, "impersonation": false,
                                 "project_id": project, "roles": [{"name": "member"}]}});
    let refused = [
        (format!("/v3/users/{uid}/application_credentials"), json!({"application_credential": {"name": "x"}})),
        ("/v3/credentials".to_string(), json!({"credential": {"type": "totp", "user_id": uid, "blob": "x"}})),
        ("/v3/OS-TRUST/trusts".to_string(), trust),
    ];
    for (path, body) in refused {
        let r = t.call(Method::POST, &path, Some(&token), Some(body)).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{path}: {}", r.body);
        assert!(r.text.contains("virtual user"), "{path}: {}", r.text);
    }

    // A re-scoped token stays bound to the mapping.
    let rescoped = t
        .call(
            Method::POST,
            "/v3/auth/tokens",
            None,
            Some(json!({"auth": {"identity": {"methods": ["token"], "token": {"id": token}},
                                   "scope": {"project": {"id": project}}}})),
        )
        .await;
    assert_eq!(rescoped.status, StatusCode::OK, "{}", rescoped.body);

    // Tokens the cluster does not authenticate are 401; an unknown instance 404.
    let r = t.call(Method::POST, &path, None, Some(json!({"jwt": "expired-token"}))).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    let r = t.call(Method::POST, "/v4/k8s_auth/instances/nope/auth", None, Some(json!({"jwt": "sa-token"}))).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    // A disabled virtual user is refused at validation and re-enabled by its next login.
    let cmd =
        crate::state::shadow::ShadowCommand::DisableInactive { before: now_secs() + 10, at: now_secs(), limit: 10 };
    t.node.propose(crate::state::Command::Shadow(cmd)).await.unwrap();
    assert_eq!(t.admin(Method::GET, &format!("/v3/auth/tokens#{token}"), None).await.status, StatusCode::NOT_FOUND);
    let r = t.call(Method::POST, &path, None, Some(json!({"jwt": "sa-token"}))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

#[tokio::test]
async fn a_spiffe_svid_logs_in_offline_for_the_configured_audience_only() {
    let dir = tempfile::tempdir().unwrap();
    let key = TestKey::ec(dir.path(), "bundle-1");
    let t = TestNode::start_with(&[("keystone", "spiffe_jwt_audience", "idnode-test")]).await;
    let domain = t.create("/v3/domains", "domain", json!({"name": "mesh"})).await;
    let td = t
        .create(
            "/v4/spiffe/trust_domains",
            "trust_domain",
            json!({"domain_id": domain, "provider_id": "mesh", "trust_domain": "prod.example.test",
                       "trust_bundle_pem": key.cert_pem}),
        )
        .await;
    let rule = json!({"name": "payments",
        "match": {"any_of": [{"type": "matches_regex", "claim": "sub", "regex": "^spiffe://prod\\.example\\.test/ns/payments/"}]},
        "identity": {"user_name": "${claims.sub}"},
        "authorizations": [{"type": "domain", "domain_id": domain, "roles": [{"id": role(&t, "reader")}]}]});
    let body = json!({"mapping": {"domain_id": domain, "provider_id": "mesh",
                                  "source": {"type": "spiffe", "trust_domain": "prod.example.test"}, "rules": [rule]}});
    assert_eq!(t.admin(Method::POST, "/v4/mappings", Some(body)).await.status, StatusCode::CREATED);
    let svid = |aud: &str| {
        key.sign(
            &json!({"sub": "spiffe://prod.example.test/ns/payments/sa/api", "aud": [aud], "exp": now_secs() + 300}),
        )
    };
    let path = format!("/v4/spiffe/trust_domains/{td}/auth");
    let r = t
        .call(Method::POST, &path, None, Some(json!({"jwt": svid("idnode-test"), "scope": {"domain": {"id": domain}}})))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(role_names(&r), vec!["reader".to_string()]);
    let r = t.call(Method::POST, &path, None, Some(json!({"jwt": svid("someone-else")}))).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
}

#[tokio::test]
async fn per_provider_rate_limits_answer_429() {
    let f = Fed::new(&[
        ("keystone", "shadow_registry_auth_rate_limit", "3"),
        ("keystone", "shadow_registry_creation_rate_limit", "2"),
    ])
    .await;
    let r = f.mapping("m", json!({"type": "federation", "idp_id": f.idp}), json!([f.staff_rule("ephemeral")])).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let mut statuses = Vec::new();
    for who in ["a", "b", "c"] {
        statuses.push(f.jwt_login(&f.ec.sign(&claims(who, &format!("{who}@corp.example"))), None).await.status);
    }
    assert_eq!(statuses, [StatusCode::OK, StatusCode::OK, StatusCode::TOO_MANY_REQUESTS], "the third creation");
    let r = f.jwt_login(&f.ec.sign(&claims("a", "a@corp.example")), None).await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "the fourth authentication");
    assert!(r.headers.contains_key("retry-after"));
}

#[tokio::test]
async fn a_regex_match_outliving_its_deadline_is_no_match_and_an_audit_event() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("audit.jsonl");
    let file_s = file.display().to_string();
    let f = Fed::new(&[("keystone", "mapping_regex_timeout_ms", "0.000001"), ("audit", "file", &file_s)]).await;
    let r = f.mapping("slow", json!({"type": "federation", "idp_id": f.idp}), json!([f.staff_rule("ephemeral")])).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let r = f.jwt_login(&f.ec.sign(&claims("alice", "alice@corp.example")), None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "the timed-out match counts as no match: {}", r.body);
    assert!(f.t.node.audit.flush(Duration::from_secs(5)).await);
    let text = std::fs::read_to_string(&file).unwrap();
    let event: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["outcome"] == json!("RegexMatchTimeout"))
        .expect("a RegexMatchTimeout event");
    assert_eq!(event["target"]["id"], json!("slow"));
    assert!(!text.contains("alice@corp.example"), "the claim's value is not logged");
}

#[tokio::test]
async fn a_group_the_rule_only_gets_must_exist() {
    let f = Fed::new(&[]).await;
    let mut rule = f.staff_rule("local");
    rule["groups"] = json!([{"group_name": "no-such-group", "strategy": "get"}]);
    let mut made = f.staff_rule("local");
    made["name"] = json!("made");
    made["match"] = json!({"all_of": [{"type": "equals", "claim": "sub", "value": "bob"}]});
    made["groups"] = json!([{"group_name": "engineers", "strategy": "create_or_get"}]);
    let r = f.mapping("g", json!({"type": "federation", "idp_id": f.idp}), json!([made, rule])).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let r = f.jwt_login(&f.ec.sign(&claims("alice", "alice@corp.example")), None).await;
    assert_eq!((r.status, r.body["detail"].clone()), (StatusCode::FORBIDDEN, json!("group_not_found")), "{}", r.body);
    let uid = derived_user_id(DerivedBy::Mapped, &f.domain, &f.idp, "alice");
    assert!(f.t.node.engine.read().user(&uid).unwrap().is_none(), "a refused login writes nothing");
    // create_or_get makes the group and the user joins it.
    let r = f.jwt_login(&f.ec.sign(&claims("bob", "bob@corp.example")), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let bob = derived_user_id(DerivedBy::Mapped, &f.domain, &f.idp, "bob");
    let groups = f.t.admin(Method::GET, &format!("/v3/users/{bob}/groups"), None).await;
    assert_eq!(groups.body["groups"][0]["name"], json!("engineers"), "{}", groups.body);
}

/// The browser flow against a real OIDC provider: this node's own authorization server,
/// served on loopback, federated into itself (discovery, authorize with PKCE and nonce, the
/// code redeemed with HTTP Basic, the ID token verified against its JWKS).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_browser_flow_logs_in_through_a_real_oidc_provider() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let t = TestNode::start_with(&[("idnode", "public_url", &base), PRIVATE_NETWORKS]).await;
    let app = t.router.clone().into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let cb = "http://127.0.0.1:9/cb";
    let pw = "river stone 42";
    t.create("/v3/users", "user", json!({"name": "carol", "domain_id": "default", "password": pw})).await;
    let project = t.create("/v3/projects", "project", json!({"name": "fed", "domain_id": "default"})).await;
    let r = t
        .admin(Method::POST, "/v4/oauth2/default/clients",
               Some(json!({"oauth2_client": {"name": "federation", "confidential": true, "pre_authorized": true,
                   "grant_types": ["authorization_code"], "redirect_uris": [cb], "allowed_scopes": ["openid", "email"]}})))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let client_id = r.body["oauth2_client"]["client_id"].as_str().unwrap().to_string();
    let secret = r.body["client_secret"].as_str().unwrap().to_string();
    let issuer = format!("{base}/v4/oauth2/default");
    let idp = t
        .create(
            "/v4/federation/identity_providers",
            "identity_provider",
            json!({"domain_id": "default", "provider_id": "self", "issuer": issuer, "client_id": client_id,
                       "client_secret": secret, "jwks_uri": format!("{issuer}/jwks"),
                       "allowed_redirect_uris": [cb], "oidc_scopes": ["openid", "email"]}),
        )
        .await;
    let rule = json!({"name": "everyone", "match": {"all_of": [{"type": "matches_regex", "claim": "sub", "regex": "^[0-9a-f]{32}$"}]},
        "identity": {"identity_mode": "local", "user_name": "fed-${claims.sub}"},
        "authorizations": [{"type": "project", "project_id": project, "project_domain_id": "default",
                            "roles": [{"id": role(&t, "member")}]}]});
    let body = json!({"mapping": {"domain_id": "default", "provider_id": "self",
                                  "source": {"type": "federation", "idp_id": idp}, "rules": [rule]}});
    assert_eq!(t.admin(Method::POST, "/v4/mappings", Some(body)).await.status, StatusCode::CREATED);

    // Start: the provider's authorization URL.
    let r = t
        .call(
            Method::POST,
            &format!("/v4/federation/identity_providers/{idp}/auth"),
            None,
            Some(json!({"redirect_uri": cb, "scope": {"project": {"id": project}}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    // The browser-binding cookie: random, HttpOnly, SameSite=Lax, only for the callback.
    let set_cookie = r.headers["set-cookie"].to_str().unwrap().to_string();
    for attr in ["HttpOnly", "SameSite=Lax", "Path=/v4/federation/oidc/callback"] {
        assert!(set_cookie.contains(attr), "{set_cookie}");
    }
    let browser_cookie = set_cookie.split(';').next().unwrap().to_string();
    let auth_url = url::Url::parse(r.body["auth_url"].as_str().unwrap()).unwrap();
    let q: std::collections::HashMap<String, String> = auth_url.query_pairs().into_owned().collect();
    assert_eq!((q["code_challenge_method"].as_str(), q["client_id"].as_str()), ("S256", client_id.as_str()));
    assert!(q["scope"].split(' ').any(|s| s == "openid") && q.contains_key("nonce"));
    let r = t
        .call(
            Method::POST,
            &format!("/v4/federation/identity_providers/{idp}/auth"),
            None,
            Some(json!({"redirect_uri": "http://127.0.0.1:9/elsewhere"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "not an allowed redirect URI");

    // The browser at the provider: the sign-in page, then the login post.
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let page = http.get(auth_url.as_str()).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let cookie = page.headers()["set-cookie"].to_str().unwrap().split(';').next().unwrap().to_string();
    let html = page.text().await.unwrap();
    let st = regex::Regex::new(r#"name="page_state" value="([^"]*)""#).unwrap().captures(&html).unwrap()[1].to_string();
    let form = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("page_state", &st)
        .append_pair("username", "carol")
        .append_pair("password", pw)
        .finish();
    let back = http
        .post(format!("{issuer}/authorize/login"))
        .header("cookie", cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .unwrap();
    assert_eq!(back.status(), 303, "{}", back.text().await.unwrap_or_default());
    let loc = url::Url::parse(back.headers()["location"].to_str().unwrap()).unwrap();
    let back_q: std::collections::HashMap<String, String> = loc.query_pairs().into_owned().collect();
    assert!(loc.as_str().starts_with(cb));

    // The redirect page posts what it got: refused from another browser (no cookie, or
    // another login's), before the code is spent ...
    let cb_body = json!({"state": back_q["state"], "code": back_q["code"]});
    let callback = |cookie: Option<String>, body: Value| {
        let router = t.router.clone();
        async move {
            let headers: Vec<(&str, &str)> = cookie.as_deref().map(|c| vec![("cookie", c)]).unwrap_or_default();
            send_with_headers(&router, Method::POST, "/v4/federation/oidc/callback", &headers, Some(body)).await
        }
    };
    let (name, _) = browser_cookie.split_once('=').unwrap();
    for cookie in
        [None, Some(format!("{name}=")), Some(format!("{name}=another-browsers-value")), Some("other=x".into())]
    {
        let r = callback(cookie.clone(), cb_body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{cookie:?}: {}", r.body);
        assert!(r.body["error"]["message"].as_str().unwrap().contains("browser"), "{}", r.body);
    }
    // ... and from the browser that started it: a token through the mapping.
    let r = callback(Some(browser_cookie.clone()), cb_body.clone()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.headers["set-cookie"].to_str().unwrap().contains("Max-Age=0"), "the binding is cleared");
    assert_eq!(r.body["token"]["project"]["id"], json!(project));
    assert!(r.body["token"]["user"]["name"].as_str().unwrap().starts_with("fed-"));
    assert!(role_names(&r).contains(&"member".to_string()));
    // The code was spent; a forged state opens nothing.
    let r = callback(Some(browser_cookie.clone()), cb_body).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    let r = t
        .call(
            Method::POST,
            "/v4/federation/oidc/callback",
            None,
            Some(json!({"state": "forged", "code": back_q["code"]})),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_local_user_whose_name_another_user_holds_is_a_shadow_registry_conflict() {
    let f = Fed::new(&[]).await;
    f.t.create("/v3/users", "user", json!({"name": "taken", "domain_id": f.domain})).await;
    let mut rule = f.staff_rule("local");
    rule["identity"]["user_name"] = json!("taken");
    let r = f.mapping("clash", json!({"type": "federation", "idp_id": f.idp}), json!([rule])).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let r = f.jwt_login(&f.ec.sign(&claims("dave", "dave@corp.example")), None).await;
    assert_eq!(
        (r.status, r.body["detail"].clone()),
        (StatusCode::CONFLICT, json!("shadow_registry_conflict")),
        "{}",
        r.body
    );
    let uid = derived_user_id(DerivedBy::Mapped, &f.domain, &f.idp, "dave");
    assert!(f.t.node.engine.read().user(&uid).unwrap().is_none(), "nothing written");
}

#[tokio::test]
async fn a_local_login_becomes_only_a_user_this_provider_made() {
    let f = Fed::new(&[]).await;
    let admin_id = f.t.node.engine.read().bootstrap_info().unwrap().unwrap().admin_user_id;
    // Users the provider did not make: the bootstrap admin, a user of the domain made through
    // v3, and one another provider of the domain federated.
    let plain = f.t.create("/v3/users", "user", json!({"name": "plain", "domain_id": f.domain})).await;
    let (_keys, addr) = serve_jwks(vec![f.ec.jwk()]).await;
    let other = provider(&f.t, &f.domain, "other", addr).await;
    let r = f.mapping("other", json!({"type": "federation", "idp_id": other}), json!([f.staff_rule("local")])).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let path = format!("/v4/federation/identity_providers/{other}/jwt");
    let bearer = format!("Bearer {}", f.ec.sign(&claims("erin", "erin@corp.example")));
    let r = send_with_headers(&f.t.router, Method::POST, &path, &[("authorization", &bearer)], None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let erin = r.body["token"]["user"]["id"].as_str().unwrap().to_string();

    // A ruleset (the cloud administrator's, or one written before the checks) naming each.
    let mut rule = f.staff_rule("local");
    rule["identity"]["user_id"] = json!("${claims.target}");
    rule["groups"] = json!([{"group_name": "staff"}]);
    let r = f.mapping("named", json!({"type": "federation", "idp_id": f.idp}), json!([rule])).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let before = f.t.node.app.state_version();
    for (who, id) in [("the bootstrap admin", &admin_id), ("a v3 user", &plain), ("another provider's user", &erin)] {
        let c = claims_targeting("mallory", id);
        let r =
            f.jwt_login(&f.ec.sign(&c), Some(json!({"project": {"name": "admin", "domain": {"id": "default"}}}))).await;
        assert_eq!(
            (r.status, r.body["detail"].clone()),
            (StatusCode::FORBIDDEN, json!("user_mapping_unauthorized")),
            "{who}: {}",
            r.body
        );
        assert!(r.headers.get("x-subject-token").is_none());
    }
    assert_eq!(f.t.node.app.state_version(), before, "nothing written");
    let fed: Vec<String> =
        f.t.node.engine.read().user(&admin_id).unwrap().unwrap().federated.iter().map(|i| i.idp_id.clone()).collect();
    assert!(fed.is_empty(), "{fed:?}");
    // The user this provider makes logs in, and again.
    for _ in 0..2 {
        f.logs_in_as("zed", "zed-user-id").await;
    }
}

#[tokio::test]
async fn a_domain_ruleset_binds_no_privileged_or_foreign_group_and_grants_no_privileged_role_at_login() {
    let f = Fed::new(&[]).await;
    let admin_role = role(&f.t, "admin");
    let other = f.t.create("/v3/domains", "domain", json!({"name": "elsewhere"})).await;
    let foreign = f.t.create("/v3/groups", "group", json!({"name": "foreign", "domain_id": other})).await;
    let ops_role = f.t.create("/v3/roles", "role", json!({"name": "ops"})).await;
    // Rules each binding a group or granting a role that is harmless when written.
    let rule = |name: &str, sub: &str, mode: &str, extra: Value| {
        let mut r = f.staff_rule(mode);
        r["name"] = json!(name);
        r["match"] = json!({"all_of": [{"type": "equals", "claim": "sub", "value": sub}]});
        for (k, v) in extra.as_object().unwrap() {
            r[k] = v.clone();
        }
        r
    };
    let rules = json!([
        rule("late", "a", "local", json!({"groups": [{"group_name": "late-admins"}]})),
        rule("late-virtual", "b", "ephemeral", json!({"groups": [{"group_name": "late-admins"}]})),
        rule("foreign", "c", "local", json!({"groups": [{"group_id": foreign, "group_name": "foreign"}]})),
        rule(
            "ops",
            "d",
            "ephemeral",
            json!({"authorizations": [{"type": "project", "project_id": f.project,
            "project_domain_id": f.domain, "roles": [{"id": ops_role}]}]})
        ),
    ]);
    let r = f.mapping("m", json!({"type": "federation", "idp_id": f.idp}), rules).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    // Then the state moves on: a group of that name is made and holds admin; ops implies service.
    let late = f.t.create("/v3/groups", "group", json!({"name": "late-admins", "domain_id": f.domain})).await;
    let grant = format!("/v3/projects/{}/groups/{late}/roles/{admin_role}", f.project);
    assert_eq!(f.t.admin(Method::PUT, &grant, None).await.status, StatusCode::NO_CONTENT);
    let r = f.t.admin(Method::PUT, &format!("/v3/roles/{ops_role}/implies/{}", role(&f.t, "service")), None).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);

    let before = f.t.node.app.state_version();
    for (sub, key) in [
        ("a", "group_assignment_unauthorized"),
        ("b", "group_assignment_unauthorized"),
        ("c", "cross_domain_mapping"),
        ("d", "role_grant_unauthorized"),
    ] {
        let r = f.jwt_login(&f.ec.sign(&claims(sub, &format!("{sub}@corp.example"))), Some(f.project_scope())).await;
        assert_eq!((r.status, r.body["detail"].clone()), (StatusCode::FORBIDDEN, json!(key)), "{sub}: {}", r.body);
    }
    assert_eq!(f.t.node.app.state_version(), before, "a refused login writes nothing");
    let members = f.t.admin(Method::GET, &format!("/v3/groups/{late}/users"), None).await;
    assert_eq!(members.body["users"], json!([]), "{}", members.body);

    // The same rules in a global ruleset, which only a cloud administrator writes, still map.
    let body = json!({"mapping": {"mapping_id": "global", "domain_id": null, "provider_id": "corp",
        "source": {"type": "federation", "idp_id": f.idp},
        "rules": [rule("late", "a", "local", json!({"groups": [{"group_name": "late-admins"}]}))]}});
    assert_eq!(f.t.admin(Method::DELETE, "/v4/mappings/m", None).await.status, StatusCode::NO_CONTENT);
    let r = f.t.admin(Method::POST, "/v4/mappings", Some(body)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let r = f.jwt_login(&f.ec.sign(&claims("a", "a@corp.example")), Some(f.project_scope())).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

#[tokio::test]
async fn a_provider_feeds_only_its_own_domains_rulesets() {
    let dir = tempfile::tempdir().unwrap();
    let key_a = TestKey::ec(dir.path(), "bundle-a");
    let key_b = TestKey::ec(dir.path(), "bundle-b");
    let t = TestNode::start_with(&[("keystone", "spiffe_jwt_audience", "idnode-test"), PRIVATE_NETWORKS]).await;
    let (d_a, d_b) = (
        t.create("/v3/domains", "domain", json!({"name": "mesh-a"})).await,
        t.create("/v3/domains", "domain", json!({"name": "mesh-b"})).await,
    );
    let td = |domain: &str, pem: &str| {
        let body = json!({"domain_id": domain, "provider_id": "mesh", "trust_domain": "prod.example.test",
                          "trust_bundle_pem": pem});
        let t = &t;
        async move { t.create("/v4/spiffe/trust_domains", "trust_domain", body).await }
    };
    let td_b = td(&d_b, &key_b.cert_pem).await;
    // A's manager registers a trust domain named like B's, with a key it holds.
    let td_a = td(&d_a, &key_a.cert_pem).await;
    let rule = json!({"name": "any", "match": {"all_of": []}, "identity": {"user_name": "${claims.sub}"},
        "authorizations": [{"type": "domain", "domain_id": d_b, "roles": [{"id": role(&t, "reader")}]}]});
    for (id, source) in [("by-name", json!("prod.example.test")), ("by-id", json!(td_a))] {
        // B's rulesets: one by name, and one naming A's record by id (written by the admin).
        let body = json!({"mapping": {"mapping_id": id, "domain_id": d_b, "provider_id": "mesh",
                                      "source": {"type": "spiffe", "trust_domain": source}, "rules": [rule]}});
        assert_eq!(t.admin(Method::POST, "/v4/mappings", Some(body)).await.status, StatusCode::CREATED);
    }
    let svid = |key: &TestKey| {
        key.sign(&json!({"sub": "spiffe://prod.example.test/x", "aud": ["idnode-test"], "exp": now_secs() + 300}))
    };
    let before = t.node.app.state_version();
    let r = t
        .call(Method::POST, &format!("/v4/spiffe/trust_domains/{td_a}/auth"), None, Some(json!({"jwt": svid(&key_a)})))
        .await;
    assert_eq!((r.status, r.body["detail"].clone()), (StatusCode::NOT_FOUND, json!("mapping_not_found")), "{}", r.body);
    assert_eq!(t.node.app.state_version(), before, "nothing written");
    // B's own record still feeds B's ruleset by name.
    let r = t
        .call(
            Method::POST,
            &format!("/v4/spiffe/trust_domains/{td_b}/auth"),
            None,
            Some(json!({"jwt": svid(&key_b), "scope": {"domain": {"id": d_b}}})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);

    // Likewise an OIDC provider of A never feeds B's ruleset naming it.
    let (_jwks, addr) = serve_jwks(vec![key_a.jwk()]).await;
    let idp_a = provider(&t, &d_a, "corp", addr).await;
    let body = json!({"mapping": {"mapping_id": "fed", "domain_id": d_b, "provider_id": "corp",
                                  "source": {"type": "federation", "idp_id": idp_a}, "rules": [rule]}});
    assert_eq!(t.admin(Method::POST, "/v4/mappings", Some(body)).await.status, StatusCode::CREATED);
    let bearer = format!("Bearer {}", key_a.sign(&claims("mallory", "m@corp.example")));
    let path = format!("/v4/federation/identity_providers/{idp_a}/jwt");
    let r = send_with_headers(&t.router, Method::POST, &path, &[("authorization", &bearer)], None).await;
    assert_eq!((r.status, r.body["detail"].clone()), (StatusCode::NOT_FOUND, json!("mapping_not_found")), "{}", r.body);
}

#[tokio::test]
async fn a_local_login_finds_the_user_scim_provisioned_for_a_realm_of_its_provider() {
    use crate::state::scim::{Expect, RealmRef, ScimCommand, UserFields};
    let f = Fed::new(&[]).await;
    let mut rule = f.staff_rule("local");
    rule["identity"]["user_id"] = json!("${claims.target}");
    let r = f.mapping("scim", json!({"type": "federation", "idp_id": f.idp}), json!([rule])).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let realm =
        json!({"scim_realm": {"domain_id": f.domain, "provider_id": "corp", "idp_id": f.idp, "display_name": "Corp"}});
    assert_eq!(f.t.admin(Method::POST, "/v4/scim-realms", Some(realm)).await.status, StatusCode::CREATED);
    let fields = UserFields {
        user_name: Some("sam".into()),
        external_id: Some("sam-ext".into()),
        active: Some(true),
        ..UserFields::default()
    };
    let realm = RealmRef { domain_id: f.domain.clone(), provider_id: "corp".into() };
    let cmd = ScimCommand::PutUser {
        realm,
        id: "scim-sam".into(),
        fields: Box::new(fields),
        expect: Expect::Create,
        at: now_secs(),
    };
    f.t.node.propose(crate::state::Command::Scim(cmd)).await.unwrap();
    f.logs_in_as("sam", "scim-sam").await;
}

/// A key set that cannot be had (the IdP answers 404, or too much) is one neutral 503: what
/// the IdP answered stays in the server's log.
#[tokio::test]
async fn an_unavailable_key_set_is_a_neutral_503() {
    let f = Fed::new(&[]).await;
    let r = f.mapping("m", json!({"type": "federation", "idp_id": f.idp}), json!([f.staff_rule("ephemeral")])).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let (_other, addr) = serve_jwks(vec![]).await;
    let mut messages = Vec::new();
    for path in ["missing", "big"] {
        let patch = json!({"identity_provider": {"jwks_uri": format!("http://{addr}/{path}")}});
        let r = f.t.admin(Method::PATCH, &format!("/v4/federation/identity_providers/{}", f.idp), Some(patch)).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let r = f.jwt_login(&f.ec.sign(&claims(path, &format!("{path}@corp.example"))), None).await;
        assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.body);
        for leak in ["404", "Not Found", "answered", "larger", "bytes", "text/plain", &addr.to_string()] {
            assert!(!r.text.contains(leak), "the answer echoes the IdP's ({leak}): {}", r.text);
        }
        messages.push(r.body["error"]["message"].clone());
    }
    assert_eq!(messages[0], messages[1], "one message whatever went wrong");
}

/// On the OpenFGA driver the groups a rule binds a virtual user to give it the roles the store
/// resolves for them (asked as `group:<id>#member`), at login and at every validation; a store
/// that cannot answer is a 503, never a token without them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_store_driver_a_virtual_users_bound_groups_hold_the_stores_roles() {
    let fga = crate::testkit::openfga::FgaServer::start(&[]);
    let w = K8sWeb::new(&fga.settings(&[]), "member", "reader").await;
    let (t, project, instance, grant) = (&w.t, &w.project, &w.instance, &w.grant);

    let path = format!("/v4/k8s_auth/instances/{instance}/auth");
    let login = json!({"jwt": "sa-token", "scope": {"project": {"id": project}}});
    let r = t.call(Method::POST, &path, None, Some(login.clone())).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let mut roles = role_names(&r);
    roles.sort();
    assert_eq!(roles, ["member", "reader"], "the store's role of the bound group and the rule's role");
    let token = subject(&r);
    assert!(fga.calls("batch-check").await > 0);
    // Revoked in the store: the next validation no longer carries it.
    assert_eq!(t.admin(Method::DELETE, grant, None).await.status, StatusCode::NO_CONTENT);
    let v = t.admin(Method::GET, &format!("/v3/auth/tokens#{token}"), None).await;
    assert_eq!((v.status, role_names(&v)), (StatusCode::OK, vec!["reader".to_string()]), "{}", v.body);
    // A store that cannot answer: 503 at login, never a token short of the group's roles.
    fga.fault(json!({"status": 503, "count": 1000, "paths": ["batch-check", "check"]})).await;
    let r = t.call(Method::POST, &path, None, Some(login)).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.body);
}

#[path = "expiring_tests.rs"]
mod expiring;
