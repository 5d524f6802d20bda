//! The provider registries through the real router: CRUD of each kind, every field check as
//! a 400 naming the field, secrets never in a response, `provider_id` conflicts, and the
//! policy (a domain's manager manages its providers, not another domain's nor global ones).

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::state::cf;
use crate::state::providers::{keys, Provider, ProviderKind};
use crate::testkit::{Reply, TestNode};

pub(crate) mod verification;

/// A self-signed P-256 CA certificate (100 years).
pub(crate) const CERT: &str = "-----BEGIN CERTIFICATE-----
MIIBiDCCAS+gAwIBAgIULp8VAPdvPX2VsbbAp3mUsJUPGmUwCgYIKoZIzj0EAwIw
GTEXMBUGA1UEAwwOaWRub2RlIHRlc3QgQ0EwIBcNMjYxMTIzMTY0NjIwWhgPMjEy
NjEwMzAxNjQ2MjBaMBkxFzAVBgNVBAMMDmlkbm9kZSB0ZXN0IENBMFkwEwYHKoZI
zj0CAQYIKoZIzj0DAQcDQgAERPXEPVoS20W5NDTPqgCY4BCQAk4PnOwfJZ3C3mTm
ye/0LceqLckNmr1yhjFt8bnLWQgd0GoL5KGV2Ma7QJC1EaNTMFEwHQYDVR0OBBYE
FJl7zcfxIwqWrenuhwzEJThbTCKKMB8GA1UdIwQYMBaAFJl7zcfxIwqWrenuhwzE
JThbTCKKMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDRwAwRAIgBKhxHpE5
jJBrJ/SUj/1j3lK7wmQusTv+PsvE/Sd73FoCIC4Q9xQv2f8mvPcsRo1cmoz2WSAE
LeiYJokRYTY3t2wa
-----END CERTIFICATE-----
";

const CLIENT_SECRET: &str = "idp-client-secret-value-0123456789";
const REVIEWER_JWT: &str = "eyJhbGciOiJSUzI1NiJ9.reviewer-jwt-value.sig";

/// One kind as the tests drive it.
struct Kind {
    path: &'static str,
    envelope: &'static str,
    collection: &'static str,
    kind: ProviderKind,
}

const OIDC: Kind = Kind {
    path: "/v4/federation/identity_providers",
    envelope: "identity_provider",
    collection: "identity_providers",
    kind: ProviderKind::Oidc,
};
const K8S: Kind =
    Kind { path: "/v4/k8s_auth/instances", envelope: "instance", collection: "instances", kind: ProviderKind::K8s };
const SPIFFE: Kind = Kind {
    path: "/v4/spiffe/trust_domains",
    envelope: "trust_domain",
    collection: "trust_domains",
    kind: ProviderKind::Spiffe,
};

impl Kind {
    /// A complete create body in `domain` (null: global).
    fn base(&self, domain: Value, provider_id: &str) -> Value {
        let mut b = match self.kind {
            ProviderKind::Oidc => json!({
                "issuer": "https://idp.example.com", "client_id": "idnode", "client_secret": CLIENT_SECRET,
                "jwks_uri": "https://idp.example.com/jwks", "allowed_redirect_uris": ["https://app.example/cb"],
                "oidc_scopes": ["openid", "email"], "token_endpoint_auth_method": "client_secret_basic"}),
            ProviderKind::K8s => json!({
                "kubernetes_host": "https://k8s.example:6443", "kubernetes_ca_cert": CERT,
                "token_reviewer_jwt": REVIEWER_JWT, "disable_local_ca_jwt": true}),
            ProviderKind::Spiffe => json!({"trust_domain": "prod.example.org", "trust_bundle_pem": CERT}),
        };
        b["provider_id"] = json!(provider_id);
        if !domain.is_null() {
            b["domain_id"] = domain;
        }
        b
    }

