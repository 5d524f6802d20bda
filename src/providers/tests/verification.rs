//! Verification of external identity tokens against real issuers on loopback: a JWKS
//! endpoint serving an RSA and an EC key (with rollover and a rate-limited refetch), SPIFFE
//! bundles, and a TokenReview server speaking HTTPS. Keys and certificates are made with the
//! `openssl` command line in a temporary directory.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

use crate::clock::now_secs;
use crate::providers::jwks::{JwksCache, DEFAULT_TTL, MAX_JWKS_BYTES};
use crate::providers::outbound::Outbound;
use crate::providers::token_review::{review, TOKEN_REVIEW_PATH};
use crate::providers::verify::{verify_oidc_jwt, verify_svid, VerifyError, LEEWAY_SECS};
use crate::state::providers::{ClusterIssuer, OidcProvider, Secret, TrustDomain};

pub(crate) fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").current_dir(dir).args(args).output().expect("openssl runs");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

pub(crate) fn read(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap()
}

/// A signing key with its self-signed certificate.
pub(crate) struct TestKey {
    pub(crate) enc: EncodingKey,
    pub(crate) alg: Algorithm,
    pub(crate) kid: String,
    pub(crate) cert_pem: String,
}

impl TestKey {
    pub(crate) fn rsa(dir: &Path, kid: &str) -> TestKey {
        openssl(dir, &["genrsa", "-out", &format!("{kid}.pem"), "2048"]);
        openssl(
            dir,
            &["rsa", "-in", &format!("{kid}.pem"), "-traditional", "-outform", "DER", "-out", &format!("{kid}.der")],
        );
        Self::finish(dir, kid, EncodingKey::from_rsa_der(&read(dir, &format!("{kid}.der"))), Algorithm::RS256)
    }

    pub(crate) fn ec(dir: &Path, kid: &str) -> TestKey {
        let pem = format!("{kid}.pem");
        openssl(dir, &["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", &pem]);
        openssl(dir, &["pkcs8", "-topk8", "-nocrypt", "-in", &pem, "-outform", "DER", "-out", &format!("{kid}.der")]);
        Self::finish(dir, kid, EncodingKey::from_ec_der(&read(dir, &format!("{kid}.der"))), Algorithm::ES256)
    }

    fn finish(dir: &Path, kid: &str, enc: EncodingKey, alg: Algorithm) -> TestKey {
        let (pem, crt) = (format!("{kid}.pem"), format!("{kid}.crt"));
        openssl(dir, &["req", "-x509", "-key", &pem, "-subj", &format!("/CN={kid}"), "-days", "2", "-out", &crt]);
        let cert_pem = String::from_utf8(read(dir, &crt)).unwrap();
        TestKey { enc, alg, kid: kid.to_owned(), cert_pem }
    }

    /// The public JWK (no `alg` for RSA keys: any RS*/PS* algorithm).
    pub(crate) fn jwk(&self) -> Value {
        let mut jwk = Jwk::from_encoding_key(&self.enc, self.alg).unwrap();
        jwk.common.key_id = Some(self.kid.clone());
        if self.alg == Algorithm::RS256 {
            jwk.common.key_algorithm = None;
        }
        serde_json::to_value(jwk).unwrap()
    }

    pub(crate) fn sign(&self, claims: &Value) -> String {
        self.sign_as(self.alg, Some(&self.kid), claims)
    }

    fn sign_as(&self, alg: Algorithm, kid: Option<&str>, claims: &Value) -> String {
        let mut header = Header::new(alg);
        header.kid = kid.map(str::to_owned);
        jsonwebtoken::encode(&header, claims, &self.enc).unwrap()
    }
}

const ISSUER: &str = "https://idp.example.test";
const CLIENT_ID: &str = "idnode-client";

fn idp_claims(now: i64) -> Value {
    json!({"iss": ISSUER, "aud": ["another-client", CLIENT_ID], "sub": "alice", "email": "alice@example.test",
           "exp": now + 300, "iat": now, "nbf": now})
}

