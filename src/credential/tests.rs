//! HTTP-level tests of signed-request tokens against an in-process node: the signed timestamp
//! is required and bounded both ways, and each signature buys one token.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use super::signer::{self, SignedRequest};
use crate::state::Reader;
use crate::testkit::TestNode;
use crate::token::now_micros;

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
