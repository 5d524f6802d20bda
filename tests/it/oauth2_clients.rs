//! The per-domain OAuth2/OIDC provider (`/v4/oauth2/{domain_id}`) judged by real clients: every
//! flow is run by `oauth2/oidc_client.py` (next to this file) through authlib's `OAuth2Session`,
//! every JWT is verified by PyJWT against the issuer's JWKS (ES256, signature, `iss`, `aud`,
//! `exp`, the id token's `nonce`), and the login and consent pages are filled in headless
//! Chromium driven by selenium through Debian's `/usr/bin/chromedriver` (offline: no Selenium
//! Manager). The script prints one JSON object per run; these tests assert on it.
//!
//! Needs `/opt/anchors/oauth-venv` (authlib, requests, PyJWT, selenium) and the `chromium` and
//! `chromium-driver` packages: `bash scripts/install-test-deps` installs them (CI runs it), and
//! without them these tests fail rather than skip. One script run may take up to
//! [`SCRIPT_TIMEOUT`]; a failing run shows the script's stdout (its JSON) and stderr (traceback).
//!
//! Run them alone with `cargo test --test it oauth2_clients::`; by hand, e.g.
//! `/opt/anchors/oauth-venv/bin/python tests/it/oauth2/oidc_client.py client_credentials
//!  --issuer http://127.0.0.1:5000/v4/oauth2/default --client-id ID --client-secret S --scope platform:api`.

use std::path::Path;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{free_ports, output_within_async, random_hex, Cluster};

const PYTHON: &str = "/opt/anchors/oauth-venv/bin/python";
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/oauth2/oidc_client.py");
/// Bound on one script run (a device flow polls for up to 90 s).
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(120);
const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";
const EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

/// One node, its admin token and the issuer of domain `default`.
struct Provider {
    cluster: Cluster,
    admin: String,
    issuer: String,
}

/// A registered OAuth2 client (`secret` only for confidential clients).
struct OClient {
    id: String,
    secret: Option<String>,
}

impl Provider {
    async fn start() -> Provider {
        for (path, what) in [
            (PYTHON, "the OAuth2 client venv"),
            ("/usr/bin/chromium", "Debian's chromium"),
            ("/usr/bin/chromedriver", "Debian's chromium-driver"),
        ] {
            assert!(Path::new(path).exists(), "{path} ({what}) is missing: run `bash scripts/install-test-deps`");
        }
        let cluster = Cluster::start(1).await;
        let admin = cluster.admin_token(0).await;
        let issuer = format!("{}/v4/oauth2/default", cluster.api(0));
        Provider { cluster, admin, issuer }
    }

    /// `POST` with the admin token; asserts 201 and returns the body.
    async fn create(&self, path: &str, body: Value) -> Value {
        let url = format!("{}{path}", self.cluster.api(0));
        let r = self
            .cluster
            .http
            .post(&url, Some(self.admin.as_str()), &body)
            .await
            .unwrap_or_else(|e| panic!("POST {path}: {e}"));
        assert_eq!(r.status, StatusCode::CREATED, "POST {path} {body}: {}", r.text);
        r.json
    }

    /// A user of domain `default` with an e-mail address; returns its id.
    async fn user(&self, name: &str, password: &str) -> String {
        let body = json!({"user": {"name": name, "password": password, "domain_id": "default",
                                    "email": "x@example.org"}});
        let r = self.create("/v3/users", body).await;
        r["user"]["id"].as_str().expect("user id").to_string()
    }

    /// A client of domain `default` (`spec` is the `oauth2_client` object of the request).
    async fn client(&self, spec: Value) -> OClient {
        let confidential = spec["confidential"].as_bool().expect("spec says confidential or not");
        let r = self.create("/v4/oauth2/default/clients", json!({ "oauth2_client": spec })).await;
        let id = r["oauth2_client"]["client_id"].as_str().unwrap_or_else(|| panic!("no client_id in {r}")).to_string();
        let secret = r["client_secret"].as_str().map(str::to_string);
        assert_eq!(secret.is_some(), confidential, "a secret exactly for confidential clients: {r}");
        OClient { id, secret }
    }