fn with(mut claims: Value, key: &str, v: Value) -> Value {
    if v.is_null() {
        claims.as_object_mut().unwrap().remove(key);
    } else {
        claims[key] = v;
    }
    claims
}

/// A JWKS endpoint on loopback whose key set the test can replace; counts fetches.
#[derive(Default)]
pub(crate) struct JwksServer {
    keys: Mutex<Value>,
    hits: AtomicUsize,
    /// Answer 503 instead of the set.
    down: std::sync::atomic::AtomicBool,
}

pub(crate) async fn serve_jwks(keys: Vec<Value>) -> (Arc<JwksServer>, SocketAddr) {
    let state = Arc::new(JwksServer { keys: Mutex::new(json!({"keys": keys})), ..JwksServer::default() });
    let app = Router::new()
        .route(
            "/jwks",
            get(|State(s): State<Arc<JwksServer>>| async move {
                s.hits.fetch_add(1, Ordering::SeqCst);
                if s.down.load(Ordering::SeqCst) {
                    return Err(StatusCode::SERVICE_UNAVAILABLE);
                }
                let body = s.keys.lock().unwrap().clone();
                Ok(Json(body))
            }),
        )
        .route("/big", get(|| async { "x".repeat(MAX_JWKS_BYTES + 1) }))
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (state, addr)
}

impl JwksServer {
    pub(crate) fn set(&self, keys: Vec<Value>) {
        *self.keys.lock().unwrap() = json!({"keys": keys});
    }
    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// A provider whose key set (`keys`) a local server serves, and a cache that refetches for an
/// unknown kid at most every `refetch`.
async fn served(keys: Vec<Value>, refetch: Duration) -> (Arc<JwksServer>, OidcProvider, JwksCache) {
    let (server, addr) = serve_jwks(keys).await;
    (server, idp(addr), JwksCache::new(DEFAULT_TTL, refetch, Outbound::permissive()))
}

fn idp(addr: SocketAddr) -> OidcProvider {
    OidcProvider {
        issuer: ISSUER.into(),
        client_id: CLIENT_ID.into(),
        client_secret: None,
        jwks_uri: format!("http://{addr}/jwks"),
        allowed_redirect_uris: vec![],
        oidc_scopes: vec![],
        token_endpoint_auth_method: None,
    }
}

#[tokio::test]
async fn rsa_and_ec_tokens_verify_against_a_jwks_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let (rsa, ec) = (TestKey::rsa(dir.path(), "rsa-1"), TestKey::ec(dir.path(), "ec-1"));
    let (server, idp, cache) = served(vec![rsa.jwk(), ec.jwk()], Duration::from_secs(30)).await;
    let now = now_secs();

    let claims = verify_oidc_jwt(&idp, &rsa.sign(&idp_claims(now)), now, &cache).await.unwrap();
    assert_eq!(claims["sub"], "alice");
    assert_eq!(claims["email"], "alice@example.test");
    let claims = verify_oidc_jwt(&idp, &ec.sign(&idp_claims(now)), now, &cache).await.unwrap();
    assert_eq!(claims["sub"], "alice");
    // PS256 with the same RSA key; `aud` as a single string
    let single_aud = with(idp_claims(now), "aud", json!(CLIENT_ID));
    let ps = rsa.sign_as(Algorithm::PS256, Some("rsa-1"), &single_aud);
    verify_oidc_jwt(&idp, &ps, now, &cache).await.unwrap();
    // within the leeway
    let late = with(with(idp_claims(now), "exp", json!(now - LEEWAY_SECS + 5)), "iat", json!(now - 600));
    verify_oidc_jwt(&idp, &rsa.sign(&late), now, &cache).await.unwrap();
    // one fetch served all of them (the set is cached)
    assert_eq!(server.hits(), 1);
}