    /// `base` with `fields` set (a null removes the field).
    fn with(&self, fields: &Value) -> Value {
        let mut body = self.base(json!("default"), "p1");
        for (k, v) in fields.as_object().unwrap() {
            if v.is_null() {
                body.as_object_mut().unwrap().remove(k);
            } else {
                body[k] = v.clone();
            }
        }
        json!({ self.envelope: body })
    }

    fn one(&self, id: &str) -> String {
        format!("{}/{id}", self.path)
    }

    async fn create(&self, t: &TestNode, token: &str, domain: Value, provider_id: &str) -> Reply {
        let body = json!({ self.envelope: self.base(domain, provider_id) });
        t.call(Method::POST, self.path, Some(token), Some(body)).await
    }

    fn stored(&self, t: &TestNode, id: &str) -> Option<Provider> {
        t.node.engine.read().get_t::<Provider>(cf::PROVIDERS, &keys::record(self.kind, id)).unwrap()
    }
}

fn id_of(r: &Reply, envelope: &str) -> String {
    r.body[envelope]["id"].as_str().unwrap_or_else(|| panic!("no id: {}", r.body)).to_string()
}

fn ids(r: &Reply, collection: &str) -> Vec<String> {
    r.body[collection].as_array().unwrap().iter().map(|p| p["id"].as_str().unwrap().to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_get_list_patch_delete_each_kind() {
    let t = TestNode::start().await;
    let other = t.create("/v3/domains", "domain", json!({"name": "other"})).await;
    for (k, patch, kept, cleared) in [
        (&OIDC, json!({"issuer": "https://login.example.net/realm"}), "client_id", "token_endpoint_auth_method"),
        (&K8S, json!({"kubernetes_host": "https://k8s-2.example"}), "disable_local_ca_jwt", "kubernetes_ca_cert"),
        (&SPIFFE, json!({"trust_domain": "staging.example.org"}), "trust_bundle_pem", ""),
    ] {
        let r = k.create(&t, &t.admin, json!("default"), "corp").await;
        assert_eq!(r.status, StatusCode::CREATED, "{}: {}", k.path, r.body);
        let created = r.body[k.envelope].clone();
        let id = id_of(&r, k.envelope);
        assert_eq!(id.len(), 32, "a server-assigned id");
        assert_eq!(created["domain_id"], json!("default"));
        assert_eq!(created["provider_id"], json!("corp"));
        assert!(created["links"]["self"].as_str().unwrap().ends_with(&k.one(&id)));
        let one = k.one(&id);

        let r = t.admin(Method::GET, &one, None).await;
        assert_eq!((r.status, &r.body[k.envelope]), (StatusCode::OK, &created), "{}", r.body);

        // A second provider, elsewhere, for the list and its filter.
        let r = k.create(&t, &t.admin, json!(other), "corp").await;
        assert_eq!(r.status, StatusCode::CREATED, "same provider_id, other domain: {}", r.body);
        let elsewhere = id_of(&r, k.envelope);
        let r = t.admin(Method::GET, k.path, None).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let mut both = vec![id.clone(), elsewhere.clone()];
        both.sort();
        assert_eq!(ids(&r, k.collection), both, "in id order");
        let r = t.admin(Method::GET, &format!("{}?domain_id=default", k.path), None).await;
        assert_eq!(ids(&r, k.collection), vec![id.clone()]);
        let r = t.admin(Method::GET, &format!("{}?limit=1", k.path), None).await;
        assert_eq!(ids(&r, k.collection), both[..1].to_vec());
        assert!(r.body["links"]["next"].as_str().unwrap().contains(&format!("marker={}", both[0])));

        // PATCH: what is named changes, the rest is kept; null clears an optional field.
        let r = t.admin(Method::PATCH, &one, Some(json!({ k.envelope: patch.clone() }))).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let after = &r.body[k.envelope];
        for (field, v) in patch.as_object().unwrap() {
            assert_eq!(&after[field], v);
        }
        assert_eq!(after[kept], created[kept]);
        assert_eq!(after["provider_id"], json!("corp"));
        if !cleared.is_empty() {
            let r = t.admin(Method::PATCH, &one, Some(json!({ k.envelope: { cleared: null } }))).await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.body);
            assert_eq!(r.body[k.envelope][cleared], Value::Null);
            assert_eq!(r.body[k.envelope][kept], created[kept], "only what is named changes");
        }
        let r = t.admin(Method::PATCH, &one, Some(json!({ k.envelope: {"provider_id": "renamed"} }))).await;
        assert_eq!(r.body[k.envelope]["provider_id"], json!("renamed"), "{}", r.body);
        let r = t.admin(Method::PATCH, &k.one("no-such"), Some(json!({ k.envelope: {} }))).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);

        assert_eq!(t.admin(Method::DELETE, &one, None).await.status, StatusCode::NO_CONTENT);
        assert_eq!(t.admin(Method::GET, &one, None).await.status, StatusCode::NOT_FOUND);
        assert_eq!(t.admin(Method::DELETE, &one, None).await.status, StatusCode::NOT_FOUND);
        assert!(k.stored(&t, &id).is_none());
        // Global providers (no domain) exist too.
        let r = k.create(&t, &t.admin, Value::Null, "global").await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        assert_eq!(r.body[k.envelope]["domain_id"], Value::Null);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_fields_are_400_naming_the_field() {
    let t = TestNode::start().await;
    let not_pem = "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n";
    let cases: Vec<(&Kind, Value, &str)> = vec![
        (&OIDC, json!({"issuer": "http://idp.example.com"}), "issuer"),
        (&OIDC, json!({"issuer": "idp.example.com"}), "issuer"),
        (&OIDC, json!({"issuer": null}), "issuer"),
        (&OIDC, json!({"jwks_uri": "ftp://idp.example.com/jwks"}), "jwks_uri"),
        (&OIDC, json!({"jwks_uri": null}), "jwks_uri"),
        (&OIDC, json!({"client_id": ""}), "client_id"),
        (&OIDC, json!({"client_id": null}), "client_id"),
        (&OIDC, json!({"client_secret": ""}), "client_secret"),
        (
            &OIDC,
            json!({"allowed_redirect_uris": ["https://ok.example/cb", "http://app.example/cb"]}),
            "allowed_redirect_uris",
        ),
        (&OIDC, json!({"allowed_redirect_uris": ["https://app.example/cb#frag"]}), "allowed_redirect_uris"),
        (&OIDC, json!({"oidc_scopes": ["openid", ""]}), "oidc_scopes"),
        (&OIDC, json!({"oidc_scopes": ["openid email"]}), "oidc_scopes"),
        (&OIDC, json!({"token_endpoint_auth_method": "magic"}), "token_endpoint_auth_method"),
        (&OIDC, json!({"provider_id": ""}), "provider_id"),
        (&OIDC, json!({"provider_id": "a/b"}), "provider_id"),
        (&OIDC, json!({"provider_id": null}), "provider_id"),
        (&OIDC, json!({"id": "mine"}), "id"),
        (&OIDC, json!({"unknown_field": 1}), "unknown_field"),
        (&K8S, json!({"kubernetes_host": "http://k8s.example"}), "kubernetes_host"),
        (&K8S, json!({"kubernetes_host": "k8s.example:6443"}), "kubernetes_host"),
        (&K8S, json!({"kubernetes_host": null}), "kubernetes_host"),
        (&K8S, json!({"kubernetes_ca_cert": "not a certificate"}), "kubernetes_ca_cert"),
        (&K8S, json!({"kubernetes_ca_cert": not_pem}), "kubernetes_ca_cert"),
        (&K8S, json!({"token_reviewer_jwt": ""}), "token_reviewer_jwt"),
        (&K8S, json!({"host": "https://k8s.example"}), "host"),
        (&SPIFFE, json!({"trust_domain": "spiffe://prod.example.org"}), "trust_domain"),
        (&SPIFFE, json!({"trust_domain": "Prod.Example.org"}), "trust_domain"),
        (&SPIFFE, json!({"trust_domain": "prod.example.org/path"}), "trust_domain"),
        (&SPIFFE, json!({"trust_domain": ""}), "trust_domain"),
        (&SPIFFE, json!({"trust_domain": null}), "trust_domain"),
        (&SPIFFE, json!({"trust_bundle_pem": "garbage"}), "trust_bundle_pem"),
        (&SPIFFE, json!({"trust_bundle_pem": not_pem}), "trust_bundle_pem"),
        (&SPIFFE, json!({"trust_bundle_pem": null}), "trust_bundle_pem"),
    ];
    for (k, fields, field) in &cases {
        let r = t.admin(Method::POST, k.path, Some(k.with(fields))).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{} {fields}: {}", k.path, r.body);
        let message = r.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(field), "{fields}: {message}");
        assert!(!r.text.contains(CLIENT_SECRET) && !r.text.contains(REVIEWER_JWT), "{}", r.text);
    }
    // Redirect URIs (the browser's, not this node's) may be loopback; a bundle of two
    // certificates is a bundle.
    let r = t
        .admin(Method::POST, OIDC.path, Some(OIDC.with(&json!({"allowed_redirect_uris": ["http://[::1]:9000/cb"]}))))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let two = format!("{CERT}{CERT}");
    let r = t
        .admin(
            Method::POST,
            SPIFFE.path,
            Some(SPIFFE.with(&json!({"trust_bundle_pem": two, "trust_domain": "a-b_c.0"}))),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let spiffe_id = id_of(&r, "trust_domain");
    // The same checks on PATCH, and the fixed fields.
    for (fields, field) in [
        (json!({"trust_bundle_pem": "garbage"}), "trust_bundle_pem"),
        (json!({"trust_domain": "UPPER"}), "trust_domain"),
        (json!({"domain_id": null}), "domain_id"),
        (json!({"id": "other"}), "id"),
        (json!({"bogus": true}), "bogus"),
    ] {
        let r = t.admin(Method::PATCH, &SPIFFE.one(&spiffe_id), Some(json!({ "trust_domain": fields }))).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{fields}: {}", r.body);
        assert!(r.body["error"]["message"].as_str().unwrap().contains(field), "{}", r.body);
    }
    // An unknown domain is 404; a provider_id taken in the domain is 409.
    let r = t.admin(Method::POST, OIDC.path, Some(OIDC.with(&json!({"domain_id": "no-such-domain"})))).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
    let r = t.admin(Method::POST, OIDC.path, Some(OIDC.with(&json!({})))).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "p1 was taken above: {}", r.body);
    assert!(r.body["error"]["message"].as_str().unwrap().contains("provider_id"), "{}", r.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_are_never_in_a_response() {
    let t = TestNode::start().await;
    for (k, secret, field, set) in [
        (&OIDC, CLIENT_SECRET, "client_secret", "client_secret_set"),
        (&K8S, REVIEWER_JWT, "token_reviewer_jwt", "token_reviewer_jwt_set"),
    ] {
        let r = k.create(&t, &t.admin, json!("default"), "corp").await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        let id = id_of(&r, k.envelope);
        let one = k.one(&id);
        let replies = vec![
            r,
            t.admin(Method::GET, &one, None).await,
            t.admin(Method::GET, k.path, None).await,
            t.admin(Method::PATCH, &one, Some(json!({ k.envelope: {"provider_id": "corp2"} }))).await,
        ];
        for r in &replies {
            assert!(r.status.is_success(), "{}", r.body);
            assert!(!r.text.contains(secret) && !r.text.contains(&format!("\"{field}\"")), "{}", r.text);
        }
        assert_eq!(replies[1].body[k.envelope][set], json!(true));
        // Stored for use, never in a record's Debug form (so never logged).
        let stored = k.stored(&t, &id).unwrap();
        assert!(serde_json::to_string(&stored).unwrap().contains(secret));
        assert!(!format!("{stored:?}").contains(secret));
        // Replaced write-only, and cleared by null.
        let r = t.admin(Method::PATCH, &one, Some(json!({ k.envelope: { field: "rotated-value" } }))).await;
        assert!(!r.text.contains("rotated-value"), "{}", r.text);
        assert!(serde_json::to_string(&k.stored(&t, &id).unwrap()).unwrap().contains("rotated-value"));
        let r = t.admin(Method::PATCH, &one, Some(json!({ k.envelope: { field: null } }))).await;
        assert_eq!(r.body[k.envelope][set], json!(false), "{}", r.body);
    }
}

/// The URLs this node calls (an IdP's issuer and key set, a cluster's API server) must be at
/// public addresses unless `[federation] allow_private_networks` is on: a literal loopback,
/// private, link-local, unspecified or multicast address, or `localhost`, is a 400 naming the
/// field, on create and on PATCH, and nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_urls_at_private_addresses_are_refused_unless_allowed() {
    use crate::state::Reader;
    let count = |t: &TestNode| -> usize {
        [ProviderKind::Oidc, ProviderKind::K8s]
            .iter()
            .map(|k| t.node.engine.read().scan::<Provider>(cf::PROVIDERS, &keys::records_prefix(*k)).unwrap().len())
            .sum()
    };
    let cases = [
        (&OIDC, json!({"issuer": "http://127.0.0.1:8080/realm"}), "issuer"),
        (&OIDC, json!({"jwks_uri": "http://localhost:8080/jwks"}), "jwks_uri"),
        (&OIDC, json!({"jwks_uri": "https://10.1.2.3/jwks"}), "jwks_uri"),
        (&OIDC, json!({"jwks_uri": "https://172.16.0.1/jwks"}), "jwks_uri"),
        (&OIDC, json!({"issuer": "https://169.254.169.254/latest"}), "issuer"),
        (&OIDC, json!({"jwks_uri": "https://0.0.0.0/jwks"}), "jwks_uri"),
        (&OIDC, json!({"jwks_uri": "https://[::1]/jwks"}), "jwks_uri"),
        (&OIDC, json!({"jwks_uri": "https://[::ffff:127.0.0.1]/jwks"}), "jwks_uri"),
        (&OIDC, json!({"jwks_uri": "https://[fd00::1]/jwks"}), "jwks_uri"),
        (&OIDC, json!({"jwks_uri": "https://[fe80::1]/jwks"}), "jwks_uri"),
        (&OIDC, json!({"jwks_uri": "https://[ff02::1]/jwks"}), "jwks_uri"),
        (&OIDC, json!({"issuer": "https://idp.localhost/realm"}), "issuer"),
        (&K8S, json!({"kubernetes_host": "https://192.168.0.10:6443"}), "kubernetes_host"),
        (&K8S, json!({"kubernetes_host": "https://[::1]:6443"}), "kubernetes_host"),
    ];
    let t = TestNode::start().await;
    for (k, fields, field) in &cases {
        let r = t.admin(Method::POST, k.path, Some(k.with(fields))).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{fields}: {}", r.body);
        let message = r.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(field) && message.contains("allow_private_networks"), "{fields}: {message}");
    }
    assert_eq!(count(&t), 0, "nothing was written");
    // PATCH: a changed URL is judged; another field of the record still changes.
    let r = OIDC.create(&t, &t.admin, json!("default"), "public").await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let one = OIDC.one(&id_of(&r, OIDC.envelope));
    let before = t.admin(Method::GET, &one, None).await.body;
    for (_, fields, field) in cases.iter().filter(|(k, _, _)| k.kind == ProviderKind::Oidc) {
        let r = t.admin(Method::PATCH, &one, Some(json!({ "identity_provider": fields }))).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "PATCH {fields}: {}", r.body);
        assert!(r.body["error"]["message"].as_str().unwrap().contains(field), "{}", r.body);
    }
    assert_eq!(t.admin(Method::GET, &one, None).await.body, before, "PATCH wrote nothing");

    // With the setting on (as tests running an IdP on loopback set it), the same are accepted.
    let open = TestNode::start_with(&[("federation", "allow_private_networks", "true")]).await;
    for (i, (k, fields, _)) in cases.iter().enumerate() {
        let mut body = k.with(fields);
        body[k.envelope]["provider_id"] = json!(format!("p{i}"));
        let r = open.admin(Method::POST, k.path, Some(body)).await;
        assert_eq!(r.status, StatusCode::CREATED, "{fields}: {}", r.body);
    }
}

