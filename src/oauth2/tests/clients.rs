//! The client registry (`/v4/oauth2/{domain_id}/clients`) through the real router: secrets
//! shown once and stored as keyed hashes, field validation naming the field, PATCH
//! semantics, secret rotation, deletion and paging.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use super::errors::{assert_error, form, send, CB, D};
use crate::state::oauth2::{keys, Client};
use crate::state::{cf, Reader};
use crate::testkit::{Reply, TestNode};

fn clients() -> String {
    format!("/v4/oauth2/{D}/clients")
}

fn base() -> Value {
    json!({"name": "App", "confidential": true, "grant_types": ["authorization_code", "refresh_token", "client_credentials"],
           "redirect_uris": [CB], "allowed_scopes": ["openid", "profile"]})
}

fn with(fields: Value) -> Value {
    let mut body = base();
    for (k, v) in fields.as_object().unwrap() {
        if v.is_null() {
            body.as_object_mut().unwrap().remove(k);
        } else {
            body[k] = v.clone();
        }
    }
    json!({ "oauth2_client": body })
}

async fn create(t: &TestNode, fields: Value) -> Reply {
    t.admin(Method::POST, &clients(), Some(with(fields))).await
}

fn stored(t: &TestNode, id: &str) -> Option<Client> {
    t.node.engine.read().get_t::<Client>(cf::OAUTH2, &keys::client(D, id)).unwrap()
}

