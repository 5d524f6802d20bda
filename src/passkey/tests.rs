//! Passkeys end to end through the router, with webauthn-authenticator-rs's software
//! authenticator playing the user's device: every refusal is a 401 that writes nothing.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};
use url::Url;
use webauthn_authenticator_rs::softtoken::SoftToken;
use webauthn_authenticator_rs::WebauthnAuthenticator;
use webauthn_rs::prelude::{CreationChallengeResponse, PublicKeyCredential, RequestChallengeResponse};

use crate::state::{cf, Reader};
use crate::testkit::cluster::TestCluster;
use crate::testkit::{Reply, TestNode};

const ORIGIN: &str = "https://id.example.com";
const SETTINGS: &[(&str, &str, &str)] =
    &[("passkey", "rp_id", "example.com"), ("passkey", "rp_origin", ORIGIN), ("auth", "rate_limit_per_second", "0")];

fn origin() -> Url {
    Url::parse(ORIGIN).unwrap()
}

/// A software authenticator (its state can be copied, to play a cloned one).
fn device() -> SoftToken {
    SoftToken::new(true).unwrap().0
}

fn clone_of(d: &SoftToken) -> SoftToken {
    SoftToken::from_cbor(&d.to_cbor().unwrap()).unwrap()
}

/// Everything the passkeys column family holds, to show a refusal wrote nothing.
fn stored(node: &crate::context::Core) -> Vec<(Vec<u8>, Vec<u8>)> {
    node.engine.read().scan_prefix(cf::PASSKEYS, b"", usize::MAX).unwrap()
}

struct Fixture {
    t: TestNode,
    user_id: String,
    token: String,
}

async fn fixture() -> Fixture {
    let t = TestNode::start_with(SETTINGS).await;
    let user_id =
        t.create("/v3/users", "user", json!({"name": "pia", "password": "pw-pia-1", "domain_id": "default"})).await;
    let token = t.token_for_id(&user_id, "pw-pia-1", Value::Null).await;
    Fixture { t, user_id, token }
}

