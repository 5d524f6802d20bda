//! `/v4/api-keys` through the real router, and what a use of a key checks.

use std::net::IpAddr;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use super::auth::{authenticate, report};
use crate::state::api_keys::{keys, ApiKey};
use crate::state::keys::ns;
use crate::state::{cf, Reader};
use crate::testkit::{Reply, TestNode};

const PW: &str = "key manager pw 1";

fn later() -> String {
    crate::token::render::iso_seconds(crate::clock::now_secs() + 86_400)
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

struct World {
    t: TestNode,
    d: String,
    other: String,
    manager: String,
}

impl World {
    async fn new() -> World {
        let t = TestNode::start().await;
        let d = t.create("/v3/domains", "domain", json!({"name": "acme"})).await;
        let other = t.create("/v3/domains", "domain", json!({"name": "other"})).await;
        let u = t.create("/v3/users", "user", json!({"name": "km", "domain_id": d, "password": PW})).await;
        let manager_role = t.node.engine.read().id_by_name(ns::ROLE_NAME, "", "manager").unwrap().unwrap();
        let r = t.admin(Method::PUT, &format!("/v3/domains/{d}/users/{u}/roles/{manager_role}"), None).await;
        assert_eq!(r.status, StatusCode::NO_CONTENT);
        let manager = t.token_for_id(&u, PW, json!({"domain": {"id": d}})).await;
        World { t, d, other, manager }
    }

    async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Reply {
        self.t.call(method, path, Some(&self.manager), body).await
    }

    async fn create(&self, extra: Value) -> (String, String) {
        let mut body = json!({"domain_id": self.d, "provider_id": "okta-scim", "expires_at": later()});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let r = self.call(Method::POST, "/v4/api-keys", Some(json!({ "api_key": body }))).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        (r.body["api_key"]["client_id"].as_str().unwrap().into(), r.body["token"].as_str().unwrap().into())
    }

    fn stored(&self, id: &str) -> ApiKey {
        self.t.node.engine.read().get_t(cf::API_KEYS, &keys::record(id)).unwrap().unwrap()
    }
}

#[tokio::test]
async fn create_show_list_update_revoke_and_the_secret_shown_once() {
    let w = World::new().await;
    let (id, token) = w.create(json!({"description": "Okta", "allowed_ips": ["10.0.0.0/8"]})).await;
    assert!(token.starts_with("kscim_"));
    let k = w.stored(&id);
    assert!(!k.secret_hash.contains(&token[6..49]), "only a keyed hash is stored");
    let shown = w.call(Method::GET, &format!("/v4/api-keys/{id}?domain_id={}", w.d), None).await;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.body);
    assert_eq!(shown.body["api_key"]["allowed_ips"], json!(["10.0.0.0/8"]));
    assert!(!shown.text.contains(&token[6..49]) && !shown.text.contains("secret_hash"));
    // Another domain's key is not found, whoever asks with the wrong domain.
    let r = w.t.admin(Method::GET, &format!("/v4/api-keys/{id}?domain_id={}", w.other), None).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = w.call(Method::GET, &format!("/v4/api-keys/{id}"), None).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "domain_id is required");

    w.create(json!({"provider_id": "azure-scim"})).await;
    let list = w.call(Method::GET, &format!("/v4/api-keys?domain_id={}", w.d), None).await;
    assert_eq!(list.body["api_keys"].as_array().unwrap().len(), 2, "{}", list.body);
    let list = w.call(Method::GET, &format!("/v4/api-keys?domain_id={}&provider_id=okta-scim", w.d), None).await;
    assert_eq!(list.body["api_keys"].as_array().unwrap().len(), 1);
    let page = w.call(Method::GET, &format!("/v4/api-keys?domain_id={}&limit=1", w.d), None).await;
    assert_eq!(page.body["api_keys"].as_array().unwrap().len(), 1);
    assert!(page.body["links"]["next"].as_str().unwrap().contains("marker="));

    // PUT: absent unchanged, null cleared.
    let path = format!("/v4/api-keys/{id}?domain_id={}", w.d);
    let r = w.call(Method::PUT, &path, Some(json!({"api_key": {"allowed_ips": null}}))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.body["api_key"].get("allowed_ips").is_none());
    assert_eq!(r.body["api_key"]["description"], json!("Okta"));
    let r = w.call(Method::PUT, &path, Some(json!({"api_key": {"allowed_ips": ["not-an-ip"]}}))).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);

    let r = w.call(Method::POST, &format!("/v4/api-keys/{id}/revoke?domain_id={}", w.d), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["api_key"]["enabled"], json!(false));
    assert!(r.body["api_key"]["revoked_at"].is_string() && r.body["api_key"]["revoked_by"].is_string());
    let r = w.call(Method::PUT, &path, Some(json!({"api_key": {"enabled": true}}))).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "a revoked key is never re-enabled");
    assert!(w.stored(&id).revoked_at.is_some(), "the record is kept");
}

