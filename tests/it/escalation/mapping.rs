//! Findings of the v4 review on mapping rulesets: a ruleset naming another user, group, role
//! or provider, and SPIFFE trust domains matched by name across domains.
//!
//! Against a real node in both policy modes: domain A's manager (and A's own administrator)
//! register an OIDC provider whose key set a loopback server of this test serves, and a
//! SPIFFE trust domain named like B's with a CA made with `openssl`; every ruleset reaching
//! outside A is refused when written, a JWT asking to become the bootstrap admin is refused at
//! login, an SVID through A's trust domain is never evaluated by B's ruleset, and afterwards
//! the admin still logs in and nothing was written.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::{Method as M, StatusCode};
use serde_json::{json, Value};

use super::{refused, start, Admin, Api};
use crate::support::Resp;

const ISSUER: &str = "https://idp.attacker.test";
pub(super) const CLIENT_ID: &str = "idnode";

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").args(args).current_dir(dir).output().expect("run openssl");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A P-256 key and its self-signed CA certificate, made with `openssl`.
pub(super) struct Key {
    enc: EncodingKey,
    kid: String,
    cert_pem: String,
}

impl Key {
    pub(super) fn new(dir: &Path, kid: &str) -> Key {
        let (pem, der, crt) = (format!("{kid}.pem"), format!("{kid}.der"), format!("{kid}.crt"));
        openssl(dir, &["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", &pem]);
        openssl(dir, &["pkcs8", "-topk8", "-nocrypt", "-in", &pem, "-outform", "DER", "-out", &der]);
        let subj = format!("/CN={kid} CA");
        openssl(
            dir,
            &[
                "req",
                "-x509",
                "-key",
                &pem,
                "-subj",
                &subj,
                "-days",
                "2",
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-out",
                &crt,
            ],
        );
        let enc = EncodingKey::from_ec_der(&std::fs::read(dir.join(der)).expect("key"));
        let cert_pem = std::fs::read_to_string(dir.join(crt)).expect("certificate");
        Key { enc, kid: kid.to_string(), cert_pem }
    }

    pub(super) fn jwk(&self) -> Value {
        let mut jwk = Jwk::from_encoding_key(&self.enc, Algorithm::ES256).expect("jwk");
        jwk.common.key_id = Some(self.kid.clone());
        serde_json::to_value(jwk).expect("jwk json")
    }

    pub(super) fn sign(&self, claims: &Value) -> String {
        let mut h = Header::new(Algorithm::ES256);
        h.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&h, claims, &self.enc).expect("sign")
    }
}