#[tokio::test]
async fn key_rollover_refetches_on_a_new_kid_and_the_old_kid_then_fails() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (TestKey::ec(dir.path(), "ec-old"), TestKey::ec(dir.path(), "ec-new"));
    let (server, idp, cache) = served(vec![old.jwk()], Duration::ZERO).await;
    let now = now_secs();
    verify_oidc_jwt(&idp, &old.sign(&idp_claims(now)), now, &cache).await.unwrap();
    assert_eq!(server.hits(), 1);

    server.set(vec![new.jwk()]);
    verify_oidc_jwt(&idp, &new.sign(&idp_claims(now)), now, &cache).await.unwrap();
    assert_eq!(server.hits(), 2, "the unknown kid made one refetch");
    let err = verify_oidc_jwt(&idp, &old.sign(&idp_claims(now)), now, &cache).await.unwrap_err();
    assert_eq!(err, VerifyError::UnknownKey);
}

#[tokio::test]
async fn a_flood_of_unknown_kids_does_not_hammer_the_idp() {
    let dir = tempfile::tempdir().unwrap();
    let key = TestKey::ec(dir.path(), "ec-1");
    let (server, idp, cache) = served(vec![key.jwk()], Duration::from_millis(300)).await;
    let now = now_secs();
    verify_oidc_jwt(&idp, &key.sign(&idp_claims(now)), now, &cache).await.unwrap();
    for i in 0..50 {
        let token = key.sign_as(Algorithm::ES256, Some(&format!("bogus-{i}")), &idp_claims(now));
        assert_eq!(verify_oidc_jwt(&idp, &token, now, &cache).await.unwrap_err(), VerifyError::UnknownKey);
    }
    assert_eq!(server.hits(), 1, "no refetch within the interval");
    tokio::time::sleep(Duration::from_millis(350)).await;
    let token = key.sign_as(Algorithm::ES256, Some("bogus-after"), &idp_claims(now));
    assert_eq!(verify_oidc_jwt(&idp, &token, now, &cache).await.unwrap_err(), VerifyError::UnknownKey);
    assert_eq!(server.hits(), 2, "one refetch once the interval passed");
}

#[tokio::test]
async fn an_idp_that_is_down_is_asked_once_per_interval_and_logins_share_one_fetch() {
    let dir = tempfile::tempdir().unwrap();
    let key = TestKey::ec(dir.path(), "ec-1");
    let (server, idp, cache) = served(vec![key.jwk()], Duration::from_millis(300)).await;
    let now = now_secs();
    let token = key.sign(&idp_claims(now));

    server.down.store(true, Ordering::SeqCst);
    for _ in 0..10 {
        let err = verify_oidc_jwt(&idp, &token, now, &cache).await.unwrap_err();
        assert!(matches!(err, VerifyError::KeySetUnavailable(ref m) if m.contains("503")), "{err}");
    }
    assert_eq!(server.hits(), 1, "the failure is remembered for the interval");

    tokio::time::sleep(Duration::from_millis(350)).await;
    server.down.store(false, Ordering::SeqCst);
    let logins = (0..20).map(|_| verify_oidc_jwt(&idp, &token, now, &cache));
    for r in futures::future::join_all(logins).await {
        r.unwrap();
    }
    assert_eq!(server.hits(), 2, "twenty concurrent logins, one fetch");
}

