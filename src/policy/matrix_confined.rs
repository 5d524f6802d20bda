//! The authorization matrix for confined tokens (`token::confined`): every credential and
//! token-minting operation, called through the real router by one user three ways, in both
//! `[policy] admin_scope` modes. The user holds `admin` and `member` on project pA of domain A;
//! it logs in through an OIDC provider's JWT (keys served on loopback) under a rule naming a
//! token restriction to `reader` on pA ("restricted reader") or to `admin` on pA ("restricted
//! admin", a restriction only a cloud administrator can make), and with its password
//! ("unrestricted"). Whatever the unrestricted token may do, a restricted one reads no secret,
//! creates no credential or delegation and reshapes no restriction or ruleset; it buys further
//! tokens only through the token method, under its restriction.
//!
//! Placeholders as in `matrix`: `{dA}`, `{pA}`, `{pX}` (a project of domain A the user holds
//! nothing on), `{self}` (the user), `{self_token}` (the caller's token), `{uO}` (another user of
//! domain A), `{idp}`, `{client_A}` (an OAuth2 client of domain A), `{restriction_admin}`,
//! `{ec2_access}` and `{cred_self}` (the user's EC2 and TOTP credentials, made by the cloud
//! admin), `{request_token}` (a fresh OS-OAUTH1 request token for pA), `{uniq}`.

use std::collections::HashMap;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use super::matrix::{fill, send};
use crate::clock::now_secs;
use crate::providers::tests::verification::{serve_jwks, TestKey};
use crate::state::keys::ns;
use crate::state::Reader;
use crate::testkit::{send_with_headers, Reply, TestNode};

const ISSUER: &str = "https://idp.confined.test";
const PASSWORD: &str = "confined user password";

/// Method, path, body, expected status: restricted reader, restricted admin, unrestricted under
/// `admin_scope = system`, then the same three under `any`.
type Row = (Method, &'static str, Option<&'static str>, [u16; 6]);

