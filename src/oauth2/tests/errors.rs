//! Every error row of the spec for the provider's machine endpoints (`/token`, `/revoke`,
//! `/introspect`, `/userinfo`, discovery and keys), one test per row, through the real
//! router. Each error body is exactly `{error, error_description}` with
//! `Cache-Control: no-store`, never a 500.

use std::future::Future;
use std::time::Duration;

use axum::http::{Method, StatusCode};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::{json, Value};

use crate::clock::now_secs;
use crate::context::Core;
use crate::oauth2::secrets::{self, keyed_hash};
use crate::oauth2::tokens;
use crate::state::cf;
use crate::state::oauth2::{keys, AuthCode, DeviceGrant, DeviceStatus, Issued, OAuth2Command, RefreshFamily};
use crate::state::{Command, Reader};
use crate::testkit::{send_content, Reply, TestNode};

pub(super) const D: &str = "default";
pub(super) const FORM: &str = "application/x-www-form-urlencoded";
pub(super) const CB: &str = "https://app.example/cb";
pub(super) const PW: &str = "alice password 1";
/// A PKCE pair: the S256 challenge of the verifier.
const CHALLENGE: &str = "zY3dLN7IOx58P_4ckFRohSQVPpiKxfSo4ju7_lQKixI";
const VERIFIER: &str = "dBjftJeZ4CVP-mJ92K9CaUuv9kF4i1rKZ0ryFfxRh2w";
const DEVICE: &str = "urn:ietf:params:oauth:grant-type:device_code";
const EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// A client's credentials as the tests present them.
#[derive(Clone)]
pub(super) struct Creds {
    pub id: String,
    pub secret: Option<String>,
}

impl Creds {
    /// Form fields that authenticate the client (`client_secret_post`).
    fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![("client_id", self.id.clone())];
        if let Some(s) = &self.secret {
            out.push(("client_secret", s.clone()));
        }
        out
    }
}

/// One request with these headers and, if any, this form body.
pub(super) async fn send(
    t: &TestNode,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    form: Option<&str>,
) -> Reply {
    send_content(&t.router, method, path, headers, form.map(|f| (FORM, f.to_string()))).await
}

pub(super) fn form<K: AsRef<str>, V: AsRef<str>>(pairs: &[(K, V)]) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k.as_ref(), v.as_ref());
    }
    s.finish()
}

pub(super) fn header(r: &Reply, name: &str) -> String {
    r.headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_string()
}

/// `Authorization: Basic` of RFC 6749 §2.3.1 (both parts form-urlencoded).
fn basic(id: &str, secret: &str) -> String {
    let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    format!("Basic {}", STANDARD.encode(format!("{}:{}", enc(id), enc(secret))))
}

/// A node limiting OAuth2 requests to a burst of 2, then 1 a second, per source; the test
/// client (192.0.2.1) is a trusted proxy, so `X-Forwarded-For` names other sources.
pub(super) const RATE_LIMITED: &[(&str, &str, &str)] = &[
    ("oauth2", "rate_limit_per_second", "1"),
    ("oauth2", "rate_limit_burst", "2"),
    ("api", "trusted_proxies", "192.0.2.1"),
];

/// Sends `request(n)` (n = 1, 2, …) until the answer is 429, every earlier one being 200; at
/// most 11 requests. Answers how many passed and the last answer.
pub(super) async fn until_limited<F: Future<Output = Reply>>(mut request: impl FnMut(usize) -> F) -> (usize, Reply) {
    let mut passed = 0;
    loop {
        let r = request(passed + 1).await;
        if r.status == StatusCode::TOO_MANY_REQUESTS || passed == 10 {
            return (passed, r);
        }
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        passed += 1;
    }
}

/// An RFC 6749 §5.2 error: this status and code, exactly two members, never cached.
#[track_caller]
pub(super) fn assert_error(r: &Reply, status: StatusCode, error: &str) {
    assert_eq!(r.status, status, "{}", r.text);
    assert_eq!(r.body["error"], json!(error), "{}", r.text);
    let members: Vec<&String> = r.body.as_object().map(|o| o.keys().collect()).unwrap_or_default();
    assert_eq!(members, vec!["error", "error_description"], "{}", r.text);
    assert!(r.body["error_description"].as_str().is_some_and(|d| !d.is_empty()), "{}", r.text);
    assert_eq!(header(r, "cache-control"), "no-store", "{}", r.text);
}

/// `invalid_client` of RFC 6749 §5.2: 401 with a challenge.
#[track_caller]
fn assert_invalid_client(r: &Reply) {
    assert_error(r, StatusCode::UNAUTHORIZED, "invalid_client");
    assert!(header(r, "www-authenticate").starts_with("Basic"), "{:?}", r.headers);
}

/// A user of `domain` (the default domain's users by name elsewhere).
pub(super) async fn user_in(t: &TestNode, domain: &str, name: &str, extra: Value) -> String {
    let mut body = json!({"name": name, "domain_id": domain, "password": PW});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    t.create("/v3/users", "user", body).await
}

