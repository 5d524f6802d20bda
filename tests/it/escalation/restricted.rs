//! Issue 50, finding 1: a restricted token must not reach a token, secret or credential wider
//! than its restriction.
//!
//! Against a real node in both policy modes: a ruleset of domain D, fed by an OIDC provider
//! whose key set a loopback server of this test serves, logs a workload in as the local user U
//! under a restriction to `reader` on project P. U also holds `member` on P and an EC2
//! credential there (the cloud admin made it; the test keeps its secret). With the restricted
//! token every way to a wider token is tried: reading the EC2 secret or any credential blob
//! (which would sign an `/v3/ec2tokens` request for every role U holds), creating credentials,
//! application credentials, trusts, passkeys or API keys, authorizing an OAuth1 request token,
//! re-scoping, loosening its own restriction or ruleset, exchanging it at the OAuth2 token
//! endpoint. Each is refused and writes nothing; a renewal through the token method stays
//! restricted. U's own password login, U's EC2 credential (signed by botocore) and the admin's
//! login still work.

use reqwest::{Method as M, StatusCode};
use serde_json::{json, Value};

use super::mapping::{now, serve_jwks, Key, CLIENT_ID};
use super::{start, Admin, Api};
use crate::support::Resp;

const ISSUER: &str = "https://idp.restricted.test";
const PASSWORD: &str = "u-pw-restricted-1";

fn role_names(token: &Value) -> Vec<String> {
    let mut names: Vec<String> = token["token"]["roles"]
        .as_array()
        .map_or(vec![], |a| a.iter().filter_map(|r| r["name"].as_str().map(str::to_string)).collect());
    names.sort();
    names
}

#[track_caller]
fn forbidden(r: &Resp, what: &str) {
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{what}: {}", r.text);
    assert!(r.json["error"]["message"].is_string(), "{what}: error body without a message: {}", r.text);
}

/// The workload's login: a JWT of the loopback issuer for `robot@corp.example`.
async fn login(api: &Api<'_>, key: &Key, idp: &str) -> (String, Value) {
    let n = now();
    let claims = json!({"iss": ISSUER, "aud": CLIENT_ID, "sub": "robot", "email": "robot@corp.example",
                        "exp": n + 300, "iat": n});
    let url = format!("{}/v4/federation/identity_providers/{idp}/jwt", api.base);
    let bearer = format!("Bearer {}", key.sign(&claims));
    let r = api.http.request(M::POST, &url, None, &[("authorization", &bearer)], None).await.expect("login");
    assert_eq!(r.status, StatusCode::OK, "restricted login: {}", r.text);
    (r.header("X-Subject-Token").expect("X-Subject-Token"), r.json)
}