#[tokio::test]
async fn bad_tokens_are_refused_with_what_failed() {
    let dir = tempfile::tempdir().unwrap();
    let (rsa, ec) = (TestKey::rsa(dir.path(), "rsa-1"), TestKey::ec(dir.path(), "ec-1"));
    let other = TestKey::ec(dir.path(), "ec-other");
    let (_server, idp, cache) = served(vec![rsa.jwk(), ec.jwk()], Duration::from_secs(30)).await;
    let now = now_secs();
    let c = || idp_claims(now);
    let b64 = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());

    // another key, claiming a known kid
    let forged = other.sign_as(Algorithm::ES256, Some("ec-1"), &c());
    // a valid token whose payload was changed
    let good = ec.sign(&c());
    let parts: Vec<&str> = good.split('.').collect();
    let tampered = format!("{}.{}.{}", parts[0], b64(&with(c(), "sub", json!("mallory"))), parts[2]);
    let alg_none = format!("{}.{}.", b64(&json!({"alg": "none", "typ": "JWT", "kid": "ec-1"})), b64(&c()));
    let hs256 = jsonwebtoken::encode(
        &Header { kid: Some("rsa-1".into()), ..Header::new(Algorithm::HS256) },
        &c(),
        &EncodingKey::from_secret(b"the rsa key's modulus, say"),
    )
    .unwrap();
    let cases: Vec<(&str, String, VerifyError)> = vec![
        ("bad signature", forged, VerifyError::Signature),
        ("tampered payload", tampered, VerifyError::Signature),
        ("wrong iss", ec.sign(&with(c(), "iss", json!("https://evil.example.test"))), VerifyError::Issuer),
        ("no iss", ec.sign(&with(c(), "iss", Value::Null)), VerifyError::Issuer),
        ("wrong aud", ec.sign(&with(c(), "aud", json!(["another-client"]))), VerifyError::Audience(CLIENT_ID.into())),
        ("no aud", ec.sign(&with(c(), "aud", Value::Null)), VerifyError::Audience(CLIENT_ID.into())),
        ("expired", ec.sign(&with(c(), "exp", json!(now - LEEWAY_SECS - 1))), VerifyError::Expired),
        ("no exp", ec.sign(&with(c(), "exp", Value::Null)), VerifyError::MissingExpiry),
        ("not yet valid", ec.sign(&with(c(), "nbf", json!(now + LEEWAY_SECS + 60))), VerifyError::NotYetValid),
        ("issued in the future", ec.sign(&with(c(), "iat", json!(now + 3600))), VerifyError::IssuedAt),
        ("iat not a number", ec.sign(&with(c(), "iat", json!("yesterday"))), VerifyError::IssuedAt),
        ("unknown kid", ec.sign_as(Algorithm::ES256, Some("nope"), &c()), VerifyError::UnknownKey),
        ("alg none", alg_none, VerifyError::Algorithm("none".into())),
        ("HS256", hs256, VerifyError::Algorithm("HS256".into())),
        // an RSA algorithm named for the EC key: no key allows it
        ("alg not the key's", rsa.sign_as(Algorithm::RS256, Some("ec-1"), &c()), VerifyError::UnknownKey),
        ("not a JWT", "not-a-jwt".into(), VerifyError::Malformed),
    ];
    for (what, token, want) in cases {
        let err = verify_oidc_jwt(&idp, &token, now, &cache).await.unwrap_err();
        assert_eq!(err, want, "{what}");
        let msg = err.to_string();
        for part in token.split('.').filter(|p| p.len() > 8) {
            assert!(!msg.contains(part), "{what}: the message echoes the token: {msg}");
        }
    }
}

#[tokio::test]
async fn an_unreachable_or_oversized_key_set_is_unavailable() {
    let (_server, addr) = serve_jwks(vec![]).await;
    let cache = JwksCache::new(DEFAULT_TTL, Duration::ZERO, Outbound::permissive());
    let err = match cache.key_set(&format!("http://{addr}/big"), None).await {
        Err(e) => e,
        Ok(_) => panic!("an oversized key set was accepted"),
    };
    assert!(matches!(err, VerifyError::KeySetUnavailable(ref m) if m.contains("larger")), "{err}");
    let err = match cache.key_set(&format!("http://{addr}/missing"), None).await {
        Err(e) => e,
        Ok(_) => panic!("a 404 was accepted"),
    };
    assert!(matches!(err, VerifyError::KeySetUnavailable(ref m) if m.contains("404")), "{err}");
}