async fn client_credentials(t: &TestNode, id: &str, secret: &str) -> Reply {
    let body = form(&[("grant_type", "client_credentials"), ("client_id", id), ("client_secret", secret)]);
    send(t, Method::POST, &format!("/v4/oauth2/{D}/token"), &[], Some(&body)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_are_shown_once_and_stored_as_keyed_hashes() {
    let t = TestNode::start().await;
    let r = create(&t, json!({})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let id = r.body["oauth2_client"]["client_id"].as_str().unwrap().to_string();
    let secret = r.body["client_secret"].as_str().unwrap().to_string();
    assert!(secret.len() >= 32, "{secret}");
    assert!(r.body["oauth2_client"].get("client_secret").is_none());
    assert!(r.body["oauth2_client"].get("secret_hash").is_none());

    let record = stored(&t, &id).unwrap();
    let hash = record.secret_hash.clone().unwrap();
    assert_eq!(hash.len(), 64);
    assert!(hash.bytes().all(|b| b.is_ascii_hexdigit()), "{hash}");
    let json_form = serde_json::to_string(&record).unwrap();
    let postcard_form = postcard::to_allocvec(&record).unwrap();
    assert!(!json_form.contains(&secret), "{json_form}");
    assert!(!String::from_utf8_lossy(&postcard_form).contains(&secret));
    assert!(!format!("{record:?}").contains(&secret));
    let raw = t.node.engine.read().get_raw(cf::OAUTH2, &keys::client(D, &id)).unwrap().unwrap();
    assert!(!String::from_utf8_lossy(&raw).contains(&secret));

    // Never again: not by GET, list or PATCH.
    let one = format!("{}/{id}", clients());
    for r in [
        t.admin(Method::GET, &one, None).await,
        t.admin(Method::GET, &clients(), None).await,
        t.admin(Method::PATCH, &one, Some(json!({"oauth2_client": {"description": "d"}}))).await,
    ] {
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        assert!(
            !r.text.contains(&secret) && !r.text.contains("\"client_secret\"") && !r.text.contains(&hash),
            "{}",
            r.text
        );
    }
    // The secret works at /token.
    assert_eq!(client_credentials(&t, &id, &secret).await.status, StatusCode::OK);

    // A public client gets no secret and stores no hash.
    let r = create(&t, json!({"confidential": false, "grant_types": ["authorization_code"]})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert!(r.body.get("client_secret").is_none(), "{}", r.body);
    assert_eq!(r.body["oauth2_client"]["token_endpoint_auth_method"], json!("none"));
    let id = r.body["oauth2_client"]["client_id"].as_str().unwrap();
    assert_eq!(stored(&t, id).unwrap().secret_hash, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_fields_are_400_naming_the_field() {
    let t = TestNode::start().await;
    for (fields, field) in [
        (json!({"grant_types": ["password"]}), "grant_types"),
        (json!({"grant_types": []}), "grant_types"),
        (json!({"grant_types": null}), "grant_types"),
        (json!({"redirect_uris": ["http://app.example/cb"]}), "redirect_uris"),
        (json!({"redirect_uris": ["https://app.example/cb#frag"]}), "redirect_uris"),
        (json!({"redirect_uris": ["/relative"]}), "redirect_uris"),
        (json!({"redirect_uris": ["javascript:alert(1)"]}), "redirect_uris"),
        (json!({"redirect_uris": ["http://127.0.0.2.example/cb"]}), "redirect_uris"),
        (json!({"allowed_scopes": ["openid", "admin"]}), "allowed_scopes"),
        (json!({"confidential": false, "grant_types": ["client_credentials"]}), "grant_types"),
        (
            json!({"confidential": false, "grant_types": ["urn:ietf:params:oauth:grant-type:token-exchange"]}),
            "grant_types",
        ),
        (json!({"grant_types": ["authorization_code"], "redirect_uris": []}), "redirect_uris"),
        (json!({"grant_types": ["authorization_code"], "redirect_uris": null}), "redirect_uris"),
        (json!({"client_id": "mine"}), "client_id"),
        (json!({"domain_id": "elsewhere"}), "domain_id"),
        (json!({"token_endpoint_auth_method": "none"}), "token_endpoint_auth_method"),
        (json!({"claims_template": {"sub": "${user.id}"}}), "claims_template"),
        (json!({"claims_template": {"x": "${user.password}"}}), "claims_template"),
        (json!({"unknown_field": 1}), "unknown_field"),
    ] {
        let r = create(&t, fields.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{fields}: {}", r.body);
        let message = r.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(field), "{fields}: {message}");
    }
    // Plain http only to loopback hosts.
    for uri in ["http://127.0.0.1:8080/cb", "http://localhost/cb", "http://[::1]:9000/cb", "https://app.example/cb?x=1"]
    {
        let r = create(&t, json!({"redirect_uris": [uri]})).await;
        assert_eq!(r.status, StatusCode::CREATED, "{uri}: {}", r.body);
        assert_eq!(r.body["oauth2_client"]["redirect_uris"], json!([uri]));
    }
    // The same checks on PATCH.
    let r = create(&t, json!({})).await;
    let one = format!("{}/{}", clients(), r.body["oauth2_client"]["client_id"].as_str().unwrap());
    for (fields, field) in [
        (json!({"redirect_uris": ["http://app.example/cb"]}), "redirect_uris"),
        (json!({"grant_types": []}), "grant_types"),
        (json!({"allowed_scopes": ["nope"]}), "allowed_scopes"),
        (json!({"redirect_uris": []}), "redirect_uris"),
        (json!({"bogus": true}), "bogus"),
    ] {
        let r = t.admin(Method::PATCH, &one, Some(json!({ "oauth2_client": fields }))).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{fields}: {}", r.body);
        assert!(r.body["error"]["message"].as_str().unwrap().contains(field), "{}", r.body);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_keeps_absent_fields_null_clears_description_confidential_is_fixed() {
    let t = TestNode::start().await;
    let r = create(&t, json!({"description": "first", "provider_id": "idp-1", "pre_authorized": true})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let created = r.body["oauth2_client"].clone();
    let id = created["client_id"].as_str().unwrap().to_string();
    let one = format!("{}/{id}", clients());

    let r = t.admin(Method::PATCH, &one, Some(json!({"oauth2_client": {"name": "Renamed"}}))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let after = &r.body["oauth2_client"];
    for (k, v) in created.as_object().unwrap() {
        if k != "name" && k != "updated_at" {
            assert_eq!(&after[k], v, "{k} kept");
        }
    }
    assert_eq!(after["name"], json!("Renamed"));

    let r = t.admin(Method::PATCH, &one, Some(json!({"oauth2_client": {"description": null}}))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["oauth2_client"]["description"], Value::Null);
    assert_eq!(r.body["oauth2_client"]["provider_id"], json!("idp-1"), "only what is named changes");
    assert_eq!(stored(&t, &id).unwrap().description, None);

    for conf in [false, true] {
        let r = t.admin(Method::PATCH, &one, Some(json!({"oauth2_client": {"confidential": conf}}))).await;
        if conf {
            assert_eq!(r.status, StatusCode::OK, "the same value is no change: {}", r.body);
        } else {
            assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
            assert!(r.body["error"]["message"].as_str().unwrap().contains("confidential"), "{}", r.body);
        }
    }
    assert!(stored(&t, &id).unwrap().confidential);
    // The client id in the body must be the path's.
    let r = t.admin(Method::PATCH, &one, Some(json!({"oauth2_client": {"client_id": "other"}}))).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = t.admin(Method::PATCH, &format!("{}/no-such", clients()), Some(json!({"oauth2_client": {}}))).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotate_secret_replaces_the_old_one_at_once() {
    let t = TestNode::start().await;
    let r = create(&t, json!({})).await;
    let id = r.body["oauth2_client"]["client_id"].as_str().unwrap().to_string();
    let old = r.body["client_secret"].as_str().unwrap().to_string();
    let old_hash = stored(&t, &id).unwrap().secret_hash;
    assert_eq!(client_credentials(&t, &id, &old).await.status, StatusCode::OK);

    let r = t.admin(Method::POST, &format!("{}/{id}/rotate-secret", clients()), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let members: Vec<&String> = r.body.as_object().unwrap().keys().collect();
    assert_eq!(members, vec!["client_secret"]);
    let new = r.body["client_secret"].as_str().unwrap().to_string();
    assert_ne!(new, old);
    assert_ne!(stored(&t, &id).unwrap().secret_hash, old_hash);
    let r = client_credentials(&t, &id, &old).await;
    assert_error(&r, StatusCode::UNAUTHORIZED, "invalid_client");
    assert_eq!(client_credentials(&t, &id, &new).await.status, StatusCode::OK);

    // A public client has no secret to rotate; an unknown client is 404.
    let r = create(&t, json!({"confidential": false, "grant_types": ["authorization_code"]})).await;
    let public = r.body["oauth2_client"]["client_id"].as_str().unwrap();
    let r = t.admin(Method::POST, &format!("{}/{public}/rotate-secret", clients()), None).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    let r = t.admin(Method::POST, &format!("{}/no-such/rotate-secret", clients()), None).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_is_204_then_404_and_its_refresh_tokens_stop_working() {
    let t = TestNode::start().await;
    let alice = t.create("/v3/users", "user", json!({"name": "alice", "domain_id": D, "password": "pw-alice-1"})).await;
    let r = create(&t, json!({})).await;
    let id = r.body["oauth2_client"]["client_id"].as_str().unwrap().to_string();
    let secret = r.body["client_secret"].as_str().unwrap().to_string();
    // A refresh family of the client (a redemption, as /authorize and /token make it).
    let code = crate::oauth2::secrets::new_secret();
    let hash = crate::oauth2::secrets::keyed_hash(&t.node, crate::oauth2::secrets::CODE, &code).unwrap();
    let record = crate::state::oauth2::AuthCode {
        domain_id: D.into(),
        client_id: id.clone(),
        user_id: alice,
        redirect_uri: CB.into(),
        scopes: vec!["openid".into()],
        code_challenge: None,
        nonce: None,
        auth_time: crate::clock::now_secs(),
        expires_at: crate::clock::now_secs() + 60,
        redeemed: None,
    };
    let cmd = crate::state::oauth2::OAuth2Command::IssueCode { hash, code: record, consent: None };
    t.node.propose(crate::state::Command::OAuth2(cmd)).await.unwrap();
    let token = format!("/v4/oauth2/{D}/token");
    let body = form(&[
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("redirect_uri", CB),
        ("client_id", &id),
        ("client_secret", &secret),
    ]);
    let r = send(&t, Method::POST, &token, &[], Some(&body)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let rt = r.body["refresh_token"].as_str().unwrap().to_string();
    let refresh = |rt: String| {
        let body = form(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", &rt),
            ("client_id", &id),
            ("client_secret", &secret),
        ]);
        let t = &t;
        let token = token.clone();
        async move { send(t, Method::POST, &token, &[], Some(&body)).await }
    };
    let r = refresh(rt).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let rt = r.body["refresh_token"].as_str().unwrap().to_string();

    let one = format!("{}/{id}", clients());
    assert_eq!(t.admin(Method::DELETE, &one, None).await.status, StatusCode::NO_CONTENT);
    assert_eq!(t.admin(Method::GET, &one, None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(t.admin(Method::DELETE, &one, None).await.status, StatusCode::NOT_FOUND);
    assert!(stored(&t, &id).is_none());
    let r = refresh(rt).await;
    assert_error(&r, StatusCode::UNAUTHORIZED, "invalid_client");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_pages_with_limit_and_marker() {
    let t = TestNode::start().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let r = create(&t, json!({"name": format!("c{i}")})).await;
        ids.push(r.body["oauth2_client"]["client_id"].as_str().unwrap().to_string());
    }
    ids.sort();
    let ids_of = |r: &Reply| -> Vec<String> {
        r.body["oauth2_clients"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap().to_string()).collect()
    };
    let r = t.admin(Method::GET, &clients(), None).await;
    assert_eq!(ids_of(&r), ids, "in id order");
    assert_eq!(r.body["links"]["next"], Value::Null);

    let mut seen = Vec::new();
    let mut url = format!("{}?limit=2", clients());
    loop {
        let r = t.admin(Method::GET, &url, None).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        let page = ids_of(&r);
        assert!(page.len() <= 2);
        seen.extend(page);
        match r.body["links"]["next"].as_str() {
            Some(next) => url = next.trim_start_matches(&t.node.cfg.public_base()).to_string(),
            None => break,
        }
    }
    assert_eq!(seen, ids);
    let r = t.admin(Method::GET, &format!("{}?marker={}", clients(), ids[2]), None).await;
    assert_eq!(ids_of(&r), ids[3..].to_vec());
    for bad in ["?limit=0", "?limit=x", "?marker=no-such"] {
        let r = t.admin(Method::GET, &format!("{}{bad}", clients()), None).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad}: {}", r.body);
    }
    // An unknown domain's registry is 404.
    let r = t.admin(Method::GET, "/v4/oauth2/no-such-domain/clients", None).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}