async fn restricted_tokens_stay_restricted(mode: &str) {
    let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
    let cluster = start(mode, &[("IDNODE_FEDERATION_ALLOW_PRIVATE_NETWORKS", "true")]).await;
    let (api, Admin { token: admin, pw: admin_pw, id: admin_id, project: admin_project }) =
        Api::with_admin(&cluster).await;
    let (member, reader) = (api.role("member", &admin).await, api.role("reader", &admin).await);

    let d = api.create("/v3/domains", "domain", json!({"name": format!("rst-{mode}")}), &admin).await;
    let p = api.create("/v3/projects", "project", json!({"name": "work", "domain_id": d}), &admin).await;
    let q = api.create("/v3/projects", "project", json!({"name": "other", "domain_id": d}), &admin).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let key = Key::new(dir.path(), "workload");
    let jwks = serve_jwks(key.jwk()).await;
    let idp = api
        .create(
            "/v4/federation/identity_providers",
            "identity_provider",
            json!({"domain_id": d, "provider_id": "corp", "issuer": ISSUER, "client_id": CLIENT_ID,
                   "jwks_uri": format!("http://{jwks}/jwks")}),
            &admin,
        )
        .await;
    let restriction = json!({"restriction": {"domain_id": d, "project_id": p, "allow_renew": true,
                                             "allow_rescope": false, "roles": [{"name": "reader"}]}});
    let restriction = api.ok(M::POST, "/v4/tokens/restrictions", &admin, Some(restriction)).await;
    let restriction = restriction["restriction"]["id"].as_str().expect("restriction id").to_string();
    let ruleset = json!({"mapping": {"mapping_id": format!("workloads-{mode}"), "domain_id": d, "provider_id": "corp",
        "source": {"type": "federation", "idp_id": idp},
        "rules": [{"name": "robot", "match": {"all_of": []},
                   "identity": {"identity_mode": "local", "user_name": "${claims.email}"},
                   "authorizations": [{"type": "project", "project_id": p, "project_domain_id": d,
                                       "roles": [{"id": reader}]}],
                   "token_restriction_id": restriction}]}});
    api.ok(M::POST, "/v4/mappings", &admin, Some(ruleset)).await;

    // The first login makes U; the cloud admin gives U `member`, a password, an EC2 credential
    // and a TOTP credential.
    let (_, first) = login(&api, &key, &idp).await;
    let u = first["token"]["user"]["id"].as_str().expect("user id").to_string();
    api.ok(M::PUT, &format!("/v3/projects/{p}/users/{u}/roles/{member}"), &admin, None).await;
    api.ok(M::PATCH, &format!("/v3/users/{u}"), &admin, Some(json!({"user": {"password": PASSWORD}}))).await;
    let ec2 =
        api.ok(M::POST, &format!("/v3/users/{u}/credentials/OS-EC2"), &admin, Some(json!({"tenant_id": p}))).await;
    let (access, secret) = (
        ec2["credential"]["access"].as_str().expect("access").to_string(),
        ec2["credential"]["secret"].as_str().expect("secret").to_string(),
    );
    let totp = json!({"credential": {"type": "totp", "user_id": u, "blob": "JBSWY3DPEHPK3PXP"}});
    let totp = api.ok(M::POST, "/v3/credentials", &admin, Some(totp)).await["credential"]["id"].clone();
    let totp = totp.as_str().expect("credential id").to_string();

    let (restricted, shown) = login(&api, &key, &idp).await;
    assert_eq!(role_names(&shown), ["reader"], "[{mode}] the restricted login: {shown}");
    assert_eq!(shown["token"]["project"]["id"], json!(p), "[{mode}] {shown}");

    let trust = json!({"trust": {"trustor_user_id": u, "trustee_user_id": admin_id, "project_id": p,
                                 "impersonation": false, "roles": [{"name": "reader"}]}});
    let rescope = json!({"auth": {"identity": {"methods": ["token"], "token": {"id": restricted}},
                                  "scope": {"project": {"id": q}}}});
    #[rustfmt::skip]
    let refusals: Vec<(M, String, Option<Value>)> = vec![
        // The secrets that would sign a request for an unrestricted token.
        (M::GET, format!("/v3/users/{u}/credentials/OS-EC2"), None),
        (M::GET, format!("/v3/users/{u}/credentials/OS-EC2/{access}"), None),
        (M::GET, format!("/v3/credentials?user_id={u}"), None),
        (M::GET, "/v3/credentials".into(), None),
        (M::GET, format!("/v3/credentials/{totp}"), None),
        // New credentials and delegations.
        (M::POST, format!("/v3/users/{u}/credentials/OS-EC2"), Some(json!({"tenant_id": p}))),
        (M::POST, "/v3/credentials".into(), Some(json!({"credential": {"type": "totp", "user_id": u, "blob": "x"}}))),
        (M::PATCH, format!("/v3/credentials/{totp}"), Some(json!({"credential": {"blob": "mine now"}}))),
        (M::POST, format!("/v3/users/{u}/application_credentials"), Some(json!({"application_credential": {"name": "escape"}}))),
        (M::POST, "/v3/OS-TRUST/trusts".into(), Some(trust)),
        (M::PUT, "/v3/OS-OAUTH1/authorize/no-such-request-token".into(), Some(json!({"roles": [{"name": "reader"}]}))),
        (M::POST, format!("/v4/users/{u}/passkeys/register_start"), None),
        (M::POST, "/v4/api-keys".into(), Some(json!({"api_key": {"domain_id": d, "provider_id": "escape", "expires_at": "2099-01-01T00:00:00Z"}}))),
        // Loosening what the next token carries.
        (M::PUT, format!("/v4/tokens/restrictions/{restriction}"), Some(json!({"restriction": {"allow_rescope": true}}))),
        (M::DELETE, format!("/v4/mappings/workloads-{mode}"), None),
        // Another project through the token method.
        (M::POST, "/v3/auth/tokens".into(), Some(rescope)),
    ];
    for (method, path, body) in refusals {
        let r = api.call(method.clone(), &path, &restricted, body).await;
        forbidden(&r, &format!("[{mode}] {method} {path} with the restricted token"));
    }

    // The OAuth2 token endpoint takes no Keystone token as the subject of an exchange.
    let client = json!({"oauth2_client": {"name": "exchanger", "confidential": true,
        "grant_types": ["urn:ietf:params:oauth:grant-type:token-exchange"]}});
    let client = api.ok(M::POST, &format!("/v4/oauth2/{d}/clients"), &admin, Some(client)).await;
    let (cid, csecret) = (
        client["oauth2_client"]["client_id"].as_str().expect("client id").to_string(),
        client["client_secret"].as_str().expect("client secret").to_string(),
    );
    let form = format!(
        "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange&subject_token={restricted}\
         &subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token&audience=identity"
    );
    let exchanged = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client")
        .post(format!("{}/v4/oauth2/{d}/token", api.base))
        .basic_auth(&cid, Some(&csecret))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .expect("token endpoint");
    let status = exchanged.status();
    let body: Value = exchanged.json().await.unwrap_or(Value::Null);
    assert_eq!((status, &body["error"]), (StatusCode::BAD_REQUEST, &json!("invalid_grant")), "[{mode}] {body}");

    // A renewal through the token method stays under the restriction.
    let renew = json!({"auth": {"identity": {"methods": ["token"], "token": {"id": restricted}}}});
    let renewed = api.ok(M::POST, "/v3/auth/tokens", "", Some(renew)).await;
    assert_eq!(role_names(&renewed), ["reader"], "[{mode}] renewed: {renewed}");

    // Nothing was written.
    let ec2s = api.get(&format!("/v3/users/{u}/credentials/OS-EC2"), &admin).await;
    assert_eq!(ec2s.json["credentials"].as_array().map(Vec::len), Some(1), "[{mode}] {}", ec2s.text);
    let creds = api.get(&format!("/v3/credentials?user_id={u}"), &admin).await;
    assert_eq!(creds.json["credentials"].as_array().map(Vec::len), Some(2), "[{mode}] {}", creds.text);
    let stored = creds.json["credentials"].as_array().into_iter().flatten().find(|c| c["id"] == json!(totp));
    assert_eq!(stored.map(|c| c["blob"].clone()), Some(json!("JBSWY3DPEHPK3PXP")), "[{mode}] {}", creds.text);
    let appcreds = api.get(&format!("/v3/users/{u}/application_credentials"), &admin).await;
    assert_eq!(appcreds.json["application_credentials"], json!([]), "[{mode}] {}", appcreds.text);
    let trusts = api.get(&format!("/v3/OS-TRUST/trusts?trustor_user_id={u}"), &admin).await;
    assert_eq!(trusts.json["trusts"], json!([]), "[{mode}] {}", trusts.text);
    let r = api.get(&format!("/v4/tokens/restrictions/{restriction}"), &admin).await;
    assert_eq!(r.json["restriction"]["allow_rescope"], json!(false), "[{mode}] {}", r.text);
    assert_eq!(api.get(&format!("/v4/mappings/workloads-{mode}"), &admin).await.status, StatusCode::OK);

    // The unrestricted ways in still work: U's password, U's EC2 credential, the admin's login.
    let own = api.token(&u, PASSWORD, json!({"project": {"id": p}})).await;
    let own = api.http.validate_token(&api.base, &admin, &own).await.expect("validate");
    assert_eq!(role_names(&own.json), ["member", "reader"], "[{mode}] U's password login: {}", own.text);
    api.token(&admin_id, &admin_pw, json!({"project": {"id": admin_project}})).await;
    match crate::catalog_credentials::boto_python() {
        Some(python) => {
            let signed = crate::catalog_credentials::sign(&python, &api.base, &access, &secret, "v4");
            let r = api.call(M::POST, "/v3/ec2tokens", "", Some(json!({"credentials": signed}))).await;
            assert_eq!(r.status, StatusCode::OK, "[{mode}] U's signed request: {}", r.text);
            assert_eq!(role_names(&r.json), ["member", "reader"], "[{mode}] {}", r.text);
        }
        None => eprintln!("SKIPPED the signed request of {mode}: no Python with botocore (scripts/install-test-deps)"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restricted_tokens_stay_restricted_in_keystone_mode() {
    restricted_tokens_stay_restricted("any").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restricted_tokens_stay_restricted_in_strict_mode() {
    restricted_tokens_stay_restricted("system").await;
}
