//! HTTP-level tests of signed-request tokens against an in-process node: the signed timestamp
//! is required and bounded both ways, and each signature buys one token.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use super::signer::{self, SignedRequest};
use crate::clock::now_micros;
use crate::state::Reader;
use crate::testkit::TestNode;

/// An EC2 credential of the admin on the admin project: (access, secret).
async fn ec2_credential(t: &TestNode) -> (String, String) {
    let info = t.node.engine.read().bootstrap_info().unwrap().unwrap();
    let path = format!("/v3/users/{}/credentials/OS-EC2", info.admin_user_id);
    let r = t.admin(Method::POST, &path, Some(json!({"tenant_id": info.admin_project_id}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let c = &r.body["credential"];
    (c["access"].as_str().unwrap().to_string(), c["secret"].as_str().unwrap().to_string())
}

/// A version 2 request signed with `secret`, with `Timestamp` at `offset_s` from now (none
/// when `offset_s` is None), as the body of a sigtoken request.
fn signed_v2(access: &str, secret: &str, offset_s: Option<i64>, action: &str) -> Value {
    let mut r = SignedRequest {
        access: access.to_string(),
        host: "localhost:8773".into(),
        verb: "GET".into(),
        path: "/".into(),
        ..Default::default()
    };
    for (k, v) in [("Action", action), ("SignatureVersion", "2"), ("SignatureMethod", "HmacSHA256")] {
        r.params.insert(k.into(), v.into());
    }
    if let Some(offset) = offset_s {
        let at = chrono::DateTime::from_timestamp_micros(now_micros() + offset * 1_000_000).unwrap();
        r.params.insert("Timestamp".into(), at.format("%Y-%m-%dT%H:%M:%SZ").to_string());
    }
    let signature = signer::signature(secret, &r).unwrap();
    json!({"credentials": {
        "access": r.access, "signature": signature, "host": r.host, "verb": r.verb, "path": r.path,
        "params": r.params,
    }})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signature_buys_one_token_and_needs_a_fresh_signed_timestamp() {
    let t = TestNode::start().await;
    let (access, secret) = ec2_credential(&t).await;

    let body = signed_v2(&access, &secret, Some(0), "DescribeInstances");
    let r = t.call(Method::POST, "/v3/sigtokens", None, Some(body.clone())).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    for path in ["/v3/sigtokens", "/v3/ec2tokens"] {
        let again = t.call(Method::POST, path, None, Some(body.clone())).await;
        assert_eq!(again.status, StatusCode::UNAUTHORIZED, "{path}: {}", again.body);
        let message = again.body["error"]["message"].as_str().unwrap();
        assert!(message.contains("already exchanged"), "{path}: {message}");
    }
    let other = signed_v2(&access, &secret, Some(0), "DescribeImages");
    assert_eq!(t.call(Method::POST, "/v3/ec2tokens", None, Some(other)).await.status, StatusCode::OK);
    // A client clock a few minutes off either way is fine.
    for offset in [-300, 300] {
        let skewed = signed_v2(&access, &secret, Some(offset), "DescribeRegions");
        assert_eq!(t.call(Method::POST, "/v3/sigtokens", None, Some(skewed)).await.status, StatusCode::OK, "{offset}");
    }

    for (offset, expected) in [(None, "no signed timestamp"), (Some(-20 * 60), "expired"), (Some(20 * 60), "future")] {
        let body = signed_v2(&access, &secret, offset, "DescribeVolumes");
        let r = t.call(Method::POST, "/v3/sigtokens", None, Some(body)).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{offset:?}: {}", r.body);
        let message = r.body["error"]["message"].as_str().unwrap();
        assert!(message.contains(expected), "{offset:?}: {message}");
    }
    assert_eq!(t.node.signed_requests.len(), 4, "only accepted signatures are remembered");
}

/// An admin of a new domain `name`, with a token scoped to that domain: in Keystone's mode a
/// cloud administrator for policy, never for the guard rails.
pub(crate) async fn domain_admin(t: &TestNode, name: &str) -> (String, String) {
    let d = t.create("/v3/domains", "domain", json!({"name": name})).await;
    let pw = format!("pw-{name}-1");
    let user =
        t.create("/v3/users", "user", json!({"name": format!("{name}-admin"), "domain_id": d, "password": pw})).await;
    let admin_role = t.node.engine.read().id_by_name(crate::state::keys::ns::ROLE_NAME, "", "admin").unwrap().unwrap();
    let r = t.admin(Method::PUT, &format!("/v3/domains/{d}/users/{user}/roles/{admin_role}"), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    let token = t.token_for_id(&user, &pw, json!({"domain": {"id": d}})).await;
    (user, token)
}

/// The credential records of `user_id`.
fn credentials_of(t: &TestNode, user_id: &str) -> Vec<String> {
    t.node.engine.read().member_ids(crate::state::keys::ns::CREDENTIALS_OF_USER, user_id).unwrap()
}

/// Another domain's admin gives the bootstrap admin no credential (`/v3/credentials`, EC2,
/// a PATCH moving one over or rewriting the admin's) and sets no password of theirs, in both
/// admin modes; the admin itself and a cloud administrator still do; an ordinary user's
/// credentials stay policy's call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_of_a_privileged_user_come_only_from_a_cloud_admin_or_the_user() {
    for mode in ["any", "system"] {
        let t = TestNode::start_with(&[("policy", "admin_scope", mode)]).await;
        let info = t.node.engine.read().bootstrap_info().unwrap().unwrap();
        let (admin_id, admin_project) = (info.admin_user_id, info.admin_project_id);
        let (_, da) = domain_admin(&t, "d2").await;
        let plain = t
            .create("/v3/users", "user", json!({"name": "plain", "domain_id": "default", "password": "pw-plain-1"}))
            .await;
        let mine = t
            .admin(
                Method::POST,
                "/v3/credentials",
                Some(json!({"credential": {"type": "totp", "blob": "admin-own", "user_id": admin_id}})),
            )
            .await;
        assert_eq!(mine.status, StatusCode::CREATED, "[{mode}] {}", mine.body);
        let mine = mine.body["credential"]["id"].as_str().unwrap().to_string();
        let before = credentials_of(&t, &admin_id);

        let ec2 = format!("/v3/users/{admin_id}/credentials/OS-EC2");
        let refused = [
            (
                Method::POST,
                "/v3/credentials".to_string(),
                json!({"credential": {"type": "ec2", "user_id": admin_id, "project_id": admin_project,
                                      "blob": json!({"access": "a-1", "secret": "s-1"}).to_string()}}),
            ),
            (
                Method::POST,
                "/v3/credentials".to_string(),
                json!({"credential": {"type": "totp", "user_id": admin_id, "blob": "x"}}),
            ),
            (Method::POST, ec2.clone(), json!({"tenant_id": admin_project, "access": "a-2", "secret": "s-2"})),
            (Method::PATCH, format!("/v3/credentials/{mine}"), json!({"credential": {"blob": "taken"}})),
            (
                Method::POST,
                format!("/v3/users/{admin_id}/password"),
                json!({"user": {"original_password": "secret", "password": "taken-over-1"}}),
            ),
        ];
        for (method, path, body) in refused {
            let r = t.call(method.clone(), &path, Some(&da), Some(body)).await;
            assert_eq!(r.status, StatusCode::FORBIDDEN, "[{mode}] {method} {path}: {}", r.body);
            assert!(r.body["error"]["message"].is_string(), "[{mode}] {}", r.body);
        }
        // A credential of an ordinary user may not be handed to the admin either.
        let theirs = t
            .call(
                Method::POST,
                "/v3/credentials",
                Some(&da),
                Some(json!({"credential": {"type": "totp", "blob": "p", "user_id": plain}})),
            )
            .await;
        if mode == "any" {
            assert_eq!(theirs.status, StatusCode::CREATED, "policy still decides for ordinary users: {}", theirs.body);
            let id = theirs.body["credential"]["id"].as_str().unwrap();
            let r = t
                .call(
                    Method::PATCH,
                    &format!("/v3/credentials/{id}"),
                    Some(&da),
                    Some(json!({"credential": {"user_id": admin_id}})),
                )
                .await;
            assert_eq!(r.status, StatusCode::FORBIDDEN, "[{mode}] moving a credential to the admin: {}", r.body);
        } else {
            assert_eq!(theirs.status, StatusCode::FORBIDDEN, "[{mode}] {}", theirs.body);
        }
        assert_eq!(credentials_of(&t, &admin_id), before, "[{mode}] nothing was written");
        let stored = t.node.engine.read().credential(&mine).unwrap().unwrap();
        assert_eq!(stored.blob, "admin-own", "[{mode}]");
        t.token_for_id(&admin_id, "secret", Value::Null).await;

        // The admin itself, with its own token (a cloud administrator's), still does.
        let r = t.admin(Method::POST, &ec2, Some(json!({"tenant_id": admin_project}))).await;
        assert_eq!(r.status, StatusCode::CREATED, "[{mode}] {}", r.body);
        // And an ordinary user for itself.
        let own = t.token_for_id(&plain, "pw-plain-1", Value::Null).await;
        let r = t
            .call(
                Method::POST,
                "/v3/credentials",
                Some(&own),
                Some(json!({"credential": {"type": "totp", "blob": "mine", "user_id": plain}})),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "[{mode}] {}", r.body);
    }
}