/// The cache holds a bounded number of URIs: past it, the least recently used is forgotten
/// (and fetched again when next needed).
#[tokio::test]
async fn the_key_set_cache_keeps_a_bounded_number_of_uris() {
    let (server, addr) = serve_jwks(vec![]).await;
    let mut cache = JwksCache::new(DEFAULT_TTL, Duration::from_secs(30), Outbound::permissive());
    cache.max_uris = 2;
    let uri = |i: usize| format!("http://{addr}/jwks?n={i}");
    cache.key_set(&uri(1), None).await.unwrap();
    cache.key_set(&uri(2), None).await.unwrap();
    cache.key_set(&uri(1), None).await.unwrap();
    assert_eq!(server.hits(), 2, "the second ask of uri 1 is cached");
    for i in 3..50 {
        cache.key_set(&uri(i), None).await.unwrap();
        cache.key_set(&uri(1), None).await.unwrap();
    }
    assert_eq!(cache.remembered(), 2, "never more than the bound");
    assert!(cache.holds(&uri(1)) && cache.holds(&uri(49)) && !cache.holds(&uri(2)), "the least recently used went");
    assert_eq!(server.hits(), 49, "uri 1, used all along, was fetched once");
}

/// Under the default policy (private networks not allowed) a key set on loopback is never
/// requested, and the failure says why only to the server.
#[tokio::test]
async fn a_key_set_on_a_private_address_is_not_fetched_by_default() {
    let (server, addr) = serve_jwks(vec![]).await;
    let strict = Arc::new(Outbound::new(false, 0).unwrap());
    let cache = JwksCache::new(DEFAULT_TTL, Duration::ZERO, strict);
    for uri in [format!("http://{addr}/jwks"), format!("http://localhost:{}/jwks", addr.port())] {
        let err = match cache.key_set(&uri, None).await {
            Err(e) => e,
            Ok(_) => panic!("{uri} was fetched"),
        };
        assert!(matches!(err, VerifyError::KeySetUnavailable(_)), "{err}");
    }
    assert_eq!(server.hits(), 0);
}

// --- SPIFFE ---

const TD: &str = "prod.example.test";
const SVID_AUD: &str = "idnode";

fn svid_claims(now: i64, sub: &str) -> Value {
    json!({"sub": sub, "aud": [SVID_AUD], "exp": now + 300, "iat": now})
}

#[test]
fn svids_verify_offline_against_the_bundle() {
    let dir = tempfile::tempdir().unwrap();
    let (rsa, ec) = (TestKey::rsa(dir.path(), "rsa-td"), TestKey::ec(dir.path(), "ec-td"));
    let other = TestKey::ec(dir.path(), "ec-other");
    let td = TrustDomain { trust_domain: TD.into(), trust_bundle_pem: format!("{}{}", rsa.cert_pem, ec.cert_pem) };
    let now = now_secs();
    let sub = format!("spiffe://{TD}/ns/apps/sa/web");

    // no kid needed: every bundle key is tried
    let claims = verify_svid(&td, &ec.sign_as(Algorithm::ES256, None, &svid_claims(now, &sub)), SVID_AUD, now).unwrap();
    assert_eq!(claims["sub"], sub.as_str());
    verify_svid(&td, &rsa.sign_as(Algorithm::RS256, None, &svid_claims(now, &sub)), SVID_AUD, now).unwrap();
    verify_svid(&td, &rsa.sign_as(Algorithm::PS384, Some("x"), &svid_claims(now, &sub)), SVID_AUD, now).unwrap();

    let refused = |token: String, want: VerifyError| {
        assert_eq!(verify_svid(&td, &token, SVID_AUD, now).unwrap_err(), want);
    };
    let subject = VerifyError::Subject(TD.into());
    refused(ec.sign(&svid_claims(now, "spiffe://other.example.test/ns/apps/sa/web")), subject.clone());
    refused(ec.sign(&svid_claims(now, &format!("spiffe://{TD}.evil/x"))), subject.clone());
    refused(ec.sign(&svid_claims(now, &format!("spiffe://{TD}"))), subject.clone());
    refused(ec.sign(&svid_claims(now, &format!("spiffe://{TD}/"))), subject.clone());
    refused(ec.sign(&svid_claims(now, &format!("spiffe://{TD}/a/../b"))), subject.clone());
    refused(ec.sign(&svid_claims(now, &format!("https://{TD}/x"))), subject);
    refused(
        ec.sign(&with(svid_claims(now, &sub), "aud", json!(["someone-else"]))),
        VerifyError::Audience(SVID_AUD.into()),
    );
    refused(other.sign(&svid_claims(now, &sub)), VerifyError::Signature);
    refused(ec.sign(&with(svid_claims(now, &sub), "exp", json!(now - LEEWAY_SECS - 1))), VerifyError::Expired);
    refused(ec.sign(&with(svid_claims(now, &sub), "nbf", json!(now + 3600))), VerifyError::NotYetValid);
    let hs =
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &svid_claims(now, &sub), &EncodingKey::from_secret(b"k"))
            .unwrap();
    refused(hs, VerifyError::Algorithm("HS256".into()));

    let empty = TrustDomain { trust_domain: TD.into(), trust_bundle_pem: String::new() };
    let err = verify_svid(&empty, &ec.sign(&svid_claims(now, &sub)), SVID_AUD, now).unwrap_err();
    assert_eq!(err, VerifyError::NoBundleKey);
}