/// A user with `role` on domain `domain`, and a token scoped to that domain.
async fn domain_token(t: &TestNode, domain: &str, role: &str, name: &str) -> String {
    let user = t.create("/v3/users", "user", json!({"name": name, "domain_id": domain, "password": "pw-123456"})).await;
    let r = t.admin(Method::GET, &format!("/v3/roles?name={role}"), None).await;
    let role_id = r.body["roles"][0]["id"].as_str().unwrap().to_string();
    let grant = format!("/v3/domains/{domain}/users/{user}/roles/{role_id}");
    assert_eq!(t.admin(Method::PUT, &grant, None).await.status, StatusCode::NO_CONTENT);
    t.token_for_id(&user, "pw-123456", json!({"domain": {"id": domain}})).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_domain_manager_manages_its_domain_providers_only() {
    let t = TestNode::start().await;
    let a = t.create("/v3/domains", "domain", json!({"name": "A"})).await;
    let b = t.create("/v3/domains", "domain", json!({"name": "B"})).await;
    let manager = domain_token(&t, &a, "manager", "mgr").await;
    let member = domain_token(&t, &a, "member", "mem").await;
    for k in [&OIDC, &K8S, &SPIFFE] {
        let r = k.create(&t, &manager, json!(a), "own").await;
        assert_eq!(r.status, StatusCode::CREATED, "{}: {}", k.path, r.body);
        let own = k.one(&id_of(&r, k.envelope));
        let theirs = k.one(&id_of(&k.create(&t, &t.admin, json!(b), "theirs").await, k.envelope));
        let global = k.one(&id_of(&k.create(&t, &t.admin, Value::Null, "global").await, k.envelope));

        let call = |method: Method, path: String, token: &str, body: Option<Value>| {
            let t = &t;
            let token = token.to_string();
            async move { t.call(method, &path, Some(&token), body).await.status }
        };
        let patch = Some(json!({ k.envelope: {"provider_id": "x"} }));
        assert_eq!(call(Method::GET, own.clone(), &manager, None).await, StatusCode::OK);
        assert_eq!(call(Method::PATCH, own.clone(), &manager, patch.clone()).await, StatusCode::OK);
        assert_eq!(call(Method::GET, format!("{}?domain_id={a}", k.path), &manager, None).await, StatusCode::OK);
        for path in [theirs.clone(), global.clone()] {
            assert_eq!(call(Method::GET, path.clone(), &manager, None).await, StatusCode::FORBIDDEN);
            assert_eq!(call(Method::PATCH, path.clone(), &manager, patch.clone()).await, StatusCode::FORBIDDEN);
            assert_eq!(call(Method::DELETE, path.clone(), &manager, None).await, StatusCode::FORBIDDEN);
        }
        for list in [format!("{}?domain_id={b}", k.path), k.path.to_string()] {
            assert_eq!(call(Method::GET, list, &manager, None).await, StatusCode::FORBIDDEN);
        }
        let r = k.create(&t, &manager, json!(b), "mine-there").await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
        let r = k.create(&t, &manager, Value::Null, "mine-global").await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
        // A member of the domain is no manager.
        assert_eq!(call(Method::GET, own.clone(), &member, None).await, StatusCode::FORBIDDEN);
        assert_eq!(k.create(&t, &member, json!(a), "m").await.status, StatusCode::FORBIDDEN);
        assert_eq!(call(Method::DELETE, own.clone(), &manager, None).await, StatusCode::NO_CONTENT);
    }
}
