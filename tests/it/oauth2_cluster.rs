//! The OAuth2/OIDC provider across a 3-node cluster, driven over HTTP only: the browser pages of
//! the authorization code flow are walked by hand (the hidden inputs of each form parsed with a
//! regex, the CSRF cookie the first page set sent back, the final 303 read, not followed), and
//! every step may land on another node:
//!
//! * a code whose login page was posted on node 1 and consent page on node 2 is redeemed on
//!   node 3; a replay on node 2 is refused and, at once, the first tokens are dead everywhere;
//! * a replayed refresh token revokes its family on every node at once;
//! * an access token revoked on one node is listed in `/jwks/revocation` and introspects
//!   `{"active": false}` on every node the moment `/revoke` returns;
//! * a user renamed through Keystone's API on one node shows the new name and a later
//!   `updated_at` in userinfo on every node, the same on each;
//! * the first `/jwks` requests, sent to all nodes together, create one key set; rotations (the
//!   API and `idnode keys rotate-oidc`) keep earlier tokens verifiable on every node;
//! * afterwards `idnode cluster check` finds the replicas identical.
//!
//! Nothing here sleeps for a fixed time: the only wait (a rotation reaching every node's
//! `/jwks`) polls with a deadline, and every test is bounded by [`TEST_TIMEOUT`].

use std::future::Future;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::agreement::assert_check_consistent;
use crate::support::oauth_pages::{self, code_flow, form, get_page, pkce, Answer, REDIRECT_URI};
use crate::support::{output_within_async, random_hex, Cluster, CLI_TIMEOUT, POLL};

/// Bound on one whole test (a 3-node start included).
const TEST_TIMEOUT: Duration = Duration::from_secs(120);
const DOMAIN: &str = "default";