#[rustfmt::skip]
const ROWS: &[Row] = &[
    //                                                                      system: rdr adm  user  any: rdr adm  user
    // Secrets: EC2 credentials and /v3/credentials blobs.
    (Method::GET, "/v3/users/{self}/credentials/OS-EC2", None,              [403, 403, 200, 403, 403, 200]),
    (Method::GET, "/v3/users/{self}/credentials/OS-EC2/{ec2_access}", None, [403, 403, 200, 403, 403, 200]),
    (Method::GET, "/v3/credentials", None,                                  [403, 403, 200, 403, 403, 200]),
    (Method::GET, "/v3/credentials?user_id={self}", None,                   [403, 403, 200, 403, 403, 200]),
    (Method::GET, "/v3/credentials/{cred_self}", None,                      [403, 403, 200, 403, 403, 200]),
    // Credentials and delegations.
    (Method::POST, "/v3/users/{self}/credentials/OS-EC2", Some(r#"{"tenant_id": "{pA}"}"#), [403, 403, 201, 403, 403, 201]),
    (Method::POST, "/v3/credentials", Some(r#"{"credential": {"type": "totp", "blob": "{uniq}", "user_id": "{self}"}}"#), [403, 403, 201, 403, 403, 201]),
    (Method::PATCH, "/v3/credentials/{cred_self}", Some(r#"{"credential": {"blob": "{uniq}"}}"#), [403, 403, 200, 403, 403, 200]),
    (Method::POST, "/v3/users/{self}/application_credentials", Some(r#"{"application_credential": {"name": "{uniq}"}}"#), [403, 403, 201, 403, 403, 201]),
    (Method::POST, "/v3/OS-TRUST/trusts", Some(r#"{"trust": {"trustor_user_id": "{self}", "trustee_user_id": "{uO}", "project_id": "{pA}", "impersonation": false, "roles": [{"name": "reader"}]}}"#), [403, 403, 201, 403, 403, 201]),
    (Method::PUT, "/v3/OS-OAUTH1/authorize/{request_token}", Some(r#"{"roles": [{"name": "reader"}]}"#), [403, 403, 403, 403, 403, 200]),
    (Method::POST, "/v3/OS-OAUTH1/consumers", Some(r#"{"consumer": {}}"#), [403, 403, 403, 403, 403, 201]),
    (Method::POST, "/v4/users/{self}/passkeys/register_start", None,        [403, 403, 201, 403, 403, 201]),
    (Method::POST, "/v4/api-keys", Some(r#"{"api_key": {"domain_id": "{dA}", "provider_id": "{uniq}", "expires_at": "2099-01-01T00:00:00Z"}}"#), [403, 403, 403, 403, 403, 201]),
    (Method::POST, "/v4/oauth2/{dA}/clients", Some(r#"{"oauth2_client": {"name": "{uniq}", "grant_types": ["client_credentials"]}}"#), [403, 403, 403, 403, 403, 201]),
    (Method::POST, "/v4/oauth2/{dA}/clients/{client_A}/rotate-secret", None, [403, 403, 403, 403, 403, 200]),
    // What decides the next token's narrowing: restrictions (its own included) and rulesets.
    (Method::POST, "/v4/tokens/restrictions", Some(r#"{"restriction": {"domain_id": "{dA}", "allow_renew": true, "allow_rescope": true, "roles": [{"name": "reader"}]}}"#), [403, 403, 403, 403, 403, 201]),
    (Method::PUT, "/v4/tokens/restrictions/{restriction_admin}", Some(r#"{"restriction": {"allow_renew": true}}"#), [403, 403, 403, 403, 403, 200]),
    (Method::POST, "/v4/mappings", Some(r#"{"mapping": {"domain_id": "{dA}", "provider_id": "{uniq}", "source": {"type": "federation", "idp_id": "{idp}"}, "rules": [{"name": "r", "match": {"all_of": []}, "identity": {"user_name": "u"}}]}}"#), [403, 403, 403, 403, 403, 201]),
    // The token method: a renewal stays under the restriction (checked below); another
    // project is refused to a restriction that allows no re-scoping.
    (Method::POST, "/v3/auth/tokens", Some(r#"{"auth": {"identity": {"methods": ["token"], "token": {"id": "{self_token}"}}}}"#), [200, 200, 200, 200, 200, 200]),
    (Method::POST, "/v3/auth/tokens", Some(r#"{"auth": {"identity": {"methods": ["token"], "token": {"id": "{self_token}"}}, "scope": {"project": {"id": "{pX}"}}}}"#), [403, 403, 401, 403, 403, 401]),
];

struct World {
    t: TestNode,
    vars: HashMap<String, String>,
    /// (name, token, column within a mode)
    callers: Vec<(&'static str, String, usize)>,
    consumer: (String, String),
    _jwks: std::sync::Arc<crate::providers::tests::verification::JwksServer>,
    _dir: tempfile::TempDir,
}

fn role(t: &TestNode, name: &str) -> String {
    t.node.engine.read().id_by_name(ns::ROLE_NAME, "", name).unwrap().unwrap()
}

fn subject(r: &Reply) -> String {
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.headers["x-subject-token"].to_str().unwrap().to_string()
}

async fn login(t: &TestNode, key: &TestKey, idp: &str, tier: &str) -> Reply {
    let n = now_secs();
    let claims = json!({"iss": ISSUER, "aud": "idnode", "sub": "robot", "email": "robot@corp.example", "tier": tier,
                        "exp": n + 300, "iat": n});
    let bearer = format!("Bearer {}", key.sign(&claims));
    let path = format!("/v4/federation/identity_providers/{idp}/jwt");
    send_with_headers(&t.router, Method::POST, &path, &[("authorization", &bearer)], None).await
}

fn role_names(r: &Reply) -> Vec<String> {
    let mut names: Vec<String> =
        r.body["token"]["roles"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap().into()).collect();
    names.sort();
    names
}

impl World {
    async fn new(admin_scope: &str) -> World {
        let dir = tempfile::tempdir().unwrap();
        let key = TestKey::ec(dir.path(), "ec-confined");
        let (jwks, addr) = serve_jwks(vec![key.jwk()]).await;
        let t = TestNode::start_with(&[
            ("federation", "allow_private_networks", "true"),
            ("auth", "rate_limit_per_second", "0"),
            ("policy", "admin_scope", admin_scope),
        ])
        .await;
        let d_a = t.create("/v3/domains", "domain", json!({"name": "confined-a"})).await;
        let p_a = t.create("/v3/projects", "project", json!({"name": "pa", "domain_id": d_a})).await;
        let p_x = t.create("/v3/projects", "project", json!({"name": "px", "domain_id": d_a})).await;
        let u_o = t.create("/v3/users", "user", json!({"name": "other", "domain_id": d_a})).await;
        let idp = t
            .create(
                "/v4/federation/identity_providers",
                "identity_provider",
                json!({"domain_id": d_a, "provider_id": "corp", "issuer": ISSUER, "client_id": "idnode",
                       "jwks_uri": format!("http://{addr}/jwks")}),
            )
            .await;
        let restriction = |r: &str| {
            let body = json!({"restriction": {"domain_id": d_a, "project_id": p_a, "allow_renew": true,
                                              "allow_rescope": false, "roles": [{"name": r}]}});
            let t = &t;
            async move {
                let r = t.admin(Method::POST, "/v4/tokens/restrictions", Some(body)).await;
                assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
                r.body["restriction"]["id"].as_str().unwrap().to_string()
            }
        };
        let (r_reader, r_admin) = (restriction("reader").await, restriction("admin").await);
        let reader_role = role(&t, "reader");
        let rule = |tier: &str, restriction: &str| {
            json!({"name": tier, "match": {"all_of": [{"type": "equals", "claim": "tier", "value": tier}]},
                   "identity": {"identity_mode": "local", "user_name": "${claims.email}"},
                   "authorizations": [{"type": "project", "project_id": p_a, "project_domain_id": d_a,
                                       "roles": [{"id": reader_role}]}],
                   "token_restriction_id": restriction})
        };
        let ruleset = json!({"mapping": {"domain_id": d_a, "provider_id": "corp", "source": {"type": "federation",
                             "idp_id": idp}, "rules": [rule("ro", &r_reader), rule("rw", &r_admin)]}});
        let r = t.admin(Method::POST, "/v4/mappings", Some(ruleset)).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);

        // The first login makes the user; then it gets its own roles and a password.
        let first = login(&t, &key, &idp, "ro").await;
        assert_eq!(first.status, StatusCode::OK, "{}", first.body);
        let me = first.body["token"]["user"]["id"].as_str().unwrap().to_string();
        for r in ["admin", "member"] {
            let path = format!("/v3/projects/{p_a}/users/{me}/roles/{}", role(&t, r));
            assert_eq!(t.admin(Method::PUT, &path, None).await.status, StatusCode::NO_CONTENT);
        }
        let pw = json!({"user": {"password": PASSWORD}});
        assert_eq!(t.admin(Method::PATCH, &format!("/v3/users/{me}"), Some(pw)).await.status, StatusCode::OK);
        let admin_login = login(&t, &key, &idp, "rw").await;
        assert_eq!(role_names(&admin_login), ["admin", "manager", "member", "reader"], "{}", admin_login.body);
        let reader = login(&t, &key, &idp, "ro").await;
        assert_eq!(role_names(&reader), ["reader"], "{}", reader.body);
        let callers = vec![
            ("restricted reader", subject(&reader), 0),
            ("restricted admin", subject(&admin_login), 1),
            ("unrestricted", t.token_for_id(&me, PASSWORD, json!({"project": {"id": p_a}})).await, 2),
        ];

        // The user's credentials, made by the cloud admin.
        let ec2_path = format!("/v3/users/{me}/credentials/OS-EC2");
        let ec2 = t.admin(Method::POST, &ec2_path, Some(json!({"tenant_id": p_a}))).await;
        assert_eq!(ec2.status, StatusCode::CREATED, "{}", ec2.body);
        let cred = json!({"type": "totp", "blob": "seed", "user_id": me});
        let cred_self = t.create("/v3/credentials", "credential", cred).await;
        let client = json!({"name": "c", "grant_types": ["client_credentials"]});
        let client_a = t.create(&format!("/v4/oauth2/{d_a}/clients"), "oauth2_client", client).await;
        let consumer = t.admin(Method::POST, "/v3/OS-OAUTH1/consumers", Some(json!({"consumer": {}}))).await;
        let c = &consumer.body["consumer"];
        let consumer = (c["id"].as_str().unwrap().to_string(), c["secret"].as_str().unwrap().to_string());

        let vars = HashMap::from([
            ("dA".to_string(), d_a),
            ("pA".into(), p_a),
            ("pX".into(), p_x),
            ("uO".into(), u_o),
            ("self".into(), me),
            ("idp".into(), idp),
            ("client_A".into(), client_a),
            ("restriction_admin".into(), r_admin),
            ("ec2_access".into(), ec2.body["credential"]["access"].as_str().unwrap().to_string()),
            ("cred_self".into(), cred_self),
        ]);
        World { t, vars, callers, consumer, _jwks: jwks, _dir: dir }
    }

    /// A fresh request token of the consumer for pA.
    async fn request_token(&self) -> String {
        let host = "127.0.0.1:5000";
        let uri = format!("http://{host}/v3/OS-OAUTH1/request_token");
        let consumer = (self.consumer.0.as_str(), self.consumer.1.as_str());
        let auth = crate::oauth1::tests::oauth_header(&uri, consumer, None, Some("oob"), None);
        let headers = [("host", host), ("authorization", auth.as_str()), ("requested-project-id", &self.vars["pA"])];
        let r = send_with_headers(&self.t.router, Method::POST, "/v3/OS-OAUTH1/request_token", &headers, None).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        crate::oauth1::tests::form(&r)["oauth_token"].clone()
    }
}

async fn run(admin_scope: &str) {
    let w = World::new(admin_scope).await;
    let offset = if admin_scope == "system" { 0 } else { 3 };
    let mut failures = Vec::new();
    for (n, (method, path, body, expected)) in ROWS.iter().enumerate() {
        for (name, token, column) in &w.callers {
            let mut vars = w.vars.clone();
            vars.insert("self_token".into(), token.clone());
            vars.insert("uniq".into(), format!("c{n}-{column}"));
            if path.contains("{request_token}") {
                vars.insert("request_token".into(), w.request_token().await);
            }
            let r = send(&w.t, method.clone(), &fill(path, &vars), Some(token), body.map(|b| fill(b, &vars))).await;
            let expected = expected[offset + column];
            if r.status.as_u16() != expected {
                failures.push(format!("{method} {path} as {name}: {} (expected {expected}) {}", r.status, r.text));
            }
        }
    }
    assert!(failures.is_empty(), "admin_scope = {admin_scope}:\n{}", failures.join("\n"));

    // A renewal through the token method carries the restriction on: the same narrowed roles.
    for (name, token, _) in &w.callers[..2] {
        let before = w.t.admin(Method::GET, &format!("/v3/auth/tokens#{token}"), None).await;
        let body = json!({"auth": {"identity": {"methods": ["token"], "token": {"id": token}}}});
        let renewed = w.t.call(Method::POST, "/v3/auth/tokens", None, Some(body)).await;
        assert_eq!(renewed.status, StatusCode::OK, "{name}: {}", renewed.body);
        assert_eq!(role_names(&renewed), role_names(&before), "{name}: {}", renewed.body);
        let again = w.t.admin(Method::GET, &format!("/v3/auth/tokens#{}", subject(&renewed)), None).await;
        assert_eq!(role_names(&again), role_names(&before), "{name}: validated {}", again.body);
    }
    // Nothing a refused call asked for was written: the restriction is still the admin's.
    let r = w.t.admin(Method::GET, &format!("/v4/tokens/restrictions/{}", w.vars["restriction_admin"]), None).await;
    assert_eq!(r.body["restriction"]["allow_rescope"], Value::Bool(false), "{}", r.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confined_tokens_matrix_strict_admin_scope() {
    run("system").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confined_tokens_matrix_keystone_admin_scope() {
    run("any").await;
}