#[tokio::test]
async fn bad_bodies_and_foreign_domains_are_refused() {
    let w = World::new().await;
    let past = crate::token::render::iso_seconds(crate::clock::now_secs() - 10);
    for (why, body) in [
        ("expiry in the past", json!({"domain_id": w.d, "provider_id": "p", "expires_at": past})),
        ("expiry not a time", json!({"domain_id": w.d, "provider_id": "p", "expires_at": "tomorrow"})),
        ("expiry missing", json!({"domain_id": w.d, "provider_id": "p"})),
        ("bad provider handle", json!({"domain_id": w.d, "provider_id": "a b", "expires_at": later()})),
        (
            "bad CIDR",
            json!({"domain_id": w.d, "provider_id": "p", "expires_at": later(), "allowed_ips": ["10.0.0.0/33"]}),
        ),
        ("unknown field", json!({"domain_id": w.d, "provider_id": "p", "expires_at": later(), "secret": "x"})),
    ] {
        assert_eq!(
            w.call(Method::POST, "/v4/api-keys", Some(json!({ "api_key": body }))).await.status,
            StatusCode::BAD_REQUEST,
            "{why}"
        );
    }
    let body = json!({"api_key": {"domain_id": w.other, "provider_id": "p", "expires_at": later()}});
    let r = w.call(Method::POST, "/v4/api-keys", Some(body)).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "a manager of another domain");
    let r = w.t.call(Method::GET, &format!("/v4/api-keys?domain_id={}", w.d), None, None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_use_is_refused_in_every_way_the_spec_names_and_last_used_is_batched() {
    let w = World::new().await;
    let (id, token) = w.create(json!({"allowed_ips": ["192.0.2.0/24"]})).await;
    let bearer = format!("Bearer {token}");
    let node = &w.t.node;
    let ok = authenticate(node, &node.api_key_usage, Some(&bearer), ip("192.0.2.7")).unwrap();
    assert_eq!(ok.client_id, id);
    let refused =
        |header: &str, from: &str| authenticate(node, &node.api_key_usage, Some(header), ip(from)).unwrap_err().status;
    assert_eq!(refused(&bearer, "198.51.100.1"), StatusCode::UNAUTHORIZED, "outside allowed_ips");
    let mut wrong_check = token.clone();
    wrong_check.pop();
    wrong_check.push(if token.ends_with('0') { '1' } else { '0' });
    assert_eq!(refused(&format!("Bearer {wrong_check}"), "192.0.2.7"), StatusCode::UNAUTHORIZED, "checksum");
    let unknown = super::secret::bearer(&super::secret::new_secret());
    assert_eq!(refused(&format!("Bearer {unknown}"), "192.0.2.7"), StatusCode::UNAUTHORIZED, "unknown");
    assert_eq!(refused(&token, "192.0.2.7"), StatusCode::UNAUTHORIZED, "no Bearer prefix");
    assert!(authenticate(node, &node.api_key_usage, None, ip("192.0.2.7")).is_err());

    // last_used_at: nothing written per use; one report carries it.
    assert!(w.stored(&id).last_used_at.is_none());
    assert_eq!(report(node, &node.api_key_usage).await.unwrap(), 1);
    assert!(w.stored(&id).last_used_at.is_some());
    assert_eq!(report(node, &node.api_key_usage).await.unwrap(), 0);

    // Disabled, then revoked: refused.
    let path = format!("/v4/api-keys/{id}?domain_id={}", w.d);
    w.call(Method::PUT, &path, Some(json!({"api_key": {"enabled": false}}))).await;
    assert_eq!(refused(&bearer, "192.0.2.7"), StatusCode::UNAUTHORIZED, "disabled");
    w.call(Method::PUT, &path, Some(json!({"api_key": {"enabled": true}}))).await;
    assert!(authenticate(node, &node.api_key_usage, Some(&bearer), ip("192.0.2.7")).is_ok());
    w.call(Method::POST, &format!("/v4/api-keys/{id}/revoke?domain_id={}", w.d), None).await;
    assert_eq!(refused(&bearer, "192.0.2.7"), StatusCode::UNAUTHORIZED, "revoked");
    // Expired.
    let (id2, token2) = w.create(json!({})).await;
    let mut k = w.stored(&id2);
    k.expires_at = crate::clock::now_secs() - 1;
    let cmd = crate::state::api_keys::ApiKeyCommand::Create(Box::new(ApiKey {
        client_id: "expired".into(),
        secret_hash: "0".repeat(64),
        ..k
    }));
    node.propose(crate::state::Command::ApiKeys(cmd)).await.unwrap();
    assert!(authenticate(node, &node.api_key_usage, Some(&format!("Bearer {token2}")), ip("192.0.2.7")).is_ok());
    let expired: ApiKey = w.t.node.engine.read().get_t(cf::API_KEYS, &keys::record("expired")).unwrap().unwrap();
    assert!(expired.expires_at < crate::clock::now_secs());
}

#[tokio::test]
async fn simulate_access_shows_the_mapped_grant_without_the_secret() {
    let w = World::new().await;
    let (id, _) = w.create(json!({})).await;
    let r =
        w.call(Method::POST, "/v4/api-keys/simulate-access", Some(json!({"client_id": id, "domain_id": w.d}))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!((r.body["matched"].clone(), r.body["roles"].clone()), (json!(false), json!([])));
    assert!(r.body.get("scope").is_none() && r.body["reason"].is_string());

    let manager = w.t.node.engine.read().id_by_name(ns::ROLE_NAME, "", "manager").unwrap().unwrap();
    let rule = json!({"name": "scim", "match": {"all_of": [{"type": "equals", "claim": "provider_id", "value": "okta-scim"}]},
        "identity": {"user_name": "scim-${claims.client_id}"},
        "authorizations": [{"type": "domain", "domain_id": w.d, "roles": [{"id": manager}]}]});
    let body = json!({"mapping": {"domain_id": w.d, "provider_id": "okta-scim",
                                  "source": {"type": "federation", "idp_id": "okta"}, "rules": [rule]}});
    let r = w.t.admin(Method::POST, "/v4/mappings", Some(body)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let r =
        w.call(Method::POST, "/v4/api-keys/simulate-access", Some(json!({"client_id": id, "domain_id": w.d}))).await;
    assert_eq!(r.body["matched"], json!(true), "{}", r.body);
    assert_eq!(r.body["roles"], json!(["manager"]));
    assert_eq!(r.body["scope"], json!({"type": "domain", "domain_id": w.d}));
    let r = w
        .call(Method::POST, "/v4/api-keys/simulate-access", Some(json!({"client_id": id, "domain_id": w.other})))
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r =
        w.t.admin(Method::POST, "/v4/api-keys/simulate-access", Some(json!({"client_id": id, "domain_id": w.other})))
            .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn revoked_keys_tombstones_are_reclaimed_after_the_retention_by_the_leader() {
    let w = World::new().await;
    let (revoked, token) = w.create(json!({})).await;
    let (kept, _) = w.create(json!({})).await;
    let r = w.call(Method::POST, &format!("/v4/api-keys/{revoked}/revoke?domain_id={}", w.d), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let now = crate::clock::now_secs();
    let tick = |at: i64| crate::jobs::tick(&w.t.node, crate::jobs::Job::ApiKeyReclaim, at);
    assert_eq!(tick(now + 29 * 86_400).await.unwrap().unwrap(), 0, "the tombstone stays within the retention");
    assert!(w.stored(&revoked).revoked_at.is_some());
    assert_eq!(tick(now + 31 * 86_400).await.unwrap().unwrap(), 1);
    let view = w.t.node.engine.read();
    assert!(view.get_t::<ApiKey>(cf::API_KEYS, &keys::record(&revoked)).unwrap().is_none());
    assert_eq!(view.scan_raw(cf::API_KEYS, b"h/").unwrap().len(), 1, "its secret-hash entry went with it");
    drop(view);
    assert!(
        authenticate(&w.t.node, &w.t.node.api_key_usage, Some(&format!("Bearer {token}")), ip("192.0.2.1")).is_err()
    );
    assert_eq!(w.stored(&kept).client_id, kept);
}
