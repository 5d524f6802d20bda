//! HTTP-level tests of `/v3/s3tokens` against an in-process node. The signed strings are AWS's
//! documented examples (see `s3sign`), under a credential holding AWS's example keys.

use axum::http::{Method, StatusCode};
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use serde_json::{json, Value};

// AWS's documented signature examples, shared with the signer's own tests.
use super::s3sign::tests::{SECRET, V2_SIG, V2_STS, V4_SIG, V4_STS};
use crate::state::Reader;
use crate::testkit::{Reply, TestNode};

const ACCESS: &str = "AKIAIOSFODNN7EXAMPLE";

async fn s3(t: &TestNode, token: Option<&str>, b: Value) -> Reply {
    t.call(Method::POST, "/v3/s3tokens", token, Some(b)).await
}

/// A role the bootstrap made.
fn role(t: &TestNode, name: &str) -> String {
    t.node.engine.read().id_by_name(crate::state::keys::ns::ROLE_NAME, "", name).unwrap().unwrap()
}

fn body(access: &str, sts: &str, signature: &str) -> Value {
    json!({"credentials": {"access": access, "token": STANDARD.encode(sts), "signature": signature}})
}

/// The admin's EC2 credential with AWS's example keys on the admin project, and a token of a
/// new user holding `service` there (what an S3 service logs in as): (admin id, project id,
/// service token).
async fn setup(t: &TestNode) -> (String, String, String) {
    let info = t.node.engine.read().bootstrap_info().unwrap().unwrap();
    let (admin, project) = (info.admin_user_id, info.admin_project_id);
    let path = format!("/v3/users/{admin}/credentials/OS-EC2");
    let r = t.admin(Method::POST, &path, Some(json!({"tenant_id": project, "access": ACCESS, "secret": SECRET}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let service = role(t, "service");
    let user =
        t.create("/v3/users", "user", json!({"name": "swift", "domain_id": "default", "password": "pw-swift-1"})).await;
    let r = t.admin(Method::PUT, &format!("/v3/projects/{project}/users/{user}/roles/{service}"), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    let token = t.token_for_id(&user, "pw-swift-1", json!({"project": {"id": project}})).await;
    (admin, project, token)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_learns_who_signed_an_s3_request() {
    let t = TestNode::start().await;
    let (admin, project, service) = setup(&t).await;

    for (sts, sig) in [(V2_STS, V2_SIG), (V4_STS, V4_SIG)] {
        // A presigned URL is used many times: every use is answered.
        for _ in 0..2 {
            let r = s3(&t, Some(&service), body(ACCESS, sts, sig)).await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.body);
            assert!(r.headers.get("x-subject-token").is_none(), "Keystone gives no token here");
            let tok = &r.body["token"];
            assert_eq!((&tok["user"]["id"], &tok["project"]["id"]), (&json!(admin), &json!(project)));
            assert_eq!(tok["methods"], json!(["ec2credential"]));
            assert!(tok["roles"].as_array().unwrap().iter().any(|r| r["name"] == "admin"), "{tok}");
            assert!(tok["catalog"].is_array());
        }
    }
    // Swift sends the URL-safe alphabet without padding; the envelopes Keystone reads.
    let url_safe =
        json!({"ec2Credentials": {"access": ACCESS, "token": URL_SAFE_NO_PAD.encode(V4_STS), "signature": V4_SIG}});
    assert_eq!(s3(&t, Some(&service), url_safe).await.status, StatusCode::OK);
    let r = t.call(Method::POST, "/v3/s3tokens?nocatalog", Some(&service), Some(body(ACCESS, V2_STS, V2_SIG))).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.body["token"].get("catalog").is_none(), "{}", r.body);
    // An administrator may ask too.
    assert_eq!(t.admin(Method::POST, "/v3/s3tokens", Some(body(ACCESS, V2_STS, V2_SIG))).await.status, StatusCode::OK);

    // Refusals about the credential or the signature are Keystone's plain 401.
    let plain = json!({"error": {"code": 401, "title": "Unauthorized",
                                 "message": "The request you have made requires authentication."}});
    let tampered = V4_STS.replace("T000000Z", "T000001Z");
    let other_service = V4_STS.replace("/s3/", "/ec2/");
    for b in [
        body(ACCESS, V2_STS, "qgk2+6Sv9/oM7G3qLEjTH1a1l1h="),
        body(ACCESS, &tampered, V4_SIG),
        body(ACCESS, V4_STS, &V4_SIG.to_uppercase()),
        body(ACCESS, &other_service, V4_SIG),
        body("AKIDUNKNOWN", V2_STS, V2_SIG),
        json!({"credentials": {"token": STANDARD.encode(V2_STS), "signature": V2_SIG}}),
        json!({"credentials": null}),
    ] {
        let r = s3(&t, Some(&service), b.clone()).await;
        assert_eq!((r.status, &r.body), (StatusCode::UNAUTHORIZED, &plain), "{b}");
    }
    // Malformed requests are 400.
    for b in [
        json!({}),
        json!([]),
        json!({"credentials": "x"}),
        json!({"credentials": {"access": 7, "token": "R0VU", "signature": "x"}}),
        json!({"credentials": {"access": ACCESS, "signature": V2_SIG}}),
        json!({"credentials": {"access": ACCESS, "token": STANDARD.encode(V2_STS)}}),
        json!({"credentials": {"access": ACCESS, "token": ["R0VU"], "signature": V2_SIG}}),
        json!({"credentials": {"access": ACCESS, "token": "not base64!", "signature": V2_SIG}}),
    ] {
        let r = s3(&t, Some(&service), b.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{b}: {}", r.body);
        assert_eq!(r.body["error"]["code"], 400, "{b}");
    }

    // Only the service or an administrator asks (Keystone's identity:s3tokens_validate).
    assert_eq!(s3(&t, None, body(ACCESS, V2_STS, V2_SIG)).await.status, StatusCode::UNAUTHORIZED);
    let user = t
        .create("/v3/users", "user", json!({"name": "client", "domain_id": "default", "password": "pw-client-1"}))
        .await;
    let member = role(&t, "member");
    let r = t.admin(Method::PUT, &format!("/v3/projects/{project}/users/{user}/roles/{member}"), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    let client = t.token_for_id(&user, "pw-client-1", json!({"project": {"id": project}})).await;
    let r = s3(&t, Some(&client), body(ACCESS, V2_STS, V2_SIG)).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);

    // A disabled holder signs nothing.
    let other_project = t.create("/v3/projects", "project", json!({"name": "p2", "domain_id": "default"})).await;
    let path = format!("/v3/users/{user}/credentials/OS-EC2");
    let r = t
        .admin(Method::POST, &path, Some(json!({"tenant_id": other_project, "access": "ak-2", "secret": SECRET})))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let r = s3(&t, Some(&service), body("ak-2", V2_STS, V2_SIG)).await;
    assert_eq!((r.status, &r.body), (StatusCode::UNAUTHORIZED, &plain), "no role on the project: {}", r.body);
    let r = t.admin(Method::PUT, &format!("/v3/projects/{other_project}/users/{user}/roles/{member}"), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(s3(&t, Some(&service), body("ak-2", V2_STS, V2_SIG)).await.status, StatusCode::OK);
    let r = t.admin(Method::PATCH, &format!("/v3/users/{user}"), Some(json!({"user": {"enabled": false}}))).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(s3(&t, Some(&service), body("ak-2", V2_STS, V2_SIG)).await.status, StatusCode::UNAUTHORIZED);
}