// --- Kubernetes TokenReview ---

#[derive(Default)]
pub(crate) struct ApiServer {
    /// (Authorization header, request body) of every review.
    seen: Mutex<Vec<(String, Value)>>,
}

async fn token_review(
    State(s): State<Arc<ApiServer>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    s.seen.lock().unwrap().push((auth.clone(), body.clone()));
    if auth != "Bearer reviewer-jwt" {
        return (StatusCode::UNAUTHORIZED, Json(json!({"kind": "Status", "code": 401})));
    }
    let status = match body["spec"]["token"].as_str() {
        Some("sa-token") => json!({"authenticated": true, "user": {
            "username": "system:serviceaccount:apps:web", "uid": "uid-1",
            "groups": ["system:serviceaccounts", "system:serviceaccounts:apps"],
            "extra": {"authentication.kubernetes.io/pod-name": ["web-0"]}}}),
        _ => json!({"authenticated": false, "error": "token has expired"}),
    };
    let mut out = body;
    out["status"] = status;
    (StatusCode::CREATED, Json(out))
}

/// An API server on loopback with a certificate for 127.0.0.1 from a fresh CA (returned).
pub(crate) async fn serve_api(dir: &Path) -> (Arc<ApiServer>, SocketAddr, String) {
    // a CA and a server certificate it signed (webpki refuses a CA certificate as the server's)
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2"];
    openssl(
        dir,
        &[&["req", "-x509"][..], &ec, &["-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=cluster CA"]].concat(),
    );
    let signed = ["-CA", "ca.crt", "-CAkey", "ca.key"];
    let exts = ["-addext", "subjectAltName=IP:127.0.0.1", "-addext", "basicConstraints=critical,CA:FALSE"];
    let leaf = ["-keyout", "srv.key", "-out", "srv.crt", "-subj", "/CN=localhost"];
    openssl(dir, &[&["req", "-x509"][..], &ec, &leaf, &signed, &exts].concat());
    let ca_pem = String::from_utf8(read(dir, "ca.crt")).unwrap();
    let config = crate::http::tls::server_config(&dir.join("srv.crt"), &dir.join("srv.key"), None, "test").unwrap();
    let state = Arc::new(ApiServer::default());
    let app = Router::new().route(TOKEN_REVIEW_PATH, post(token_review)).with_state(state.clone());
    let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = tcp.local_addr().unwrap();
    let listener = crate::http::tls::TlsListener::new(tcp, config, None, "test");
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (state, addr, ca_pem)
}

fn instance(addr: SocketAddr, ca: &str) -> ClusterIssuer {
    ClusterIssuer {
        kubernetes_host: format!("https://{addr}"),
        kubernetes_ca_cert: Some(ca.to_owned()),
        token_reviewer_jwt: Some(Secret("reviewer-jwt".into())),
        disable_local_ca_jwt: false,
    }
}