/// Serves `{"keys": [jwk]}` at `/jwks` on loopback until the test ends.
pub(super) async fn serve_jwks(jwk: Value) -> SocketAddr {
    let set = json!({ "keys": [jwk] });
    let app = axum::Router::new().route("/jwks", axum::routing::get(move || async move { axum::Json(set) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await.ok() });
    addr
}

pub(super) fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

#[track_caller]
fn refused_with(r: &Resp, key: &str, what: &str) {
    refused(r, what);
    assert_eq!(r.json["detail"], json!(key), "{what}: {}", r.text);
}

/// What a refused attempt could have changed: the users, the admin's groups and record.
async fn written(api: &Api<'_>, admin: &str, admin_id: &str) -> (usize, Value, Value) {
    let users = api.get("/v3/users", admin).await.json["users"].as_array().map_or(0, Vec::len);
    let groups = api.get(&format!("/v3/users/{admin_id}/groups"), admin).await.json["groups"].clone();
    let me = api.get(&format!("/v3/users/{admin_id}"), admin).await.json["user"].clone();
    (users, groups, me)
}

async fn rulesets_stay_in_their_domain(mode: &str) {
    let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
    // The test's issuer is on loopback, which outbound fetches refuse unless allowed.
    let cluster = start(mode, &[("IDNODE_FEDERATION_ALLOW_PRIVATE_NETWORKS", "true")]).await;
    let (api, Admin { token: admin, pw, id: admin_id, project: admin_project }) = Api::with_admin(&cluster).await;
    let (manager, admin_role, reader) =
        (api.role("manager", &admin).await, api.role("admin", &admin).await, api.role("reader", &admin).await);

    // Domains A and B; A's manager and A's administrator, each with a domain-scoped token.
    let d_a = api.create("/v3/domains", "domain", json!({"name": format!("map-a-{mode}")}), &admin).await;
    let d_b = api.create("/v3/domains", "domain", json!({"name": format!("map-b-{mode}")}), &admin).await;
    let mut attackers = Vec::new();
    for (name, role_id) in [("mgr", &manager), ("dadm", &admin_role)] {
        attackers.push((name, api.domain_user(name, &d_a, role_id, &admin).await.1));
    }
    let mgr = attackers[0].1.clone();
    // A group of A the cloud administrator made privileged; B's and a global provider.
    let p_a = api.create("/v3/projects", "project", json!({"name": "pa", "domain_id": d_a}), &admin).await;
    let ops = api.create("/v3/groups", "group", json!({"name": "ops", "domain_id": d_a}), &admin).await;
    api.ok(M::PUT, &format!("/v3/projects/{p_a}/groups/{ops}/roles/{admin_role}"), &admin, None).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let key = Key::new(dir.path(), "attacker");
    let jwks = serve_jwks(key.jwk()).await;
    let idp = |domain: Value| {
        json!({"domain_id": domain, "provider_id": "corp", "issuer": ISSUER,
                                     "client_id": CLIENT_ID, "jwks_uri": format!("http://{jwks}/jwks")})
    };
    let idp_b = api.create("/v4/federation/identity_providers", "identity_provider", idp(json!(d_b)), &admin).await;
    let idp_global =
        api.create("/v4/federation/identity_providers", "identity_provider", idp(Value::Null), &admin).await;
    // A's manager registers an OIDC provider in A whose key it holds.
    let idp_a = api.create("/v4/federation/identity_providers", "identity_provider", idp(json!(d_a)), &mgr).await;

    let before = written(&api, &admin, &admin_id).await;
    let ruleset = |source: Value, rule: Value| json!({"mapping": {"domain_id": d_a, "provider_id": "corp", "source": source, "rules": [rule]}});
    let fed_a = json!({"type": "federation", "idp_id": idp_a});
    let on_a = |role_id: &str| json!([{"type": "domain", "domain_id": d_a, "roles": [{"id": role_id}]}]);
    let rule = |identity: Value, authorizations: Value, groups: Value| {
        json!({"name": "r", "match": {"all_of": []}, "identity": identity, "authorizations": authorizations,
               "groups": groups})
    };
    let plain = json!({"identity_mode": "local", "user_name": "${claims.sub}"});
    let attempts = [
        (
            "the bootstrap admin as the local user",
            ruleset(
                fed_a.clone(),
                rule(
                    json!({"identity_mode": "local", "user_name": "x", "user_id": admin_id}),
                    on_a(&reader),
                    json!([]),
                ),
            ),
            "cross_domain_mapping",
        ),
        (
            "a privileged group by name",
            ruleset(fed_a.clone(), rule(plain.clone(), on_a(&reader), json!([{"group_name": "ops"}]))),
            "group_assignment_unauthorized",
        ),
        (
            "a privileged group by id",
            ruleset(fed_a.clone(), rule(plain.clone(), on_a(&reader), json!([{"group_id": ops, "group_name": "ops"}]))),
            "group_assignment_unauthorized",
        ),
        (
            "the admin role",
            ruleset(fed_a.clone(), rule(plain.clone(), on_a(&admin_role), json!([]))),
            "role_grant_unauthorized",
        ),
        (
            "B's provider",
            ruleset(json!({"type": "federation", "idp_id": idp_b}), rule(plain.clone(), on_a(&reader), json!([]))),
            "cross_domain_mapping",
        ),
        (
            "a global provider",
            ruleset(json!({"type": "federation", "idp_id": idp_global}), rule(plain.clone(), on_a(&reader), json!([]))),
            "cross_domain_mapping",
        ),
    ];
    for (who, token) in &attackers {
        for (what, body, key) in &attempts {
            let r = api.call(M::POST, "/v4/mappings", token, Some(body.clone())).await;
            refused_with(&r, key, &format!("[{mode}] {who}: a ruleset naming {what}"));
        }
    }

    // A ruleset (A's administrator's) whose user id a claim chooses passes the write; the login asking to become
    // the admin is refused, with or without a scope.
    let chosen = json!({"identity_mode": "local", "user_name": "${claims.sub}", "user_id": "${claims.target}"});
    let body = ruleset(fed_a.clone(), rule(chosen, on_a(&reader), json!([{"group_name": "staff"}])));
    let r = api.call(M::POST, "/v4/mappings", &attackers[1].1, Some(body)).await;
    assert_eq!(r.status, StatusCode::CREATED, "[{mode}] {}", r.text);
    let n = now();
    let jwt = key.sign(&json!({"iss": ISSUER, "aud": CLIENT_ID, "sub": "mallory", "target": admin_id,
                              "exp": n + 300, "iat": n, "nbf": n}));
    for scope in [None, Some(json!({"project": {"id": admin_project}}))] {
        let url = format!("{}/v4/federation/identity_providers/{idp_a}/jwt", api.base);
        let body = scope.map(|s| json!({"auth": {"scope": s}}));
        let bearer = format!("Bearer {jwt}");
        let r = cluster
            .http
            .request(M::POST, &url, None, &[("Authorization", bearer.as_str())], body.as_ref())
            .await
            .expect("jwt login");
        assert!(r.header("X-Subject-Token").is_none(), "[{mode}] a token for the admin: {}", r.text);
        refused_with(&r, "user_mapping_unauthorized", &format!("[{mode}] a JWT becoming the bootstrap admin"));
    }

    // SPIFFE: B's trust domain and ruleset; A's manager registers one of the same name with
    // its own CA. An SVID through A's record is not evaluated by B's ruleset.
    let ca_b = Key::new(dir.path(), "ca-b");
    let ca_a = Key::new(dir.path(), "ca-a");
    let td = |domain: &str, pem: &str| json!({"domain_id": domain, "provider_id": "mesh", "trust_domain": "prod.b.test", "trust_bundle_pem": pem});
    let td_b = api.create("/v4/spiffe/trust_domains", "trust_domain", td(&d_b, &ca_b.cert_pem), &admin).await;
    let rule_b = json!({"name": "b", "match": {"all_of": []}, "identity": {"user_name": "${claims.sub}"},
        "authorizations": [{"type": "domain", "domain_id": d_b, "roles": [{"id": reader}]}]});
    let body = json!({"mapping": {"domain_id": d_b, "provider_id": "mesh",
                                  "source": {"type": "spiffe", "trust_domain": "prod.b.test"}, "rules": [rule_b]}});
    api.ok(M::POST, "/v4/mappings", &admin, Some(body)).await;
    let td_a = api.create("/v4/spiffe/trust_domains", "trust_domain", td(&d_a, &ca_a.cert_pem), &mgr).await;
    let svid = |k: &Key| k.sign(&json!({"sub": "spiffe://prod.b.test/ns/x", "aud": ["idnode"], "exp": now() + 300}));
    let scope_b = json!({"domain": {"id": d_b}});
    let svid_login = |td: &str, k: &Key| {
        let path = format!("/v4/spiffe/trust_domains/{td}/auth");
        let body = json!({"jwt": svid(k), "scope": scope_b});
        let api = &api;
        async move { api.call(M::POST, &path, "", Some(body)).await }
    };
    let r = svid_login(&td_a, &ca_a).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "[{mode}] A's SVID evaluated by B's ruleset: {}", r.text);
    assert_eq!(r.json["detail"], json!("mapping_not_found"), "[{mode}] {}", r.text);
    // B's own workloads still log in through B's record.
    let r = svid_login(&td_b, &ca_b).await;
    assert_eq!(r.status, StatusCode::OK, "[{mode}] B's workload: {}", r.text);

    // Nothing was written; the admin still logs in to the admin project.
    assert_eq!(written(&api, &admin, &admin_id).await, before, "[{mode}] users, the admin's groups and record");
    let again = api.token(&admin_id, &pw, json!({"project": {"id": admin_project}})).await;
    let me = api.get(&format!("/v3/users/{admin_id}"), &again).await;
    assert_eq!(me.json["user"]["enabled"], json!(true), "[{mode}] {}", me.text);
    let mine: Vec<Value> = api.get(&format!("/v4/mappings?domain_id={d_a}"), &admin).await.json["mappings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(mine.len(), 1, "[{mode}] only the accepted ruleset is stored: {mine:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rulesets_stay_in_their_domain_in_keystone_mode() {
    rulesets_stay_in_their_domain("any").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rulesets_stay_in_their_domain_in_strict_mode() {
    rulesets_stay_in_their_domain("system").await;
}