async fn register(t: &TestNode, token: &str, user_id: &str, d: &mut SoftToken) -> Reply {
    let path = format!("/v4/users/{user_id}/passkeys/register_start");
    let r = t.call(Method::POST, &path, Some(token), Some(json!({"passkey": {"description": "laptop"}}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let ccr: CreationChallengeResponse = serde_json::from_value(json!({"publicKey": r.body["publicKey"]})).unwrap();
    let reg = d.do_registration(origin(), ccr).unwrap();
    let path = format!("/v4/users/{user_id}/passkeys/register_finish");
    t.call(Method::POST, &path, Some(token), Some(serde_json::to_value(&reg).unwrap())).await
}

async fn start_reply(t: &TestNode, user_id: &str) -> Reply {
    t.call(Method::POST, "/v4/auth/passkey/start", None, Some(json!({"passkey": {"user_id": user_id}}))).await
}

async fn start(t: &TestNode, user_id: &str) -> RequestChallengeResponse {
    let r = start_reply(t, user_id).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    serde_json::from_value(json!({"publicKey": r.body["publicKey"]})).unwrap()
}

/// The assertion in upstream's snake_case spelling (api-shapes §9).
fn snake(user_id: &str, c: &PublicKeyCredential) -> Value {
    let web = serde_json::to_value(c).unwrap();
    let r = &web["response"];
    json!({"user_id": user_id, "id": web["id"], "raw_id": web["rawId"], "type_": web["type"],
        "response": {"authenticator_data": r["authenticatorData"], "client_data_json": r["clientDataJSON"],
                     "signature": r["signature"], "user_handle": r["userHandle"]},
        "extensions": {}})
}

async fn finish(t: &TestNode, body: Value) -> Reply {
    t.call(Method::POST, "/v4/auth/passkey/finish", None, Some(body)).await
}

/// A refused finish: 401, and the state exactly as before.
async fn refused(t: &TestNode, body: Value, what: &str) {
    let before = stored(&t.node);
    let r = finish(t, body).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{what}: {}", r.body);
    assert_eq!(stored(&t.node), before, "{what}: a refusal writes nothing");
}

#[tokio::test]
async fn register_then_sign_in_in_either_spelling() {
    let f = fixture().await;
    let mut d = device();
    let r = register(&f.t, &f.token, &f.user_id, &mut d).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["passkey"]["description"], "laptop");
    let listed = f.t.call(Method::GET, &format!("/v4/users/{}/passkeys", f.user_id), Some(&f.token), None).await;
    assert_eq!(listed.body["passkeys"].as_array().map(Vec::len), Some(1), "{}", listed.body);

    // The browser's spelling (no user_id: the challenge names the user).
    let cred = d.do_authentication(origin(), start(&f.t, &f.user_id).await).unwrap();
    let r = finish(&f.t, serde_json::to_value(&cred).unwrap()).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let token = r.headers.get("x-subject-token").and_then(|v| v.to_str().ok()).unwrap().to_string();
    assert_eq!(r.body["token"]["user"]["id"], f.user_id.as_str());
    assert_eq!(r.body["token"]["methods"], json!(["passkey"]));
    assert!(r.body["token"].get("project").is_none(), "unscoped");
    // The token works: it validates, and it can be rescoped like any other.
    let v = f.t.admin(Method::GET, &format!("/v3/auth/tokens#{token}"), None).await;
    assert_eq!(v.status, StatusCode::OK, "{}", v.body);

    // Upstream's spelling.
    let cred = d.do_authentication(origin(), start(&f.t, &f.user_id).await).unwrap();
    let r = finish(&f.t, snake(&f.user_id, &cred)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let listed = f.t.call(Method::GET, &format!("/v4/users/{}/passkeys", f.user_id), Some(&f.token), None).await;
    assert_eq!(listed.body["passkeys"][0]["sign_count"], 2, "the counter is stored: {}", listed.body);
    assert!(listed.body["passkeys"][0]["last_used_at"].is_string());
}

#[tokio::test]
async fn wrong_origin_rp_id_replay_and_another_users_challenge_are_refused() {
    let f = fixture().await;
    let mut d = device();
    assert_eq!(register(&f.t, &f.token, &f.user_id, &mut d).await.status, StatusCode::CREATED);

    let elsewhere = Url::parse("https://id.example.com:8443").unwrap();
    let cred = d.do_authentication(elsewhere, start(&f.t, &f.user_id).await).unwrap();
    refused(&f.t, snake(&f.user_id, &cred), "wrong origin").await;

    let mut rcr = start(&f.t, &f.user_id).await;
    rcr.public_key.rp_id = "id.example.com".into();
    let cred = d.do_authentication(origin(), rcr).unwrap();
    refused(&f.t, snake(&f.user_id, &cred), "wrong rp id").await;

    let cred = d.do_authentication(origin(), start(&f.t, &f.user_id).await).unwrap();
    assert_eq!(finish(&f.t, snake(&f.user_id, &cred)).await.status, StatusCode::CREATED);
    refused(&f.t, snake(&f.user_id, &cred), "replayed challenge").await;

    // A challenge issued for another user, answered with this user's passkey.
    let other = f.t.create("/v3/users", "user", json!({"name": "oli", "domain_id": "default"})).await;
    let mut rcr = start(&f.t, &other).await;
    let real = start(&f.t, &f.user_id).await;
    rcr.public_key.allow_credentials = real.public_key.allow_credentials;
    let cred = d.do_authentication(origin(), rcr).unwrap();
    refused(&f.t, snake(&f.user_id, &cred), "another user's challenge").await;
    refused(&f.t, snake(&other, &cred), "a decoy challenge").await;
}

#[tokio::test]
async fn a_cloned_authenticator_a_removed_passkey_and_a_disabled_user_are_refused() {
    let f = fixture().await;
    let mut d = device();
    let r = register(&f.t, &f.token, &f.user_id, &mut d).await;
    let passkey_id = r.body["passkey"]["id"].as_str().unwrap().to_string();
    let mut clone = clone_of(&d);

    // The clone answers a challenge started after the original's login: webauthn-rs sees the
    // counter go back against the stored one.
    let cred = d.do_authentication(origin(), start(&f.t, &f.user_id).await).unwrap();
    assert_eq!(finish(&f.t, snake(&f.user_id, &cred)).await.status, StatusCode::CREATED);
    let cred = clone.do_authentication(origin(), start(&f.t, &f.user_id).await).unwrap();
    refused(&f.t, snake(&f.user_id, &cred), "counter regression").await;

    // Two ceremonies started together: the second finish carries a counter that was ahead
    // when its ceremony began; apply compares it with the one stored since.
    let (a, b) = (start(&f.t, &f.user_id).await, start(&f.t, &f.user_id).await);
    let mut clone = clone_of(&d);
    let cred = d.do_authentication(origin(), a).unwrap();
    assert_eq!(finish(&f.t, snake(&f.user_id, &cred)).await.status, StatusCode::CREATED);
    let cred = clone.do_authentication(origin(), b).unwrap();
    refused(&f.t, snake(&f.user_id, &cred), "counter regression against the stored counter").await;

    // A disabled user.
    let path = format!("/v3/users/{}", f.user_id);
    let cred = d.do_authentication(origin(), start(&f.t, &f.user_id).await).unwrap();
    assert_eq!(f.t.admin(Method::PATCH, &path, Some(json!({"user": {"enabled": false}}))).await.status, StatusCode::OK);
    refused(&f.t, snake(&f.user_id, &cred), "disabled user").await;
    assert_eq!(f.t.admin(Method::PATCH, &path, Some(json!({"user": {"enabled": true}}))).await.status, StatusCode::OK);

    // A removed passkey (the ceremony was started while it was registered).
    let cred = d.do_authentication(origin(), start(&f.t, &f.user_id).await).unwrap();
    let token = f.t.token_for_id(&f.user_id, "pw-pia-1", Value::Null).await;
    let del =
        f.t.call(Method::DELETE, &format!("/v4/users/{}/passkeys/{passkey_id}", f.user_id), Some(&token), None).await;
    assert_eq!(del.status, StatusCode::NO_CONTENT, "{}", del.body);
    refused(&f.t, snake(&f.user_id, &cred), "removed passkey").await;
}

#[tokio::test]
async fn an_unknown_user_gets_a_challenge_of_the_same_shape() {
    let f = fixture().await;
    let mut d = device();
    register(&f.t, &f.token, &f.user_id, &mut d).await;
    let (real, fake, fake_again) =
        (start_reply(&f.t, &f.user_id).await, start_reply(&f.t, "nobody").await, start_reply(&f.t, "nobody").await);
    assert_eq!(fake.status, StatusCode::CREATED);
    let shape = |v: &Value| -> Vec<String> {
        let mut keys: Vec<String> = v["public_key"].as_object().unwrap().keys().cloned().collect();
        keys.extend(v["publicKey"].as_object().unwrap().keys().map(|k| format!("web.{k}")));
        keys.extend(v["public_key"]["allow_credentials"][0].as_object().unwrap().keys().map(|k| format!("cred.{k}")));
        keys.sort();
        keys
    };
    assert_eq!(shape(&real.body), shape(&fake.body), "{} vs {}", real.body, fake.body);
    assert_eq!(
        real.body["public_key"]["challenge"].as_str().unwrap().len(),
        fake.body["public_key"]["challenge"].as_str().unwrap().len()
    );
    assert_eq!(
        fake.body["public_key"]["allow_credentials"], fake_again.body["public_key"]["allow_credentials"],
        "stable per user id"
    );
    assert_ne!(fake.body["public_key"]["challenge"], fake_again.body["public_key"]["challenge"]);
}

#[tokio::test]
async fn only_the_user_or_an_admin_manages_passkeys() {
    let f = fixture().await;
    let other =
        f.t.create("/v3/users", "user", json!({"name": "oli", "password": "pw-oli-1", "domain_id": "default"})).await;
    let oli = f.t.token_for_id(&other, "pw-oli-1", Value::Null).await;
    for (method, path) in [
        (Method::POST, format!("/v4/users/{}/passkeys/register_start", f.user_id)),
        (Method::GET, format!("/v4/users/{}/passkeys", f.user_id)),
        (Method::DELETE, format!("/v4/users/{}/passkeys/x", f.user_id)),
    ] {
        assert_eq!(f.t.call(method.clone(), &path, Some(&oli), None).await.status, StatusCode::FORBIDDEN, "{path}");
        assert_eq!(f.t.call(method.clone(), &path, None, None).await.status, StatusCode::UNAUTHORIZED, "{path}");
    }
    let admin = f.t.admin(Method::GET, &format!("/v4/users/{other}/passkeys"), None).await;
    assert_eq!((admin.status, admin.body["passkeys"].clone()), (StatusCode::OK, json!([])));
    let missing = f.t.admin(Method::DELETE, &format!("/v4/users/{other}/passkeys/nope"), None).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    // A registration answered with a mismatched origin is a 400 and stores nothing.
    let mut d = device();
    let path = format!("/v4/users/{}/passkeys/register_start", f.user_id);
    let r = f.t.call(Method::POST, &path, Some(&f.token), None).await;
    let ccr: CreationChallengeResponse = serde_json::from_value(json!({"publicKey": r.body["publicKey"]})).unwrap();
    let reg = d.do_registration(Url::parse("https://example.com").unwrap(), ccr).unwrap();
    let before = stored(&f.t.node);
    let path = format!("/v4/users/{}/passkeys/register_finish", f.user_id);
    let r = f.t.call(Method::POST, &path, Some(&f.token), Some(serde_json::to_value(&reg).unwrap())).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(stored(&f.t.node), before);
}

/// Another domain's admin registers no passkey on the bootstrap admin, in either admin mode:
/// neither a fresh ceremony nor one the admin started; the admin still registers its own,
/// and the other admin still registers one for an ordinary user when policy lets it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_passkey_for_a_privileged_user_but_from_a_cloud_admin_or_the_user() {
    for mode in ["any", "system"] {
        let mut settings = SETTINGS.to_vec();
        settings.push(("policy", "admin_scope", mode));
        let t = TestNode::start_with(&settings).await;
        let admin_id = t.node.engine.read().bootstrap_info().unwrap().unwrap().admin_user_id;
        let (_, da) = crate::credential::tests::domain_admin(&t, "d2").await;
        let before = stored(&t.node);

        let start_path = format!("/v4/users/{admin_id}/passkeys/register_start");
        let r = t.call(Method::POST, &start_path, Some(&da), None).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "[{mode}] {}", r.body);
        assert!(r.body["error"]["message"].is_string(), "[{mode}] {}", r.body);
        assert_eq!(stored(&t.node), before, "[{mode}] a refused start writes nothing");

        // With a ceremony the admin started in hand, the other admin cannot finish it.
        let mut d = device();
        let r = t.admin(Method::POST, &start_path, None).await;
        assert_eq!(r.status, StatusCode::CREATED, "[{mode}] {}", r.body);
        let ccr: CreationChallengeResponse = serde_json::from_value(json!({"publicKey": r.body["publicKey"]})).unwrap();
        let reg = serde_json::to_value(d.do_registration(origin(), ccr).unwrap()).unwrap();
        let finish_path = format!("/v4/users/{admin_id}/passkeys/register_finish");
        let with_challenge = stored(&t.node);
        let r = t.call(Method::POST, &finish_path, Some(&da), Some(reg.clone())).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "[{mode}] {}", r.body);
        assert_eq!(stored(&t.node), with_challenge, "[{mode}] a refused finish writes nothing");
        let listed = t.admin(Method::GET, &format!("/v4/users/{admin_id}/passkeys"), None).await;
        assert_eq!(listed.body["passkeys"], json!([]), "[{mode}] {}", listed.body);
        t.token_for_id(&admin_id, "secret", Value::Null).await;

        // The admin itself finishes its own ceremony.
        let r = t.admin(Method::POST, &finish_path, Some(reg)).await;
        assert_eq!(r.status, StatusCode::CREATED, "[{mode}] {}", r.body);
        // An ordinary user: policy decides (Keystone's mode lets any admin).
        let plain = t.create("/v3/users", "user", json!({"name": "pat", "domain_id": "default"})).await;
        let r = t.call(Method::POST, &format!("/v4/users/{plain}/passkeys/register_start"), Some(&da), None).await;
        let expected = if mode == "any" { StatusCode::CREATED } else { StatusCode::FORBIDDEN };
        assert_eq!(r.status, expected, "[{mode}] {}", r.body);
    }
}