/// Runs `test` and fails when it outlives [`TEST_TIMEOUT`] (the cluster it owns is dropped and
/// its nodes killed).
async fn bounded(name: &str, test: impl Future<Output = ()>) {
    let started = Instant::now();
    if tokio::time::timeout(TEST_TIMEOUT, test).await.is_err() {
        panic!("{name} did not finish within {TEST_TIMEOUT:?}");
    }
    eprintln!("{name}: {:.1} s", started.elapsed().as_secs_f64());
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A registered client of domain `default`.
struct OClient {
    id: String,
    secret: String,
}

/// A user of domain `default`.
struct User {
    id: String,
    name: String,
    password: String,
}

/// A cluster with an admin token, and a client that never follows redirects (the pages'
/// final 303 goes to the OAuth2 client, whose `Location` is read instead).
struct Provider {
    c: Cluster,
    admin: String,
    web: reqwest::Client,
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

/// The claims of a JWT, unverified (to read `jti`, `kid`-independent fields).
fn claims(jwt: &str) -> Value {
    let payload = jwt.split('.').nth(1).unwrap_or_else(|| panic!("not a JWT: {jwt}"));
    let bytes = URL_SAFE_NO_PAD.decode(payload).unwrap_or_else(|e| panic!("JWT payload: {e}"));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("JWT payload JSON: {e}"))
}

fn kid(jwt: &str) -> String {
    jsonwebtoken::decode_header(jwt).unwrap_or_else(|e| panic!("JWT header: {e}")).kid.expect("a kid")
}

impl Provider {
    async fn start(env: &[(&str, &str)]) -> Provider {
        let c = if env.is_empty() { Cluster::start(3).await } else { Cluster::start_with_env(3, env).await };
        c.wait_leader(Duration::from_secs(30)).await;
        let admin = c.admin_token(0).await;
        let web = oauth_pages::page_client(Duration::from_secs(10));
        Provider { c, admin, web }
    }

    fn oauth(&self, i: usize, what: &str) -> String {
        format!("{}/v4/oauth2/{DOMAIN}/{what}", self.c.api(i))
    }

    async fn get_page(&self, url: &str, cookie: Option<&str>) -> Answer {
        get_page(&self.web, url, cookie).await
    }

    /// A form post (`application/x-www-form-urlencoded`).
    async fn form(&self, url: &str, cookie: Option<&str>, fields: &[(&str, &str)]) -> Answer {
        form(&self.web, url, cookie, fields).await
    }

    /// `POST` with the admin token to node 1; asserts 201.
    async fn create(&self, path: &str, body: Value) -> Value {
        let r = self.c.post_retry(0, path, &self.admin, &body, Duration::from_secs(20)).await;
        assert_eq!(r.status, StatusCode::CREATED, "POST {path} {body}: {}", r.text);
        r.json
    }

    async fn user(&self) -> User {
        let (name, password) = (format!("oc-user-{}", random_hex(4)), format!("pw-{}", random_hex(8)));
        let body = json!({"user": {"name": name, "password": password, "domain_id": DOMAIN}});
        let id = s(&self.create("/v3/users", body).await["user"]["id"]).to_string();
        User { id, name, password }
    }

    async fn client(&self, spec: Value) -> OClient {
        let r = self.create(&format!("/v4/oauth2/{DOMAIN}/clients"), json!({ "oauth2_client": spec })).await;
        OClient { id: s(&r["oauth2_client"]["client_id"]).to_string(), secret: s(&r["client_secret"]).to_string() }
    }

    /// A confidential browser client that must use PKCE and may refresh.
    async fn web_client(&self) -> OClient {
        self.client(json!({"name": "web", "confidential": true,
                           "grant_types": ["authorization_code", "refresh_token"],
                           "redirect_uris": [REDIRECT_URI], "allowed_scopes": ["openid", "profile"],
                           "require_pkce": true}))
            .await
    }

    /// A confidential service client (client_credentials, `platform:api`).
    async fn service_client(&self) -> OClient {
        self.client(json!({"name": "svc", "confidential": true, "grant_types": ["client_credentials"],
                           "allowed_scopes": ["platform:api"]}))
            .await
    }

    /// `POST /token` on node `i` with the client's credentials in the form.
    async fn token(&self, i: usize, cl: &OClient, fields: &[(&str, &str)]) -> Answer {
        let mut all = vec![("client_id", cl.id.as_str()), ("client_secret", cl.secret.as_str())];
        all.extend_from_slice(fields);
        self.form(&self.oauth(i, "token"), None, &all).await
    }

    /// A client_credentials access token from node `i`.
    async fn service_token(&self, i: usize, cl: &OClient) -> String {
        let r = self.token(i, cl, &[("grant_type", "client_credentials"), ("scope", "platform:api")]).await;
        assert_eq!(r.status, StatusCode::OK, "client_credentials on node {}: {}", i + 1, r.text);
        s(&r.json["access_token"]).to_string()
    }

    async fn refresh(&self, i: usize, cl: &OClient, refresh_token: &str) -> Answer {
        self.token(i, cl, &[("grant_type", "refresh_token"), ("refresh_token", refresh_token)]).await
    }

    async fn introspect(&self, i: usize, cl: &OClient, token: &str) -> Value {
        let fields = [("client_id", cl.id.as_str()), ("client_secret", cl.secret.as_str()), ("token", token)];
        let r = self.form(&self.oauth(i, "introspect"), None, &fields).await;
        assert_eq!(r.status, StatusCode::OK, "introspect on node {}: {}", i + 1, r.text);
        r.json
    }

    /// Introspection of `token` on every node answers exactly `{"active": false}`.
    async fn inactive_everywhere(&self, cl: &OClient, token: &str, what: &str) {
        for i in 0..self.c.len() {
            let r = self.introspect(i, cl, token).await;
            assert_eq!(r, json!({"active": false}), "{what}: introspection on node {}", i + 1);
        }
    }

    /// The authorization code flow's pages: `/authorize` and the login post on node `login`,
    /// the consent post (approve) on node `consent`. Returns the code from the final 303.
    async fn code(&self, login: usize, consent: usize, cl: &OClient, user: &User, challenge: &str) -> String {
        let (login, consent) = (self.c.api(login), self.c.api(consent));
        code_flow(&self.web, (&login, &consent), DOMAIN, &cl.id, (&user.name, &user.password), challenge).await
    }

    /// The code flow (pages on nodes `login`/`consent`), redeemed on node `redeem`; returns the
    /// token response.
    async fn code_tokens(&self, login: usize, consent: usize, redeem: usize, cl: &OClient, user: &User) -> Value {
        let (verifier, challenge) = pkce();
        let code = self.code(login, consent, cl, user, &challenge).await;
        let fields = [
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", REDIRECT_URI),
            ("code_verifier", verifier.as_str()),
        ];
        let r = self.token(redeem, cl, &fields).await;
        assert_eq!(r.status, StatusCode::OK, "code redemption on node {}: {}", redeem + 1, r.text);
        r.json
    }

    /// `GET /userinfo` on node `i` with a bearer access token; asserts 200.
    async fn userinfo(&self, i: usize, access: &str) -> Value {
        let (url, bearer) = (self.oauth(i, "userinfo"), format!("Bearer {access}"));
        let headers = [("Authorization", bearer.as_str())];
        let r = self.c.http.request(reqwest::Method::GET, &url, None, &headers, None).await.expect("GET userinfo");
        assert_eq!(r.status, StatusCode::OK, "userinfo on node {}: {}", i + 1, r.text);
        r.json
    }

    /// `GET /jwks` on node `i`.
    async fn jwks(&self, i: usize) -> Value {
        let r = self.get_page(&self.oauth(i, "jwks"), None).await;
        assert_eq!(r.status, StatusCode::OK, "/jwks on node {}: {}", i + 1, r.text);
        r.json
    }
}

fn assert_invalid_grant(r: &Answer, what: &str) {
    assert_eq!((r.status, &r.json["error"]), (StatusCode::BAD_REQUEST, &json!("invalid_grant")), "{what}: {}", r.text);
}

/// The kids of a JWK set.
fn kids(set: &Value) -> Vec<String> {
    set["keys"]
        .as_array()
        .unwrap_or_else(|| panic!("no keys in {set}"))
        .iter()
        .map(|k| s(&k["kid"]).to_string())
        .collect()
}

/// Verifies `jwt` (ES256) with the key of its `kid` in `set`, the issuer `iss`; returns its claims.
fn verify(jwt: &str, set: &Value, iss: &str) -> Value {
    let set: jsonwebtoken::jwk::JwkSet = serde_json::from_value(set.clone()).expect("a JWK set");
    let kid = kid(jwt);
    let jwk = set.find(&kid).unwrap_or_else(|| panic!("kid {kid} is not in the key set"));
    let key = jsonwebtoken::DecodingKey::from_jwk(jwk).expect("decoding key from the JWK");
    let mut v = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
    v.set_issuer(&[iss]);
    v.validate_aud = false;
    jsonwebtoken::decode::<Value>(jwt, &key, &v)
        .unwrap_or_else(|e| panic!("token of kid {kid} does not verify: {e}"))
        .claims
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_issued_on_one_node_is_redeemed_on_another() {
    bounded("a_code_issued_on_one_node_is_redeemed_on_another", async {
        let p = Provider::start(&[]).await;
        let (cl, user) = (p.web_client().await, p.user().await);

        // Login on node 1, consent on node 2 (the sealed state and the cookie carry over),
        // redemption on node 3 with the PKCE verifier.
        let (verifier, challenge) = pkce();
        let code = p.code(0, 1, &cl, &user, &challenge).await;
        let redeem = [
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", REDIRECT_URI),
            ("code_verifier", verifier.as_str()),
        ];
        let r = p.token(2, &cl, &redeem).await;
        assert_eq!(r.status, StatusCode::OK, "redemption on node 3: {}", r.text);
        let (access, refresh) = (s(&r.json["access_token"]).to_string(), s(&r.json["refresh_token"]).to_string());
        let id = claims(s(&r.json["id_token"]));
        assert_eq!((&id["sub"], &id["aud"], &id["nonce"]), (&json!(user.id), &json!(cl.id), &json!("n-0S6_WzA2Mj")));
        assert_eq!(id["iss"], json!(p.oauth(2, "").trim_end_matches('/')), "the redeeming node's issuer");
        for i in 0..3 {
            let r = p.introspect(i, &cl, &access).await;
            assert_eq!((&r["active"], &r["sub"]), (&json!(true), &json!(user.id)), "live on node {}: {r}", i + 1);
        }

        // A replay on node 2 is refused, and what the code gave is dead everywhere at once.
        let r = p.token(1, &cl, &redeem).await;
        assert_invalid_grant(&r, "second redemption on node 2");
        p.inactive_everywhere(&cl, &access, "the access token of a replayed code").await;
        assert_invalid_grant(&p.refresh(0, &cl, &refresh).await, "the refresh token of a replayed code on node 1");
        p.inactive_everywhere(&cl, &refresh, "the refresh token of a replayed code").await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refresh_reuse_revokes_the_family_on_every_node() {
    bounded("refresh_reuse_revokes_the_family_on_every_node", async {
        let p = Provider::start(&[]).await;
        let (cl, user) = (p.web_client().await, p.user().await);
        let t = p.code_tokens(0, 0, 0, &cl, &user).await;
        let old = s(&t["refresh_token"]).to_string();

        let r = p.refresh(1, &cl, &old).await;
        assert_eq!(r.status, StatusCode::OK, "refresh on node 2: {}", r.text);
        let (current, access) = (s(&r.json["refresh_token"]).to_string(), s(&r.json["access_token"]).to_string());
        assert_ne!(current, old, "the refresh token rotates");
        for i in 0..3 {
            assert_eq!(p.introspect(i, &cl, &current).await["active"], json!(true), "current on node {}", i + 1);
        }

        assert_invalid_grant(&p.refresh(2, &cl, &old).await, "replay of the rotated refresh token on node 3");
        assert_invalid_grant(&p.refresh(0, &cl, &current).await, "the family's current token on node 1");
        p.inactive_everywhere(&cl, &current, "the current refresh token of a replayed family").await;
        p.inactive_everywhere(&cl, &access, "an access token of a replayed family (its sid)").await;

        assert_check_consistent(&p.c, 0).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_jti_is_listed_and_inactive_everywhere_at_once() {
    bounded("a_revoked_jti_is_listed_and_inactive_everywhere_at_once", async {
        let p = Provider::start(&[]).await;
        let cl = p.service_client().await;
        let token = p.service_token(0, &cl).await;
        let jti = s(&claims(&token)["jti"]).to_string();
        for i in 0..3 {
            assert_eq!(p.introspect(i, &cl, &token).await["active"], json!(true), "live on node {}", i + 1);
        }

        let fields = [
            ("client_id", cl.id.as_str()),
            ("client_secret", cl.secret.as_str()),
            ("token", token.as_str()),
            ("token_type_hint", "access_token"),
        ];
        let r = p.form(&p.oauth(1, "revoke"), None, &fields).await;
        assert_eq!((r.status, r.text.as_str()), (StatusCode::OK, ""), "revocation on node 2");
        // No wait: the answer left once every node had applied the revocation.
        for i in 0..3 {
            let r = p.get_page(&p.oauth(i, "jwks/revocation"), None).await;
            assert_eq!(r.status, StatusCode::OK, "/jwks/revocation on node {}: {}", i + 1, r.text);
            let listed = r.json["revoked_jtis"].as_array().unwrap_or_else(|| panic!("no revoked_jtis: {}", r.text));
            assert!(listed.contains(&json!(jti)), "node {} does not list {jti}: {}", i + 1, r.text);
        }
        p.inactive_everywhere(&cl, &token, "a revoked access token").await;

        assert_check_consistent(&p.c, 2).await;
    })
    .await;
}

fn now_secs() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_moves_userinfo_updated_at_on_every_node() {
    bounded("a_rename_moves_userinfo_updated_at_on_every_node", async {
        let p = Provider::start(&[]).await;
        // A fresh cluster raises its version by itself; updates record their time from 16 on.
        crate::token_cluster::wait_cluster_version(&p.c, 16.0).await;
        let (cl, user) = (p.web_client().await, p.user().await);
        let t = p.code_tokens(0, 0, 0, &cl, &user).await;
        let access = s(&t["access_token"]).to_string();
        let created = p.userinfo(0, &access).await;
        assert_eq!(created["name"], json!(user.name), "{created}");
        let created_at = created["updated_at"].as_i64().unwrap_or_else(|| panic!("no updated_at: {created}"));
        assert!(created_at <= now_secs(), "{created}");
        // Seconds are what userinfo shows: rename once the clock is past the creation's second.
        while now_secs() <= created_at {
            tokio::time::sleep(POLL).await;
        }

        let renamed = format!("{}-renamed", user.name);
        let url = format!("{}/v3/users/{}", p.c.api(1), user.id);
        let body = json!({"user": {"name": renamed}});
        let r = p.c.http.request(reqwest::Method::PATCH, &url, Some(&p.admin), &[], Some(&body)).await.expect("PATCH");
        assert_eq!(r.status, StatusCode::OK, "rename on node 2: {}", r.text);
        assert!(r.json["user"].get("updated_at").is_none(), "Keystone's user has no updated_at: {}", r.text);
        let after = now_secs();

        let mut seen = Vec::new();
        for i in 0..3 {
            let info = p.userinfo(i, &access).await;
            assert_eq!(info["name"], json!(renamed), "node {}: {info}", i + 1);
            let updated = info["updated_at"].as_i64().unwrap_or_else(|| panic!("no updated_at: {info}"));
            assert!(created_at < updated && updated <= after, "node {}: {created_at} < {updated} <= {after}", i + 1);
            seen.push(updated);
        }
        assert!(seen.windows(2).all(|w| w[0] == w[1]), "the same time on every node: {seen:?}");
        assert_check_consistent(&p.c, 1).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_created_once_and_rotation_keeps_old_tokens_verifiable() {
    bounded("keys_are_created_once_and_rotation_keeps_old_tokens_verifiable", async {
        let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
        let p = Provider::start(&[("IDNODE_OAUTH2_KEY_PUBLISH_DELAY", "0")]).await;

        // The first key requests, on all nodes at once: one key set, served by every node.
        let (a, b, c) = tokio::join!(p.jwks(0), p.jwks(1), p.jwks(2));
        assert_eq!(kids(&a).len(), 2, "a primary and a staged key: {a}");
        assert_eq!((&a, &a), (&b, &c), "every node serves the same key set");
        for i in 0..3 {
            let r = p.c.http.get(&p.oauth(i, "keys"), Some(&p.admin)).await.expect("GET keys");
            assert_eq!(r.status, StatusCode::OK, "keys on node {}: {}", i + 1, r.text);
            assert_eq!(r.json["oauth2_keys"]["epoch"], json!(1), "created once (node {}): {}", i + 1, r.text);
        }

        let cl = p.service_client().await;
        let old = p.service_token(0, &cl).await;
        let old_kid = kid(&old);
        let iss0 = p.oauth(0, "").trim_end_matches('/').to_string();

        // Rotation through the API on node 2.
        let url = p.oauth(1, "keys/rotate");
        let r = p.c.http.request(reqwest::Method::POST, &url, Some(&p.admin), &[], None).await.expect("rotate");
        assert_eq!(r.status, StatusCode::OK, "rotation on node 2: {}", r.text);
        let set = &r.json["oauth2_keys"];
        assert_eq!(set["epoch"], json!(2), "{set}");
        let state_of = |set: &Value, kid: &str| -> Value {
            set["keys"]
                .as_array()
                .expect("keys")
                .iter()
                .find(|k| k["kid"] == json!(kid))
                .map_or(Value::Null, |k| k["state"].clone())
        };
        assert_eq!(state_of(set, &old_kid), json!("retired"), "the old primary stays published: {set}");
        let primary =
            set["keys"].as_array().expect("keys").iter().find(|k| k["state"] == "primary").expect("a primary");
        let new_kid = s(&primary["kid"]).to_string();
        assert_ne!(new_kid, old_kid);

        // Every node: once its /jwks shows the rotation (polled), the old kid is still there,
        // the old token verifies against it and introspects active; a new token has the new kid.
        for i in 0..3 {
            let deadline = Instant::now() + Duration::from_secs(10);
            let set = loop {
                let set = p.jwks(i).await;
                if kids(&set).len() == 3 {
                    break set;
                }
                assert!(Instant::now() < deadline, "node {} never served the rotated key set: {set}", i + 1);
                tokio::time::sleep(POLL).await;
            };
            assert!(kids(&set).contains(&old_kid), "node {} dropped the old kid: {set}", i + 1);
            verify(&old, &set, &iss0);
            assert_eq!(p.introspect(i, &cl, &old).await["active"], json!(true), "old token on node {}", i + 1);
            let new = p.service_token(i, &cl).await;
            assert_eq!(kid(&new), new_kid, "a token minted on node {} after the rotation", i + 1);
            verify(&new, &set, p.oauth(i, "").trim_end_matches('/'));
        }

        // The CLI rotates again (through node 3); the first token still verifies everywhere.
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_idnode"));
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy().to_string();
            if k.starts_with("IDNODE_") || k.starts_with("OS_") || k.to_ascii_lowercase().ends_with("_proxy") {
                cmd.env_remove(k);
            }
        }
        cmd.args(["keys", "rotate-oidc", "--domain", DOMAIN, "--url", &p.c.api(2)])
            .env("OS_PASSWORD", &p.c.admin_password);
        let out = output_within_async(&mut cmd, CLI_TIMEOUT).await;
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "idnode keys rotate-oidc: {}\n{stdout}\n{stderr}", out.status);
        let printed: Value =
            serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("CLI output ({e}): {stdout}"));
        assert_eq!(printed["oauth2_keys"]["epoch"], json!(3), "{printed}");
        assert_eq!(state_of(&printed["oauth2_keys"], &old_kid), json!("retired"), "{printed}");
        for i in 0..3 {
            let deadline = Instant::now() + Duration::from_secs(10);
            let set = loop {
                let set = p.jwks(i).await;
                if kids(&set).len() == 4 {
                    break set;
                }
                assert!(Instant::now() < deadline, "node {} never served the second rotation: {set}", i + 1);
                tokio::time::sleep(POLL).await;
            };
            verify(&old, &set, &iss0);
            assert_eq!(p.introspect(i, &cl, &old).await["active"], json!(true), "old token on node {}", i + 1);
        }
    })
    .await;
}