#[tokio::test]
async fn token_review_over_https_with_the_configured_ca() {
    let dir = tempfile::tempdir().unwrap();
    let (api, addr, ca) = serve_api(dir.path()).await;
    let inst = instance(addr, &ca);

    let who = review(&Outbound::permissive(), &inst, "sa-token").await.unwrap();
    assert_eq!(who.username, "system:serviceaccount:apps:web");
    assert_eq!(who.uid, "uid-1");
    assert_eq!(who.groups, ["system:serviceaccounts", "system:serviceaccounts:apps"]);
    let claims = who.claims();
    assert_eq!(claims["sub"], "system:serviceaccount:apps:web");
    assert_eq!(claims["namespace"], "apps");
    assert_eq!(claims["service_account"], "web");
    assert_eq!(claims["kubernetes.io/serviceaccount/namespace"], "apps");
    assert_eq!(claims["kubernetes.io/serviceaccount/service-account.name"], "web");
    assert_eq!(claims["kubernetes.io/serviceaccount/service-account.uid"], "uid-1");
    assert_eq!(claims["groups"][1], "system:serviceaccounts:apps");
    assert_eq!(claims["extra"]["authentication.kubernetes.io/pod-name"][0], "web-0");
    {
        let seen = api.seen.lock().unwrap();
        let (auth, body) = &seen[0];
        assert_eq!(auth, "Bearer reviewer-jwt", "the reviewer JWT is the bearer");
        assert_eq!(body["apiVersion"], "authentication.k8s.io/v1");
        assert_eq!(body["kind"], "TokenReview");
        assert_eq!(body["spec"]["token"], "sa-token");
    }

    let err = review(&Outbound::permissive(), &inst, "expired-token").await.unwrap_err();
    assert_eq!(err, VerifyError::NotAuthenticated(Some("token has expired".into())));
    assert!(!err.to_string().contains("expired-token"));

    // a rejected reviewer credential is not an authentication
    let mut wrong_reviewer = inst.clone();
    wrong_reviewer.token_reviewer_jwt = Some(Secret("stale".into()));
    let err = review(&Outbound::permissive(), &wrong_reviewer, "sa-token").await.unwrap_err();
    assert!(matches!(err, VerifyError::ReviewUnavailable(ref m) if m.contains("401")), "{err}");

    // without a reviewer JWT the reviewed token is the bearer
    let mut self_review = inst.clone();
    self_review.token_reviewer_jwt = None;
    review(&Outbound::permissive(), &self_review, "sa-token").await.unwrap_err();
    assert_eq!(api.seen.lock().unwrap().last().unwrap().0, "Bearer sa-token");
}

#[tokio::test]
async fn token_review_trusts_only_the_configured_ca() {
    let dir = tempfile::tempdir().unwrap();
    let (api, addr, _ca) = serve_api(dir.path()).await;
    // a CA that did not sign the server's certificate (built-in roots are not trusted either)
    let other = TestKey::ec(dir.path(), "other-ca");
    let err = review(&Outbound::permissive(), &instance(addr, &other.cert_pem), "sa-token").await.unwrap_err();
    assert!(matches!(err, VerifyError::ReviewUnavailable(ref m) if m.contains("certificate")), "{err}");
    assert!(api.seen.lock().unwrap().is_empty(), "no request reached the server");

    let mut no_ca = instance(addr, "");
    no_ca.kubernetes_ca_cert = None;
    assert!(matches!(
        review(&Outbound::permissive(), &no_ca, "sa-token").await.unwrap_err(),
        VerifyError::ReviewUnavailable(_)
    ));
    let mut plain = instance(addr, &other.cert_pem);
    plain.kubernetes_host = format!("http://{addr}");
    assert!(matches!(
        review(&Outbound::permissive(), &plain, "sa-token").await.unwrap_err(),
        VerifyError::ReviewUnavailable(_)
    ));
}

#[test]
fn a_bundle_of_line_breaks_holds_no_certificate_and_does_not_panic() {
    for pem in ["", "\n", "\r\n\n"] {
        assert!(crate::providers::registry::load_pem_chain(pem).unwrap().is_empty());
        assert!(crate::providers::registry::pem_certificates("trust_bundle_pem", pem.into()).is_err());
    }
}