/// Start on one node, finish on another: the ceremony travels through raft.
#[tokio::test]
async fn a_ceremony_started_on_one_node_finishes_on_another() {
    let c = TestCluster::start(3, SETTINGS).await;
    let admin = c.admin_token(0).await;
    let pia = json!({"name": "pia", "password": "pw-pia-1", "domain_id": "default"});
    let r = c.create(0, &admin, "/v3/users", "user", pia).await;
    let user_id = r["user"]["id"].as_str().unwrap().to_string();
    let mut d = device();
    let r = c.call(1, Method::POST, &format!("/v4/users/{user_id}/passkeys/register_start"), Some(&admin), None).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let ccr: CreationChallengeResponse = serde_json::from_value(json!({"publicKey": r.body["publicKey"]})).unwrap();
    let reg = serde_json::to_value(d.do_registration(origin(), ccr).unwrap()).unwrap();
    let r = c
        .call(2, Method::POST, &format!("/v4/users/{user_id}/passkeys/register_finish"), Some(&admin), Some(reg))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);

    for (from, to) in [(0, 2), (2, 1), (1, 0)] {
        let r = c
            .call(from, Method::POST, "/v4/auth/passkey/start", None, Some(json!({"passkey": {"user_id": user_id}})))
            .await;
        let rcr: RequestChallengeResponse = serde_json::from_value(json!({"publicKey": r.body["publicKey"]})).unwrap();
        let cred = d.do_authentication(origin(), rcr).unwrap();
        let r = c.call(to, Method::POST, "/v4/auth/passkey/finish", None, Some(snake(&user_id, &cred))).await;
        assert_eq!(r.status, StatusCode::CREATED, "started on {from}, finished on {to}: {}", r.body);
        // Replayed on the third node: refused there too, and nothing is written anywhere.
        c.wait_converged().await;
        let before: Vec<_> = (0..3).map(|i| stored(c.node(i))).collect();
        let third = 3 - from - to;
        let r = c.call(third, Method::POST, "/v4/auth/passkey/finish", None, Some(snake(&user_id, &cred))).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "replayed on {third}");
        c.wait_converged().await;
        let after: Vec<_> = (0..3).map(|i| stored(c.node(i))).collect();
        assert_eq!(before, after, "a replay on node {third} wrote nothing");
    }
    c.wait_converged().await;
    let states: Vec<_> = (0..3).map(|i| stored(c.node(i))).collect();
    assert!(states.windows(2).all(|w| w[0] == w[1]), "the replicas hold the same passkeys and ceremonies");
}