    /// Runs `oidc_client.py <cmd> --issuer … --client-id … [--client-secret …] <args>` and
    /// returns its JSON. Panics unless it exits 0 with one JSON object on stdout.
    async fn run(&self, client: &OClient, cmd: &str, args: &[&str]) -> Value {
        let mut c = tokio::process::Command::new(PYTHON);
        c.arg(SCRIPT).arg(cmd).args(["--issuer", self.issuer.as_str(), "--client-id", client.id.as_str()]);
        if let Some(secret) = &client.secret {
            // One argument: a secret may start with `-`, which argparse would read as an option.
            c.arg(format!("--client-secret={secret}"));
        }
        c.args(args).env("SE_OFFLINE", "true");
        let out = output_within_async(&mut c, SCRIPT_TIMEOUT).await;
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "oidc_client.py {cmd} {args:?} failed ({}):\n{stdout}\n{stderr}", out.status);
        serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
            panic!("oidc_client.py {cmd}: stdout is not one JSON object ({e}):\n{stdout}\n{stderr}")
        })
    }
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

/// `a` then `b`, as one argument list.
fn cat<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<&'a str> {
    a.iter().chain(b).copied().collect()
}

/// Asserts a refresh with `token` fails with `invalid_grant`.
async fn refresh_fails(p: &Provider, c: &OClient, token: &str, why: &str) {
    let r = p.run(c, "refresh", &["--refresh-token", token, "--expect-error"]).await;
    assert_eq!(r["error"], "invalid_grant", "{why}: {r}");
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn authlib_client_credentials_and_introspection() {
    let p = Provider::start().await;
    let c = p
        .client(json!({"name": "svc", "confidential": true, "grant_types": ["client_credentials"],
                       "allowed_scopes": ["platform:api"]}))
        .await;

    let out = p.run(&c, "client_credentials", &["--scope", "platform:api"]).await;
    let (token, claims) = (&out["token"], &out["access_claims"]);
    assert_eq!(claims["aud"], "platform-apis", "{out}");
    assert!(claims["platform_context"].is_object(), "a platform access token carries platform_context: {out}");
    assert!(token.get("id_token").is_none() && token.get("refresh_token").is_none(), "{out}");
    assert!(s(&token["token_type"]).eq_ignore_ascii_case("bearer"), "{out}");
    assert!(token["expires_in"].as_u64().is_some_and(|e| e > 0), "{out}");
    assert!(s(&out["token_cache_control"]).contains("no-store"), "token responses are not cached: {out}");
    let access = s(&token["access_token"]);

    let i = p.run(&c, "introspect", &["--token", access]).await;
    assert_eq!(i["status"], 200, "{i}");
    assert!(s(&i["cache_control"]).contains("no-store"), "{i}");
    let b = &i["body"];
    assert_eq!((&b["active"], &b["client_id"]), (&json!(true), &json!(c.id)), "{i}");
    assert!(b["platform_context"].is_object() && b["exp"].is_u64() && b["jti"].is_string(), "{i}");

    let r = p.run(&c, "revoke", &["--token", access, "--hint", "access_token"]).await;
    assert_eq!((&r["status"], &r["body"]), (&json!(200), &json!("")), "revocation: 200, empty body: {r}");
    let i = p.run(&c, "introspect", &["--token", access]).await;
    assert_eq!((&i["status"], &i["body"]), (&json!(200), &json!({"active": false})), "{i}");
}

#[tokio::test]
async fn authlib_code_flow_through_browser_pages() {
    let p = Provider::start().await;
    let (name, password) = (format!("web-user-{}", random_hex(4)), format!("pw-{}", random_hex(8)));
    let user = p.user(&name, &password).await;
    let port = free_ports(1)[0];
    let c = p
        .client(json!({"name": "web", "confidential": true, "grant_types": ["authorization_code", "refresh_token"],
                       "redirect_uris": [format!("http://127.0.0.1:{port}/cb")],
                       "allowed_scopes": ["openid", "profile", "email"], "require_pkce": true}))
        .await;
    let port = port.to_string();
    let login: [&str; 8] = [
        "--scope",
        "openid profile email",
        "--username",
        name.as_str(),
        "--password",
        password.as_str(),
        "--redirect-port",
        port.as_str(),
    ];

    // First visit: login, then consent (remembered), on a 320 px wide phone screen.
    let out = p.run(&c, "code", &cat(&login, &["--remember", "--narrow"])).await;
    assert_eq!(out["pages"], json!(["login", "consent"]), "{out}");
    let id = &out["id_claims"];
    assert_eq!((&id["sub"], &id["aud"], &id["nonce"]), (&json!(user), &json!(c.id), &out["nonce"]), "{out}");
    assert!(id.get("platform_context").is_none(), "an id token carries identity only: {out}");
    assert_ne!(out["at_hash_ok"], json!(false), "at_hash, when present, matches the access token: {out}");
    assert_eq!(out["access_claims"]["aud"], json!(c.id), "no platform:api: the access token is for the client: {out}");
    for page in out["page_checks"].as_array().expect("page_checks") {
        assert!(s(&page["cache_control"]).contains("no-store"), "{page}");
        assert!(s(&page["x_frame_options"]).eq_ignore_ascii_case("DENY"), "{page}");
        assert!(!s(&page["content_security_policy"]).is_empty(), "{page}");
        assert_eq!(page["viewport_meta"], true, "{page}");
    }
    assert_eq!(out["fits_320"], true, "the pages fit a 320 px wide screen: {:?}", out["page_checks"]);
    let token = &out["token"];
    let (access, refresh1) = (s(&token["access_token"]), s(&token["refresh_token"]).to_string());

    let u = p.run(&c, "userinfo", &["--token", access]).await;
    assert_eq!(u["status"], 200, "{u}");
    assert_eq!((&u["body"]["sub"], &u["body"]["email"]), (&json!(user), &json!("x@example.org")), "{u}");
    assert!(s(&u["cache_control"]).contains("no-store"), "{u}");

    // Refresh rotates; replaying the old refresh token kills the whole family.
    let r = p.run(&c, "refresh", &["--refresh-token", refresh1.as_str()]).await;
    let refresh2 = s(&r["token"]["refresh_token"]).to_string();
    assert_ne!(refresh1, refresh2, "the refresh token rotates: {r}");
    assert_eq!(r["access_claims"]["sub"], json!(user), "{r}");
    refresh_fails(&p, &c, &refresh1, "a used refresh token").await;
    refresh_fails(&p, &c, &refresh2, "the family of a replayed refresh token is revoked").await;

    // Consent was remembered; prompt=consent asks again; a refusal reaches the client.
    let out = p.run(&c, "code", &login).await;
    assert_eq!(out["pages"], json!(["login"]), "remembered consent: {out}");
    assert_eq!(out["id_claims"]["sub"], json!(user), "{out}");
    let out = p.run(&c, "code", &cat(&login, &["--prompt", "consent"])).await;
    assert_eq!(out["pages"], json!(["login", "consent"]), "prompt=consent shows the consent page: {out}");
    let out = p.run(&c, "code", &cat(&login, &["--prompt", "consent", "--decision", "deny"])).await;
    assert_eq!(out["redirect_query"]["error"], "access_denied", "{out}");
    assert!(out.get("token").is_none() && out["redirect_query"].get("code").is_none(), "{out}");
}

/// Issue 12: a passkey registered in Chromium (DevTools virtual authenticator) through the API,
/// then the sign-in page's "Sign in with a passkey" button, the consent page, and the code
/// redeemed at `/token` by authlib.
#[tokio::test]
async fn passkey_sign_in_through_the_browser_page() {
    let p = Provider::start().await;
    let (name, password) = (format!("pk-user-{}", random_hex(4)), format!("pw-{}", random_hex(8)));
    let user = p.user(&name, &password).await;
    let port = free_ports(1)[0];
    let c = p
        .client(json!({"name": "web", "confidential": true, "grant_types": ["authorization_code"],
                       "redirect_uris": [format!("http://127.0.0.1:{port}/cb")],
                       "allowed_scopes": ["openid", "profile"], "require_pkce": true}))
        .await;
    let port = port.to_string();
    let args = [
        "--scope",
        "openid profile",
        "--username",
        &name,
        "--password",
        &password,
        "--user-id",
        &user,
        "--redirect-port",
        &port,
    ];
    let out = p.run(&c, "passkey", &args).await;
    assert_eq!(out["registered"]["body"]["passkey"]["description"], "chromium", "{out}");
    assert_eq!(out["authenticator_credentials"], 1, "{out}");
    assert_eq!(out["pages"], json!(["login", "consent"]), "{out}");
    assert_eq!(out["id_claims"]["sub"], json!(user), "{out}");
    assert_eq!(out["access_claims"]["sub"], json!(user), "{out}");
    // The login was recorded: the authenticator's counter moved and the passkey was used.
    let url = format!("{}/v4/users/{user}/passkeys", p.cluster.api(0));
    let listed = p.cluster.http.get(&url, Some(p.admin.as_str())).await.expect("list passkeys");
    let passkey = &listed.json["passkeys"][0];
    assert!(passkey["last_used_at"].is_string(), "{}", listed.json);
    assert_eq!(passkey["sign_count"], out["sign_count"][0], "{} vs {out}", listed.json);
}

#[tokio::test]
async fn authlib_device_flow() {
    let p = Provider::start().await;
    let (name, password) = (format!("tv-user-{}", random_hex(4)), format!("pw-{}", random_hex(8)));
    let user = p.user(&name, &password).await;
    let c = p
        .client(json!({"name": "tv", "confidential": false, "grant_types": [DEVICE_GRANT],
                       "allowed_scopes": ["openid", "profile"]}))
        .await;

    let args: [&str; 6] = ["--scope", "openid profile", "--username", name.as_str(), "--password", password.as_str()];
    let out = p.run(&c, "device", &args).await;
    let da = &out["device_authorization"];
    assert_eq!(out["user_code_ok"], true, "user code alphabet: {da}");
    assert_eq!(da["verification_uri"], json!(format!("{}/device", p.issuer)), "{da}");
    assert!(da["expires_in"].as_u64().is_some_and(|e| e > 0) && da["interval"].as_u64().is_some(), "{da}");
    let polls = out["poll_errors"].as_array().expect("poll_errors");
    assert_eq!(polls.first(), Some(&json!("authorization_pending")), "{out}");
    assert!(
        polls.iter().all(|e| *e == "authorization_pending" || *e == "slow_down"),
        "only pending / slow_down before the tokens: {out}"
    );
    let pages = out["pages"].as_array().expect("pages");
    assert!(pages.contains(&json!("login")) && pages.last() == Some(&json!("consent")), "{out}");
    assert_eq!((&out["id_claims"]["sub"], &out["id_claims"]["aud"]), (&json!(user), &json!(c.id)), "{out}");
    assert_eq!(out["access_claims"]["sub"], json!(user), "{out}");
    assert!(out["token"]["access_token"].is_string() && out["token"]["id_token"].is_string(), "{out}");
}

#[tokio::test]
async fn authlib_token_exchange() {
    let p = Provider::start().await;
    let c = p
        .client(json!({"name": "exch", "confidential": true, "grant_types": ["client_credentials", EXCHANGE_GRANT],
                       "allowed_scopes": ["platform:api"]}))
        .await;
    let out = p.run(&c, "client_credentials", &["--scope", "platform:api"]).await;
    let subject = s(&out["token"]["access_token"]).to_string();

    let x = p.run(&c, "exchange", &["--subject-token", subject.as_str(), "--audience", "platform-apis:identity"]).await;
    assert_eq!(x["access_claims"]["aud"], json!(["platform-apis:identity"]), "{x}");
    assert_eq!(x["aud_matches_request"], true, "{x}");
    let exchanged = s(&x["token"]["access_token"]).to_string();
    let i = p.run(&c, "introspect", &["--token", exchanged.as_str()]).await;
    assert_eq!(i["body"]["active"], true, "the exchanged token is live: {i}");
    assert_eq!(i["body"]["aud"], json!(["platform-apis:identity"]), "{i}");

    let e = p
        .run(
            &c,
            "exchange",
            &["--subject-token", subject.as_str(), "--audience", "platform-apis:nonexistent", "--expect-error"],
        )
        .await;
    assert_eq!((&e["error"], &e["http_status"]), (&json!("invalid_target"), &json!(400)), "{e}");
}