/// A client of `domain`: confidential with the code, refresh, client_credentials and
/// exchange grants unless `fields` says otherwise.
pub(super) async fn client_in(t: &TestNode, domain: &str, fields: Value) -> Creds {
    let mut body = json!({"name": "App", "confidential": true,
        "grant_types": ["authorization_code", "refresh_token", "client_credentials", EXCHANGE],
        "redirect_uris": [CB], "allowed_scopes": ["openid", "profile", "email", "platform:api"]});
    for (k, v) in fields.as_object().unwrap() {
        body[k] = v.clone();
    }
    let r =
        t.admin(Method::POST, &format!("/v4/oauth2/{domain}/clients"), Some(json!({ "oauth2_client": body }))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    Creds {
        id: r.body["oauth2_client"]["client_id"].as_str().unwrap().to_string(),
        secret: r.body["client_secret"].as_str().map(str::to_string),
    }
}

/// A node with the user `alice` of the Default domain and a client there (`fields` as for
/// [`client_in`]).
pub(super) async fn alice_and_client(fields: Value) -> (TestNode, String, Creds) {
    let t = TestNode::start().await;
    let alice = user_in(&t, D, "alice", json!({})).await;
    let c = client_in(&t, D, fields).await;
    (t, alice, c)
}

async fn client(t: &TestNode, fields: Value) -> Creds {
    client_in(t, D, fields).await
}

/// A public device client.
async fn device_client(t: &TestNode) -> Creds {
    client(t, json!({"confidential": false, "grant_types": [DEVICE], "redirect_uris": []})).await
}

/// POST `endpoint` of `domain` with these form fields (the client's credentials added).
async fn post_in(t: &TestNode, domain: &str, endpoint: &str, c: &Creds, pairs: &[(&str, &str)]) -> Reply {
    let mut all: Vec<(&str, String)> = c.pairs();
    all.extend(pairs.iter().map(|(k, v)| (*k, v.to_string())));
    send(t, Method::POST, &format!("/v4/oauth2/{domain}/{endpoint}"), &[], Some(&form(&all))).await
}

async fn post(t: &TestNode, endpoint: &str, c: &Creds, pairs: &[(&str, &str)]) -> Reply {
    post_in(t, D, endpoint, c, pairs).await
}

/// A new authorization code of `client_id` for `user_id` as `/authorize` would have issued it
/// (for [`CB`], with the PKCE `challenge` if any, expiring at `expires_at`), and the command
/// that records it.
pub(super) fn code_command(
    node: &Core,
    domain: &str,
    client_id: &str,
    user_id: &str,
    scope: &str,
    challenge: Option<&str>,
    expires_at: i64,
) -> (String, Command) {
    // As `/authorize` draws it: with the user's cut-off as the sign-in read it.
    let seen = node.engine.read().user(user_id).unwrap().map_or(0, |u| u.tokens_valid_after);
    let code = crate::oauth2::cutoff::new_code(seen, &secrets::new_secret());
    let hash = keyed_hash(node, secrets::CODE, &code).unwrap();
    let record = AuthCode {
        domain_id: domain.to_string(),
        client_id: client_id.to_string(),
        user_id: user_id.to_string(),
        redirect_uri: CB.to_string(),
        scopes: scope.split(' ').map(str::to_string).collect(),
        code_challenge: challenge.map(str::to_string),
        nonce: None,
        auth_time: now_secs(),
        expires_at,
        redeemed: None,
    };
    (code, Command::OAuth2(OAuth2Command::IssueCode { hash, code: record, consent: None }))
}

/// An authorization code of `c` for `user_id`, as `/authorize` would have issued it (with the
/// [`CHALLENGE`]), expiring at `expires_at`.
async fn issue_code_in(t: &TestNode, domain: &str, c: &Creds, user_id: &str, scope: &str, expires_at: i64) -> String {
    let (code, cmd) = code_command(&t.node, domain, &c.id, user_id, scope, Some(CHALLENGE), expires_at);
    t.node.propose(cmd).await.unwrap();
    code
}

async fn issue_code(t: &TestNode, c: &Creds, user_id: &str, scope: &str) -> String {
    issue_code_in(t, D, c, user_id, scope, now_secs() + 60).await
}

async fn redeem_in(t: &TestNode, domain: &str, c: &Creds, code: &str) -> Reply {
    let pairs =
        [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", CB), ("code_verifier", VERIFIER)];
    post_in(t, domain, "token", c, &pairs).await
}

async fn redeem(t: &TestNode, c: &Creds, code: &str) -> Reply {
    redeem_in(t, D, c, code).await
}

/// The token response of a fresh code of `user_id` (`scope`) in `domain`.
async fn tokens_in(t: &TestNode, domain: &str, c: &Creds, user_id: &str, scope: &str) -> Value {
    let code = issue_code_in(t, domain, c, user_id, scope, now_secs() + 60).await;
    let r = redeem_in(t, domain, c, &code).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body
}

pub(super) async fn user_tokens(t: &TestNode, c: &Creds, user_id: &str, scope: &str) -> Value {
    tokens_in(t, D, c, user_id, scope).await
}

pub(super) fn s(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or_else(|| panic!("no {key} in {v}")).to_string()
}

async fn refresh_in(t: &TestNode, domain: &str, c: &Creds, token: &str) -> Reply {
    post_in(t, domain, "token", c, &[("grant_type", "refresh_token"), ("refresh_token", token)]).await
}

pub(super) async fn refresh(t: &TestNode, c: &Creds, token: &str) -> Reply {
    refresh_in(t, D, c, token).await
}

async fn client_credentials(t: &TestNode, c: &Creds, scope: Option<&str>) -> Reply {
    let mut pairs = vec![("grant_type", "client_credentials")];
    if let Some(sc) = scope {
        pairs.push(("scope", sc));
    }
    post(t, "token", c, &pairs).await
}

/// Introspection of `token` by `c`: 200 with no-store, the JSON answer.
async fn introspect_in(t: &TestNode, domain: &str, c: &Creds, token: &str) -> Value {
    let r = post_in(t, domain, "introspect", c, &[("token", token)]).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(header(&r, "cache-control"), "no-store");
    r.body
}

async fn introspect(t: &TestNode, c: &Creds, token: &str) -> Value {
    introspect_in(t, D, c, token).await
}

#[track_caller]
fn assert_inactive(v: &Value) {
    assert_eq!(*v, json!({"active": false}));
}

async fn revoke(t: &TestNode, c: &Creds, token: &str) {
    let r = post(t, "revoke", c, &[("token", token)]).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.text, "", "an empty body");
}

async fn userinfo(t: &TestNode, method: Method, token: &str) -> Reply {
    let auth = format!("Bearer {token}");
    send(t, method, &format!("/v4/oauth2/{D}/userinfo"), &[("authorization", &auth)], None).await
}

#[track_caller]
fn assert_invalid_token(r: &Reply) {
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.text);
    assert_eq!(header(r, "www-authenticate"), r#"Bearer error="invalid_token""#);
    assert_error(r, StatusCode::UNAUTHORIZED, "invalid_token");
}

async fn set_enabled(t: &TestNode, kind: &str, path: &str, enabled: bool) {
    let r = t.admin(Method::PATCH, path, Some(json!({ kind: {"enabled": enabled} }))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

fn stored_family(t: &TestNode, id: &str) -> RefreshFamily {
    t.node.engine.read().get_t::<RefreshFamily>(cf::OAUTH2, &keys::family(id)).unwrap().expect("family")
}

/// The family id of a refresh token.
pub(super) fn family_of(refresh_token: &str) -> String {
    tokens::split_refresh(refresh_token).unwrap().0.to_string()
}

// ---------------------------------------------------------------------------------------
// /token

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_invalid_client_is_401_with_a_challenge() {
    let t = TestNode::start().await;
    let conf = client(&t, json!({})).await;
    let public = client(&t, json!({"confidential": false, "grant_types": ["authorization_code"]})).await;
    let secret = conf.secret.clone().unwrap();
    let cc = [("grant_type", "client_credentials")];
    let unknown = Creds { id: "no-such-client".into(), secret: Some(secret.clone()) };
    let bad_secret = Creds { id: conf.id.clone(), secret: Some("wrong".into()) };
    let no_secret = Creds { id: conf.id.clone(), secret: None };
    let public_with_secret = Creds { id: public.id.clone(), secret: Some("anything".into()) };
    for c in [&unknown, &bad_secret, &no_secret, &public_with_secret] {
        assert_invalid_client(&post(&t, "token", c, &cc).await);
    }
    // The same through HTTP Basic, and with no client at all.
    let token = format!("/v4/oauth2/{D}/token");
    for auth in [basic(&conf.id, "wrong"), basic("no-such-client", &secret), "Basic !!!".to_string()] {
        let r = send(&t, Method::POST, &token, &[("authorization", &auth)], Some(&form(&cc))).await;
        assert_invalid_client(&r);
    }
    assert_invalid_client(&send(&t, Method::POST, &token, &[], Some(&form(&cc))).await);
    // The right secret by Basic works; then the client is disabled.
    let r = send(&t, Method::POST, &token, &[("authorization", &basic(&conf.id, &secret))], Some(&form(&cc))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    set_enabled(&t, "oauth2_client", &format!("/v4/oauth2/{D}/clients/{}", conf.id), false).await;
    assert_invalid_client(&post(&t, "token", &conf, &cc).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_unknown_grant_type_is_unsupported_grant_type() {
    let t = TestNode::start().await;
    let c = client(&t, json!({})).await;
    for g in ["password", "implicit", "device_code", "urn:ietf:params:oauth:grant-type:jwt-bearer"] {
        let r = post(&t, "token", &c, &[("grant_type", g), ("username", "a"), ("password", "b")]).await;
        assert_error(&r, StatusCode::BAD_REQUEST, "unsupported_grant_type");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_grant_not_registered_is_unauthorized_client() {
    let t = TestNode::start().await;
    let cc_only = client(&t, json!({"grant_types": ["client_credentials"], "redirect_uris": []})).await;
    for (g, extra) in [
        ("authorization_code", ("code", "x")),
        ("refresh_token", ("refresh_token", "a.b")),
        (DEVICE, ("device_code", "x")),
        (EXCHANGE, ("subject_token", "x")),
    ] {
        let r = post(&t, "token", &cc_only, &[("grant_type", g), extra]).await;
        assert_error(&r, StatusCode::BAD_REQUEST, "unauthorized_client");
    }
    let code_only = client(&t, json!({"grant_types": ["authorization_code"]})).await;
    assert_error(&client_credentials(&t, &code_only, None).await, StatusCode::BAD_REQUEST, "unauthorized_client");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scope_outside_the_clients_or_platform_on_user_grants_is_invalid_scope() {
    let (t, alice, c) = alice_and_client(json!({"allowed_scopes": ["openid", "platform:api"]})).await;
    for scope in ["email", "openid unknown", "platform:api email"] {
        assert_error(&client_credentials(&t, &c, Some(scope)).await, StatusCode::BAD_REQUEST, "invalid_scope");
    }
    assert_eq!(client_credentials(&t, &c, Some("platform:api")).await.status, StatusCode::OK);
    // A refresh may narrow, never widen; a refused one does not spend the token.
    let tokens = user_tokens(&t, &c, &alice, "openid").await;
    let rt = s(&tokens, "refresh_token");
    for scope in ["openid platform:api", "email"] {
        let r =
            post(&t, "token", &c, &[("grant_type", "refresh_token"), ("refresh_token", &rt), ("scope", scope)]).await;
        assert_error(&r, StatusCode::BAD_REQUEST, "invalid_scope");
    }
    let r = refresh(&t, &c, &rt).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["scope"], json!("openid"));
    // platform:api on the device grant: refused at /device_authorization.
    let dev = client(
        &t,
        json!({"confidential": false, "grant_types": [DEVICE], "redirect_uris": [],
               "allowed_scopes": ["openid", "platform:api"]}),
    )
    .await;
    for scope in ["platform:api", "openid platform:api", "email"] {
        let r = post(&t, "device_authorization", &dev, &[("scope", scope)]).await;
        assert_error(&r, StatusCode::BAD_REQUEST, "invalid_scope");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_code_is_invalid_grant() {
    let (t, alice, c) = alice_and_client(json!({})).await;
    let code = issue_code_in(&t, D, &c, &alice, "openid", now_secs() - 1).await;
    let r = redeem(&t, &c, &code).await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_grant");
    // Unknown codes too.
    assert_error(&redeem(&t, &c, "no-such-code").await, StatusCode::BAD_REQUEST, "invalid_grant");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn used_code_is_invalid_grant_and_revokes_what_it_gave() {
    let (t, alice, c) = alice_and_client(json!({})).await;
    let code = issue_code(&t, &c, &alice, "openid profile").await;
    let first = redeem(&t, &c, &code).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    let access = s(&first.body, "access_token");
    let refresh_token = s(&first.body, "refresh_token");
    assert_eq!(introspect(&t, &c, &access).await["active"], json!(true));

    assert_error(&redeem(&t, &c, &code).await, StatusCode::BAD_REQUEST, "invalid_grant");
    assert_inactive(&introspect(&t, &c, &access).await);
    assert_inactive(&introspect(&t, &c, &refresh_token).await);
    assert_error(&refresh(&t, &c, &refresh_token).await, StatusCode::BAD_REQUEST, "invalid_grant");
    assert_invalid_token(&userinfo(&t, Method::GET, &access).await);
    // Another client cannot redeem someone else's code either.
    let other = client(&t, json!({})).await;
    let code = issue_code(&t, &c, &alice, "openid").await;
    assert_error(&redeem(&t, &other, &code).await, StatusCode::BAD_REQUEST, "invalid_grant");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_or_missing_pkce_verifier_is_invalid_grant() {
    let (t, alice, c) = alice_and_client(json!({})).await;
    let code = issue_code(&t, &c, &alice, "openid").await;
    let wrong = "x".repeat(43);
    for verifier in [wrong.as_str(), "short", &VERIFIER[1..]] {
        let pairs =
            [("grant_type", "authorization_code"), ("code", &code), ("redirect_uri", CB), ("code_verifier", verifier)];
        assert_error(&post(&t, "token", &c, &pairs).await, StatusCode::BAD_REQUEST, "invalid_grant");
    }
    let pairs = [("grant_type", "authorization_code"), ("code", code.as_str()), ("redirect_uri", CB)];
    assert_error(&post(&t, "token", &c, &pairs).await, StatusCode::BAD_REQUEST, "invalid_grant");
    // The right verifier still redeems it (a failed attempt did not spend the code).
    assert_eq!(redeem(&t, &c, &code).await.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirect_uri_mismatch_is_invalid_grant() {
    let (t, alice, c) = alice_and_client(json!({"redirect_uris": [CB, "https://app.example/other"]})).await;
    let code = issue_code(&t, &c, &alice, "openid").await;
    for uri in ["https://app.example/other", "https://app.example/cb/", "https://evil.example/cb"] {
        let pairs =
            [("grant_type", "authorization_code"), ("code", &code), ("redirect_uri", uri), ("code_verifier", VERIFIER)];
        assert_error(&post(&t, "token", &c, &pairs).await, StatusCode::BAD_REQUEST, "invalid_grant");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoked_refresh_token_is_invalid_grant() {
    let (t, alice, c) = alice_and_client(json!({})).await;
    let tokens = user_tokens(&t, &c, &alice, "openid").await;
    let rt = s(&tokens, "refresh_token");
    revoke(&t, &c, &rt).await;
    assert_error(&refresh(&t, &c, &rt).await, StatusCode::BAD_REQUEST, "invalid_grant");
    // A malformed or unknown refresh token too.
    for bad in ["garbage", "deadbeef.secret", &format!("{}.wrong", family_of(&rt))] {
        assert_error(&refresh(&t, &c, bad).await, StatusCode::BAD_REQUEST, "invalid_grant");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reused_refresh_token_is_invalid_grant_and_revokes_the_family() {
    let (t, alice, c) = alice_and_client(json!({})).await;
    let tokens = user_tokens(&t, &c, &alice, "openid").await;
    let rt1 = s(&tokens, "refresh_token");
    let r = refresh(&t, &c, &rt1).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let rt2 = s(&r.body, "refresh_token");
    let access2 = s(&r.body, "access_token");
    assert_ne!(rt1, rt2, "rotated");
    assert_eq!(introspect(&t, &c, &access2).await["active"], json!(true));

    assert_error(&refresh(&t, &c, &rt1).await, StatusCode::BAD_REQUEST, "invalid_grant");
    assert!(stored_family(&t, &family_of(&rt1)).revoked_at.is_some());
    assert_error(&refresh(&t, &c, &rt2).await, StatusCode::BAD_REQUEST, "invalid_grant");
    assert_inactive(&introspect(&t, &c, &access2).await);
    // Another client's refresh token is not this client's to use.
    let other = client(&t, json!({})).await;
    let tokens = user_tokens(&t, &c, &alice, "openid").await;
    assert_error(&refresh(&t, &other, &s(&tokens, "refresh_token")).await, StatusCode::BAD_REQUEST, "invalid_grant");
    assert_eq!(refresh(&t, &c, &s(&tokens, "refresh_token")).await.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refresh_past_the_absolute_lifetime_is_invalid_grant() {
    let (t, alice, c) = alice_and_client(json!({})).await;
    // A redemption whose family ends now (as a 90-day-old one would).
    let code = issue_code(&t, &c, &alice, "openid").await;
    let at = now_secs();
    let secret = secrets::new_secret();
    let family = RefreshFamily {
        id: "oldfamily".into(),
        domain_id: D.into(),
        client_id: c.id.clone(),
        user_id: alice.clone(),
        scopes: vec!["openid".into()],
        auth_time: at - 90 * 86_400,
        created_at: at - 90 * 86_400,
        expires_at: at,
        current: keyed_hash(&t.node, secrets::REFRESH, &secret).unwrap(),
        spent: Vec::new(),
        revoked_at: None,
    };
    let cmd = OAuth2Command::RedeemCode {
        hash: keyed_hash(&t.node, secrets::CODE, &code).unwrap(),
        client_id: c.id.clone(),
        at,
        issued: Issued { jti: "j-old".into(), access_exp: at + 900, family_id: Some(family.id.clone()) },
        family: Some(family),
    };
    t.node.propose(Command::OAuth2(cmd)).await.unwrap();
    let token = tokens::refresh_token("oldfamily", &secret);
    let r = refresh(&t, &c, &token).await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_grant");
    assert!(r.body["error_description"].as_str().unwrap().contains("lifetime"), "{}", r.body);
    assert_inactive(&introspect(&t, &c, &token).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabled_user_is_invalid_grant_and_the_family_stays_revoked() {
    let (t, alice, c) = alice_and_client(json!({})).await;
    let tokens = user_tokens(&t, &c, &alice, "openid").await;
    let rt = s(&tokens, "refresh_token");
    let access = s(&tokens, "access_token");
    let code = issue_code(&t, &c, &alice, "openid").await;
    let user_path = format!("/v3/users/{alice}");
    set_enabled(&t, "user", &user_path, false).await;
    assert_error(&refresh(&t, &c, &rt).await, StatusCode::BAD_REQUEST, "invalid_grant");
    assert_error(&redeem(&t, &c, &code).await, StatusCode::BAD_REQUEST, "invalid_grant");
    assert_inactive(&introspect(&t, &c, &access).await);
    assert_invalid_token(&userinfo(&t, Method::GET, &access).await);
    assert!(stored_family(&t, &family_of(&rt)).revoked_at.is_some());
    set_enabled(&t, "user", &user_path, true).await;
    assert_error(&refresh(&t, &c, &rt).await, StatusCode::BAD_REQUEST, "invalid_grant");
    assert_inactive(&introspect(&t, &c, &access).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabled_domain_is_invalid_grant() {
    let t = TestNode::start().await;
    let dom = t.create("/v3/domains", "domain", json!({"name": "other"})).await;
    let bob = user_in(&t, &dom, "bob", json!({})).await;
    let c = client_in(&t, &dom, json!({})).await;
    let tokens = tokens_in(&t, &dom, &c, &bob, "openid").await;
    let rt = s(&tokens, "refresh_token");
    let code = issue_code_in(&t, &dom, &c, &bob, "openid", now_secs() + 60).await;
    let domain_path = format!("/v3/domains/{dom}");
    set_enabled(&t, "domain", &domain_path, false).await;
    assert_error(&refresh_in(&t, &dom, &c, &rt).await, StatusCode::BAD_REQUEST, "invalid_grant");
    assert_error(&redeem_in(&t, &dom, &c, &code).await, StatusCode::BAD_REQUEST, "invalid_grant");
    let cc = post_in(&t, &dom, "token", &c, &[("grant_type", "client_credentials")]).await;
    assert_error(&cc, StatusCode::BAD_REQUEST, "invalid_grant");
    // Client authentication still comes first.
    let wrong = Creds { id: c.id.clone(), secret: Some("wrong".into()) };
    assert_invalid_client(&post_in(&t, &dom, "token", &wrong, &[("grant_type", "client_credentials")]).await);
    // Re-enabled, the family stays revoked.
    set_enabled(&t, "domain", &domain_path, true).await;
    assert_error(&refresh_in(&t, &dom, &c, &rt).await, StatusCode::BAD_REQUEST, "invalid_grant");
    // An unknown domain has no token endpoint at all.
    let r = post_in(&t, "no-such-domain", "token", &c, &[("grant_type", "client_credentials")]).await;
    assert_error(&r, StatusCode::NOT_FOUND, "invalid_request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_exchange_to_an_unknown_service_type_is_invalid_target() {
    let t = TestNode::start().await;
    let c = client(&t, json!({})).await;
    let subject = s(&client_credentials(&t, &c, Some("platform:api")).await.body, "access_token");
    let svc = t.create("/v3/services", "service", json!({"type": "compute", "name": "nova"})).await;
    assert!(!svc.is_empty());
    let exchange = |audiences: Vec<&'static str>| {
        let mut pairs = vec![("grant_type", EXCHANGE), ("subject_token", subject.as_str())];
        pairs.extend(audiences.into_iter().map(|a| ("audience", a)));
        pairs
    };
    // A bare service type is the spec's form of an audience; an unknown one is refused all the same.
    for audiences in [vec!["platform-apis:nope"], vec!["platform-apis:compute", "platform-apis:nope"], vec!["nope"]] {
        let r = post(&t, "token", &c, &exchange(audiences)).await;
        assert_error(&r, StatusCode::BAD_REQUEST, "invalid_target");
    }
    let r = post(&t, "token", &c, &exchange(vec!["platform-apis:compute"])).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    // A subject token that is not a live platform token is invalid_grant; no audience, invalid_request.
    let r = post(
        &t,
        "token",
        &c,
        &[("grant_type", EXCHANGE), ("subject_token", "x"), ("audience", "platform-apis:compute")],
    )
    .await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_grant");
    let r = post(&t, "token", &c, &exchange(vec![])).await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_request");
}

fn device_grant(t: &TestNode, device_code: &str) -> DeviceGrant {
    let hash = keyed_hash(&t.node, secrets::DEVICE_CODE, device_code).unwrap();
    t.node.engine.read().get_t::<DeviceGrant>(cf::OAUTH2, &keys::device(&hash)).unwrap().expect("grant")
}

async fn device_start(t: &TestNode, c: &Creds) -> (String, String) {
    let r = post(t, "device_authorization", c, &[("scope", "openid")]).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    (s(&r.body, "device_code"), s(&r.body, "user_code").replace('-', ""))
}

async fn device_poll(t: &TestNode, c: &Creds, device_code: &str) -> Reply {
    post(t, "token", c, &[("grant_type", DEVICE), ("device_code", device_code)]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_poll_before_a_decision_is_authorization_pending() {
    let t = TestNode::start().await;
    let c = device_client(&t).await;
    let (device_code, _) = device_start(&t, &c).await;
    assert_error(&device_poll(&t, &c, &device_code).await, StatusCode::BAD_REQUEST, "authorization_pending");
    assert_error(&device_poll(&t, &c, "no-such-code").await, StatusCode::BAD_REQUEST, "invalid_grant");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_poll_too_fast_is_slow_down_and_the_interval_grows_by_5() {
    let t = TestNode::start().await;
    let c = device_client(&t).await;
    let (device_code, _) = device_start(&t, &c).await;
    assert_eq!(device_grant(&t, &device_code).interval, 5);
    assert_error(&device_poll(&t, &c, &device_code).await, StatusCode::BAD_REQUEST, "authorization_pending");
    for interval in [10, 15] {
        let r = device_poll(&t, &c, &device_code).await;
        assert_error(&r, StatusCode::BAD_REQUEST, "slow_down");
        assert!(r.body["error_description"].as_str().unwrap().contains(&format!("{interval} s")), "{}", r.body);
        assert_eq!(device_grant(&t, &device_code).interval, interval);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_denied_is_access_denied() {
    let t = TestNode::start().await;
    let c = device_client(&t).await;
    let (device_code, user_code) = device_start(&t, &c).await;
    let cmd =
        OAuth2Command::DecideDevice { domain_id: D.into(), user_code, approve: None, consent: None, at: now_secs() };
    t.node.propose(Command::OAuth2(cmd)).await.unwrap();
    assert_eq!(device_grant(&t, &device_code).status, DeviceStatus::Denied);
    assert_error(&device_poll(&t, &c, &device_code).await, StatusCode::BAD_REQUEST, "access_denied");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_code_past_its_lifetime_is_expired_token() {
    let t = TestNode::start_with(&[("oauth2", "device_code_lifetime", "1")]).await;
    let c = device_client(&t).await;
    let (device_code, _) = device_start(&t, &c).await;
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_error(&device_poll(&t, &c, &device_code).await, StatusCode::BAD_REQUEST, "expired_token");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_or_repeated_parameters_are_invalid_request() {
    let t = TestNode::start().await;
    let c = client(&t, json!({})).await;
    for pairs in [
        vec![],
        vec![("scope", "openid")],
        vec![("grant_type", "authorization_code")],
        vec![("grant_type", "authorization_code"), ("code", "")],
        vec![("grant_type", "refresh_token")],
        vec![("grant_type", EXCHANGE), ("audience", "platform-apis:x")],
    ] {
        assert_error(&post(&t, "token", &c, &pairs).await, StatusCode::BAD_REQUEST, "invalid_request");
    }
    let dev = device_client(&t).await;
    assert_error(&post(&t, "token", &dev, &[("grant_type", DEVICE)]).await, StatusCode::BAD_REQUEST, "invalid_request");
    for pairs in [
        vec![("grant_type", "client_credentials"), ("grant_type", "client_credentials")],
        vec![("grant_type", "client_credentials"), ("scope", "openid"), ("scope", "email")],
    ] {
        assert_error(&post(&t, "token", &c, &pairs).await, StatusCode::BAD_REQUEST, "invalid_request");
    }
    // The client id twice (form field repeated).
    let twice = form(&[("grant_type", "client_credentials"), ("client_id", &c.id), ("client_id", &c.id)]);
    let r = send(&t, Method::POST, &format!("/v4/oauth2/{D}/token"), &[], Some(&twice)).await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_request");
    // A Basic client id that differs from the form's.
    let auth = basic(&c.id, c.secret.as_deref().unwrap());
    let body = form(&[("grant_type", "client_credentials"), ("client_id", "someone-else")]);
    let r = send(&t, Method::POST, &format!("/v4/oauth2/{D}/token"), &[("authorization", &auth)], Some(&body)).await;
    assert_error(&r, StatusCode::BAD_REQUEST, "invalid_request");
}

// ---------------------------------------------------------------------------------------
// /revoke

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoke_refuses_bad_clients_and_requests() {
    let t = TestNode::start().await;
    let c = client(&t, json!({})).await;
    let wrong = Creds { id: c.id.clone(), secret: Some("wrong".into()) };
    assert_invalid_client(&post(&t, "revoke", &wrong, &[("token", "x")]).await);
    let unknown = Creds { id: "nobody".into(), secret: None };
    assert_invalid_client(&post(&t, "revoke", &unknown, &[("token", "x")]).await);
    assert_error(&post(&t, "revoke", &c, &[]).await, StatusCode::BAD_REQUEST, "invalid_request");
    assert_error(
        &post(&t, "revoke", &c, &[("token", "a"), ("token", "b")]).await,
        StatusCode::BAD_REQUEST,
        "invalid_request",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoke_answers_200_empty_and_revokes_only_the_clients_own_tokens() {
    let (t, alice, c) = alice_and_client(json!({})).await;
    let other = client(&t, json!({})).await;
    // Unknown and malformed tokens, with and without hints.
    for token in ["unknown", "a.b.c", "deadbeef.secret"] {
        revoke(&t, &c, token).await;
        let r = post(&t, "revoke", &c, &[("token", token), ("token_type_hint", "refresh_token")]).await;
        assert_eq!((r.status, r.text.as_str()), (StatusCode::OK, ""));
    }
    // Another client's tokens are left alone.
    let theirs = user_tokens(&t, &other, &alice, "openid").await;
    for key in ["access_token", "refresh_token"] {
        revoke(&t, &c, &s(&theirs, key)).await;
        assert_eq!(introspect(&t, &other, &s(&theirs, key)).await["active"], json!(true), "{key}");
    }
    // A refresh token: its family goes (the access tokens of the family too).
    let mine = user_tokens(&t, &c, &alice, "openid").await;
    revoke(&t, &c, &s(&mine, "refresh_token")).await;
    assert!(stored_family(&t, &family_of(&s(&mine, "refresh_token"))).revoked_at.is_some());
    assert_inactive(&introspect(&t, &c, &s(&mine, "refresh_token")).await);
    assert_inactive(&introspect(&t, &c, &s(&mine, "access_token")).await);
    // An access token: listed by jti, inactive, its family gone too.
    let mine = user_tokens(&t, &c, &alice, "openid").await;
    let access = s(&mine, "access_token");
    let jti = s(&introspect(&t, &c, &access).await, "jti");
    revoke(&t, &c, &access).await;
    let r = send(&t, Method::GET, &format!("/v4/oauth2/{D}/jwks/revocation"), &[], None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(header(&r, "cache-control"), "public, max-age=60");
    assert!(r.body["revoked_jtis"].as_array().unwrap().contains(&json!(jti)), "{}", r.body);
    assert_inactive(&introspect(&t, &c, &access).await);
    assert_error(&refresh(&t, &c, &s(&mine, "refresh_token")).await, StatusCode::BAD_REQUEST, "invalid_grant");
    // A platform token of the client itself (client_credentials).
    let cc = s(&client_credentials(&t, &c, None).await.body, "access_token");
    assert_eq!(introspect(&t, &c, &cc).await["active"], json!(true));
    revoke(&t, &c, &cc).await;
    assert_inactive(&introspect(&t, &c, &cc).await);
}

// ---------------------------------------------------------------------------------------
// /introspect

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn introspect_refuses_public_clients_and_missing_tokens() {
    let t = TestNode::start().await;
    let c = client(&t, json!({})).await;
    let public = client(&t, json!({"confidential": false, "grant_types": ["authorization_code"]})).await;
    assert_invalid_client(&post(&t, "introspect", &public, &[("token", "x")]).await);
    let wrong = Creds { id: c.id.clone(), secret: Some("wrong".into()) };
    assert_invalid_client(&post(&t, "introspect", &wrong, &[("token", "x")]).await);
    let r = post(&t, "introspect", &Creds { id: String::new(), secret: None }, &[("token", "x")]).await;
    assert_invalid_client(&r);
    assert_error(&post(&t, "introspect", &c, &[]).await, StatusCode::BAD_REQUEST, "invalid_request");
    assert_error(&post(&t, "introspect", &c, &[("token", "")]).await, StatusCode::BAD_REQUEST, "invalid_request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn introspect_is_exactly_inactive_for_anything_not_live() {
    let (t, alice, c) = alice_and_client(json!({})).await;
    // Unknown and malformed.
    for token in ["unknown", "a.b.c", "eyJhbGciOiJub25lIn0.e30.", "deadbeef.secret", &"x".repeat(9000)] {
        assert_inactive(&introspect(&t, &c, token).await);
    }
    // Revoked.
    let tokens = user_tokens(&t, &c, &alice, "openid").await;
    let access = s(&tokens, "access_token");
    let active = introspect(&t, &c, &access).await;
    assert_eq!(active["active"], json!(true));
    assert_eq!(active["token_use"], json!("access"));
    revoke(&t, &c, &access).await;
    assert_inactive(&introspect(&t, &c, &access).await);
    // Used: a spent refresh token (its successor is live).
    let tokens = user_tokens(&t, &c, &alice, "openid").await;
    let rt1 = s(&tokens, "refresh_token");
    let rt2 = s(&refresh(&t, &c, &rt1).await.body, "refresh_token");
    let r = post(&t, "introspect", &c, &[("token", &rt1), ("token_type_hint", "refresh_token")]).await;
    assert_inactive(&r.body);
    let live = introspect(&t, &c, &rt2).await;
    assert_eq!((live["active"].clone(), live["token_use"].clone()), (json!(true), json!("refresh")));
    // Foreign domain: a client of another domain asks about a token of the default domain.
    let dom = t.create("/v3/domains", "domain", json!({"name": "other"})).await;
    let foreign = client_in(&t, &dom, json!({})).await;
    let tokens = user_tokens(&t, &c, &alice, "openid").await;
    for key in ["access_token", "refresh_token"] {
        assert_inactive(&introspect_in(&t, &dom, &foreign, &s(&tokens, key)).await);
    }
    let platform = s(&client_credentials(&t, &c, None).await.body, "access_token");
    assert_inactive(&introspect_in(&t, &dom, &foreign, &platform).await);
    // The default domain's client cannot authenticate at the other domain's endpoint.
    assert_invalid_client(&post_in(&t, &dom, "introspect", &c, &[("token", &platform)]).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_tokens_are_inactive_and_refused_by_userinfo() {
    let t = TestNode::start_with(&[("oauth2", "access_token_lifetime", "1")]).await;
    let alice = user_in(&t, D, "alice", json!({})).await;
    let c = client(&t, json!({})).await;
    let tokens = user_tokens(&t, &c, &alice, "openid").await;
    let access = s(&tokens, "access_token");
    let platform = s(&client_credentials(&t, &c, None).await.body, "access_token");
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_inactive(&introspect(&t, &c, &access).await);
    assert_inactive(&introspect(&t, &c, &platform).await);
    assert_invalid_token(&userinfo(&t, Method::GET, &access).await);
    // Its refresh token still works: the refresh family outlives access tokens.
    assert_eq!(refresh(&t, &c, &s(&tokens, "refresh_token")).await.status, StatusCode::OK);
}

// ---------------------------------------------------------------------------------------
// /userinfo

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn userinfo_without_a_token_is_401_bearer() {
    let t = TestNode::start().await;
    let path = format!("/v4/oauth2/{D}/userinfo");
    for method in [Method::GET, Method::POST] {
        for headers in [vec![], vec![("authorization", "Bearer ")], vec![("authorization", "Basic YTpi")]] {
            let r = send(&t, method.clone(), &path, &headers, None).await;
            assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.text);
            assert_eq!(header(&r, "www-authenticate"), "Bearer");
            assert_eq!(header(&r, "cache-control"), "no-store");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn userinfo_refuses_bad_revoked_foreign_and_platform_tokens_and_disabled_parties() {
    let (t, alice, c) = alice_and_client(json!({})).await;
    for bad in ["garbage", "a.b.c", "eyJhbGciOiJub25lIn0.e30."] {
        assert_invalid_token(&userinfo(&t, Method::GET, bad).await);
    }
    // Revoked.
    let access = s(&user_tokens(&t, &c, &alice, "openid").await, "access_token");
    assert_eq!(userinfo(&t, Method::GET, &access).await.status, StatusCode::OK);
    revoke(&t, &c, &access).await;
    assert_invalid_token(&userinfo(&t, Method::GET, &access).await);
    // Foreign: a token of another domain.
    let dom = t.create("/v3/domains", "domain", json!({"name": "other"})).await;
    let bob = user_in(&t, &dom, "bob", json!({})).await;
    let foreign_client = client_in(&t, &dom, json!({})).await;
    let foreign = s(&tokens_in(&t, &dom, &foreign_client, &bob, "openid").await, "access_token");
    let at_home = send(
        &t,
        Method::GET,
        &format!("/v4/oauth2/{dom}/userinfo"),
        &[("authorization", &format!("Bearer {foreign}"))],
        None,
    )
    .await;
    assert_eq!(at_home.status, StatusCode::OK, "{}", at_home.text);
    assert_invalid_token(&userinfo(&t, Method::GET, &foreign).await);
    // A platform token, by client_credentials or with platform:api.
    let cc = s(&client_credentials(&t, &c, None).await.body, "access_token");
    assert_invalid_token(&userinfo(&t, Method::GET, &cc).await);
    // Disabled user, then disabled client.
    let access = s(&user_tokens(&t, &c, &alice, "openid").await, "access_token");
    let user_path = format!("/v3/users/{alice}");
    set_enabled(&t, "user", &user_path, false).await;
    assert_invalid_token(&userinfo(&t, Method::POST, &access).await);
    set_enabled(&t, "user", &user_path, true).await;
    let access = s(&user_tokens(&t, &c, &alice, "openid").await, "access_token");
    assert_eq!(userinfo(&t, Method::GET, &access).await.status, StatusCode::OK);
    set_enabled(&t, "oauth2_client", &format!("/v4/oauth2/{D}/clients/{}", c.id), false).await;
    assert_invalid_token(&userinfo(&t, Method::GET, &access).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn userinfo_without_openid_is_403_insufficient_scope() {
    let (t, alice, c) = alice_and_client(json!({})).await;
    let access = s(&user_tokens(&t, &c, &alice, "profile email").await, "access_token");
    for method in [Method::GET, Method::POST] {
        let r = userinfo(&t, method, &access).await;
        assert_error(&r, StatusCode::FORBIDDEN, "insufficient_scope");
        assert!(header(&r, "www-authenticate").starts_with(r#"Bearer error="insufficient_scope""#));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn userinfo_answers_get_and_post_with_email_only_when_asked_and_known() {
    let t = TestNode::start().await;
    let alice = user_in(&t, D, "alice", json!({"email": "alice@example.org"})).await;
    let bob = user_in(&t, D, "bob", json!({})).await;
    let c = client(&t, json!({"claims_template": {"tenant": "${user.domain_id}"}})).await;
    let with_email = s(&user_tokens(&t, &c, &alice, "openid email").await, "access_token");
    for method in [Method::GET, Method::POST] {
        let r = userinfo(&t, method, &with_email).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        assert_eq!(header(&r, "cache-control"), "no-store");
        assert_eq!(r.body, json!({"sub": alice, "email": "alice@example.org", "email_verified": false, "tenant": D}));
    }
    // No email scope: no email, even though the user has one.
    let profile = s(&user_tokens(&t, &c, &alice, "openid profile").await, "access_token");
    let r = userinfo(&t, Method::GET, &profile).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["preferred_username"], json!("alice"));
    assert!(r.body.get("email").is_none() && r.body.get("email_verified").is_none(), "{}", r.body);
    // Email scope, but no address: neither member.
    let no_address = s(&user_tokens(&t, &c, &bob, "openid email").await, "access_token");
    let r = userinfo(&t, Method::POST, &no_address).await;
    assert_eq!(r.body, json!({"sub": bob, "tenant": D}));
}

// ---------------------------------------------------------------------------------------
// Rate limits

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_and_introspect_are_rate_limited() {
    // The test client (192.0.2.1) is a trusted proxy, so X-Forwarded-For names other sources.
    let t = TestNode::start_with(RATE_LIMITED).await;
    let c = client(&t, json!({})).await;
    let other = client(&t, json!({})).await;
    let body = form(&[
        ("grant_type", "client_credentials"),
        ("client_id", &c.id),
        ("client_secret", c.secret.as_deref().unwrap()),
    ]);
    let token = format!("/v4/oauth2/{D}/token");
    // The burst passes, then 429 (a slow machine may refill one token in between).
    let (passed, limited) = until_limited(|_| send(&t, Method::POST, &token, &[], Some(&body))).await;
    assert!((2..4).contains(&passed), "{passed} requests passed");
    assert_error(&limited, StatusCode::TOO_MANY_REQUESTS, "invalid_request");
    let retry: u64 = header(&limited, "retry-after").parse().unwrap();
    assert!((1..=2).contains(&retry), "{retry}");
    // The same class covers /introspect, /revoke and /userinfo for this source.
    let r = send(&t, Method::GET, &format!("/v4/oauth2/{D}/userinfo"), &[], None).await;
    assert_error(&r, StatusCode::TOO_MANY_REQUESTS, "invalid_request");

    // Introspection is also limited per client, whatever the source.
    let introspect_as = |c: &Creds, n: usize| {
        let body = form(&[("token", "x"), ("client_id", &c.id), ("client_secret", c.secret.as_deref().unwrap())]);
        let source = format!("203.0.113.{n}");
        let path = format!("/v4/oauth2/{D}/introspect");
        let t = &t;
        async move { send(t, Method::POST, &path, &[("x-forwarded-for", &source)], Some(&body)).await }
    };
    let (passed, limited) = until_limited(|n| introspect_as(&c, n)).await;
    assert!((2..4).contains(&passed), "{passed} introspections passed");
    assert_error(&limited, StatusCode::TOO_MANY_REQUESTS, "invalid_request");
    assert!(header(&limited, "retry-after").parse::<u64>().unwrap() >= 1);
    // Another client has its own bucket.
    assert_eq!(introspect_as(&other, 100).await.status, StatusCode::OK);
}

// ---------------------------------------------------------------------------------------
// Discovery, key set, rotation

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_domains_have_no_provider_and_the_key_set_is_cacheable() {
    let t = TestNode::start().await;
    for path in [".well-known/openid-configuration", "jwks", "jwks/revocation"] {
        let r = send(&t, Method::GET, &format!("/v4/oauth2/no-such-domain/{path}"), &[], None).await;
        assert_error(&r, StatusCode::NOT_FOUND, "invalid_request");
    }
    let dom = t.create("/v3/domains", "domain", json!({"name": "off", "enabled": false})).await;
    let r = send(&t, Method::GET, &format!("/v4/oauth2/{dom}/jwks"), &[], None).await;
    assert_error(&r, StatusCode::NOT_FOUND, "invalid_request");

    let r = send(&t, Method::GET, &format!("/v4/oauth2/{D}/jwks"), &[], None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(header(&r, "cache-control"), "public, max-age=300");
    assert_eq!(r.body["keys"].as_array().unwrap().len(), 2, "primary and staged: {}", r.body);
    let r = send(&t, Method::GET, &format!("/v4/oauth2/{D}/.well-known/openid-configuration"), &[], None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["jwks_uri"], json!(format!("{}/v4/oauth2/{D}/jwks", t.node.cfg.public_base())));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_rotation_waits_for_the_publish_delay() {
    let t = TestNode::start().await;
    let r = t.admin(Method::POST, &format!("/v4/oauth2/{D}/keys/rotate"), None).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert!(r.body["error"]["message"].as_str().unwrap().contains("key_publish_delay"), "{}", r.body);
    let keys = t.admin(Method::GET, &format!("/v4/oauth2/{D}/keys"), None).await;
    assert_eq!(keys.body["oauth2_keys"]["epoch"], json!(1), "{}", keys.body);
}

fn key_epoch(t: &TestNode) -> String {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &t.node.registry).unwrap();
    text.lines()
        .find(|l| l.starts_with(&format!("idnode_oauth2_key_epoch{{domain_id=\"{D}\"}}")))
        .unwrap_or_else(|| panic!("no key epoch in {text}"))
        .rsplit(' ')
        .next()
        .unwrap()
        .to_string()
}

/// Verifies an ES256 JWT against a JWK Set with `jsonwebtoken` directly, as a relying
/// party would.
fn verify_with(jwks: &Value, token: &str) -> Value {
    let kid = jsonwebtoken::decode_header(token).unwrap().kid.unwrap();
    let jwk = jwks["keys"].as_array().unwrap().iter().find(|k| k["kid"] == json!(kid)).expect("kid published");
    let key =
        jsonwebtoken::DecodingKey::from_ec_components(jwk["x"].as_str().unwrap(), jwk["y"].as_str().unwrap()).unwrap();
    let mut v = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
    v.validate_aud = false;
    jsonwebtoken::decode::<Value>(token, &key, &v).unwrap().claims
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_rotation_keeps_earlier_tokens_verifiable_and_moves_the_epoch() {
    let t = TestNode::start_with(&[("oauth2", "key_publish_delay", "0")]).await;
    let c = client(&t, json!({})).await;
    let before = s(&client_credentials(&t, &c, None).await.body, "access_token");
    let old_kid = jsonwebtoken::decode_header(&before).unwrap().kid.unwrap();
    assert_eq!(key_epoch(&t), "1");
    let jwks_path = format!("/v4/oauth2/{D}/jwks");
    let staged: Vec<Value> = send(&t, Method::GET, &jwks_path, &[], None).await.body["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kid"].clone())
        .filter(|k| *k != json!(old_kid))
        .collect();

    let r = t.admin(Method::POST, &format!("/v4/oauth2/{D}/keys/rotate"), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["oauth2_keys"]["epoch"], json!(2));
    assert_eq!(key_epoch(&t), "2");
    let jwks = send(&t, Method::GET, &jwks_path, &[], None).await.body;
    assert_eq!(jwks["keys"].as_array().unwrap().len(), 3, "retired, primary, staged: {jwks}");
    assert_eq!(verify_with(&jwks, &before)["client_id"], json!(c.id));
    assert_eq!(introspect(&t, &c, &before).await["active"], json!(true));
    let after = s(&client_credentials(&t, &c, None).await.body, "access_token");
    let new_kid = jsonwebtoken::decode_header(&after).unwrap().kid.unwrap();
    assert_ne!(new_kid, old_kid);
    assert_eq!(vec![json!(new_kid)], staged, "the staged key signs now");
    verify_with(&jwks, &after);
    assert_eq!(key_epoch(&t), "2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_schedule_the_leader_rotates_the_signing_keys_and_earlier_tokens_stay_verifiable() {
    let t = TestNode::start_with(&[("oauth2", "key_publish_delay", "0"), ("oauth2", "rotate_every", "2s")]).await;
    let c = client(&t, json!({})).await;
    let before = s(&client_credentials(&t, &c, None).await.body, "access_token");
    let old_kid = jsonwebtoken::decode_header(&before).unwrap().kid.unwrap();
    let task = crate::oauth2::schedule::spawn(&t.node.core, &t.node.oauth2).expect("scheduled");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let keys = t.admin(Method::GET, &format!("/v4/oauth2/{D}/keys"), None).await;
        if keys.body["oauth2_keys"]["epoch"].as_u64().is_some_and(|e| e >= 2) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no scheduled rotation within 60 s: {}", keys.body);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    task.abort();
    let jwks = send(&t, Method::GET, &format!("/v4/oauth2/{D}/jwks"), &[], None).await.body;
    assert_eq!(verify_with(&jwks, &before)["client_id"], json!(c.id), "the retired key is still published");
    assert_eq!(introspect(&t, &c, &before).await["active"], json!(true));
    let after = s(&client_credentials(&t, &c, None).await.body, "access_token");
    assert_ne!(jsonwebtoken::decode_header(&after).unwrap().kid.unwrap(), old_kid);
    verify_with(&jwks, &after);
}