async fn rename(t: &TestNode, token: &str, user_id: &str, passkey_id: &str, body: Value) -> Reply {
    t.call(Method::PATCH, &format!("/v4/users/{user_id}/passkeys/{passkey_id}"), Some(token), Some(body)).await
}

#[tokio::test]
async fn a_rename_shows_in_the_list_and_bad_names_are_400() {
    let f = fixture().await;
    let mut d = device();
    let r = register(&f.t, &f.token, &f.user_id, &mut d).await;
    let id = r.body["passkey"]["id"].as_str().unwrap().to_string();

    let r = rename(&f.t, &f.token, &f.user_id, &id, json!({"passkey": {"description": "  Work laptop "}})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["passkey"]["description"], "Work laptop", "trimmed");
    let listed = f.t.call(Method::GET, &format!("/v4/users/{}/passkeys", f.user_id), Some(&f.token), None).await;
    assert_eq!(listed.body["passkeys"], json!([r.body["passkey"]]), "the list's view");

    let before = stored(&f.t.node);
    for bad in [
        json!({"passkey": {"description": "   "}}),
        json!({"passkey": {"description": "x".repeat(256)}}),
        json!({"passkey": {"description": null}}),
        json!({"passkey": {"description": 7}}),
        json!({"passkey": {}}),
        json!({"passkey": "laptop"}),
        json!({}),
        json!(["laptop"]),
    ] {
        let r = rename(&f.t, &f.token, &f.user_id, &id, bad.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad}: {}", r.body);
        assert_eq!(r.body["error"]["code"], 400, "{}", r.body);
        assert!(r.body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{}", r.body);
    }
    assert_eq!(stored(&f.t.node), before, "a refusal writes nothing");
    let r = rename(&f.t, &f.token, &f.user_id, &id, json!({"passkey": {"description": "é".repeat(255)}})).await;
    assert_eq!(r.status, StatusCode::OK, "255 characters: {}", r.body);

    // Another user's passkey is not found under this user; another user may not rename.
    let oli =
        f.t.create("/v3/users", "user", json!({"name": "oli", "password": "pw-oli-1", "domain_id": "default"})).await;
    let oli_token = f.t.token_for_id(&oli, "pw-oli-1", Value::Null).await;
    let theirs = register(&f.t, &oli_token, &oli, &mut device()).await;
    let theirs = theirs.body["passkey"]["id"].as_str().unwrap().to_string();
    let body = json!({"passkey": {"description": "mine now"}});
    assert_eq!(rename(&f.t, &f.token, &f.user_id, &theirs, body.clone()).await.status, StatusCode::NOT_FOUND);
    assert_eq!(rename(&f.t, &f.token, &f.user_id, "nope", body.clone()).await.status, StatusCode::NOT_FOUND);
    assert_eq!(rename(&f.t, &oli_token, &f.user_id, &id, body.clone()).await.status, StatusCode::FORBIDDEN);
    let r = f.t.admin(Method::PATCH, &format!("/v4/users/{oli}/passkeys/{theirs}"), Some(body)).await;
    assert_eq!((r.status, r.body["passkey"]["description"].clone()), (StatusCode::OK, json!("mine now")));
}

#[tokio::test]
async fn the_last_passkey_of_an_account_without_a_password_stays() {
    let f = fixture().await;
    // With a password, the last passkey goes.
    let r = register(&f.t, &f.token, &f.user_id, &mut device()).await;
    let path = format!("/v4/users/{}/passkeys/{}", f.user_id, r.body["passkey"]["id"].as_str().unwrap());
    let r = f.t.call(Method::DELETE, &path, Some(&f.token), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);

    // A passkey-only account (no password), with two passkeys an admin registered.
    let pk = f.t.create("/v3/users", "user", json!({"name": "pk-only", "domain_id": "default"})).await;
    let admin = f.t.token("admin", "secret", json!({"project": {"name": "admin", "domain": {"id": "default"}}})).await;
    let mut ids = Vec::new();
    for _ in 0..2 {
        let r = register(&f.t, &admin, &pk, &mut device()).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        ids.push(r.body["passkey"]["id"].as_str().unwrap().to_string());
    }
    let path = |id: &str| format!("/v4/users/{pk}/passkeys/{id}");
    assert_eq!(f.t.admin(Method::DELETE, &path(&ids[0]), None).await.status, StatusCode::NO_CONTENT);
    let before = stored(&f.t.node);
    let r = f.t.admin(Method::DELETE, &path(&ids[1]), None).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert_eq!(r.body["error"]["code"], 409);
    assert_eq!(r.body["error"]["message"], crate::state::passkeys::LAST_PASSKEY);
    assert_eq!(stored(&f.t.node), before, "a refusal writes nothing");
    // Once the user has a password, it goes.
    let r = f.t.admin(Method::PATCH, &format!("/v3/users/{pk}"), Some(json!({"user": {"password": "pw-pk-1"}}))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(f.t.admin(Method::DELETE, &path(&ids[1]), None).await.status, StatusCode::NO_CONTENT);
}

/// Two removals of a passkey-only account's two passkeys, sent at once to two members: apply
/// takes them in log order, so exactly one passes and the replicas agree.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_removals_on_two_members_leave_the_last_passkey() {
    let c = TestCluster::start(3, SETTINGS).await;
    let admin = c.admin_token(0).await;
    let r = c.create(0, &admin, "/v3/users", "user", json!({"name": "pk-only", "domain_id": "default"})).await;
    let user_id = r["user"]["id"].as_str().unwrap().to_string();
    let mut ids = Vec::new();
    for _ in 0..2 {
        let path = format!("/v4/users/{user_id}/passkeys/register_start");
        let r = c.call(0, Method::POST, &path, Some(&admin), None).await;
        let ccr: CreationChallengeResponse = serde_json::from_value(json!({"publicKey": r.body["publicKey"]})).unwrap();
        let reg = serde_json::to_value(device().do_registration(origin(), ccr).unwrap()).unwrap();
        let path = format!("/v4/users/{user_id}/passkeys/register_finish");
        let r = c.call(0, Method::POST, &path, Some(&admin), Some(reg)).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        ids.push(r.body["passkey"]["id"].as_str().unwrap().to_string());
    }
    let (a, b) =
        (format!("/v4/users/{user_id}/passkeys/{}", ids[0]), format!("/v4/users/{user_id}/passkeys/{}", ids[1]));
    let (ra, rb) = tokio::join!(
        c.call(1, Method::DELETE, &a, Some(&admin), None),
        c.call(2, Method::DELETE, &b, Some(&admin), None)
    );
    let mut statuses = [ra.status, rb.status];
    statuses.sort();
    assert_eq!(statuses, [StatusCode::NO_CONTENT, StatusCode::CONFLICT], "{} / {}", ra.body, rb.body);
    c.wait_converged().await;
    let states: Vec<_> = (0..3).map(|i| stored(c.node(i))).collect();
    assert!(states.windows(2).all(|w| w[0] == w[1]), "the replicas agree");
    let listed = c.call(0, Method::GET, &format!("/v4/users/{user_id}/passkeys"), Some(&admin), None).await;
    assert_eq!(listed.body["passkeys"].as_array().map(Vec::len), Some(1), "{}", listed.body);
}
