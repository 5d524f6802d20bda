//! Token exchange only narrows: audiences within the subject token's, actors nested, the
//! exchanged token no longer lived than its subject and revoked with it.

use axum::http::StatusCode;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};

use super::cutoff::{active, post, s, user_tokens, EXCHANGE};
use super::errors::{assert_error, client_in, user_in, Creds, D};
use crate::testkit::{Reply, TestNode};

/// The claims of a JWT (unverified: the provider verified it).
fn claims(jwt: &str) -> Value {
    let payload = jwt.split('.').nth(1).unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}

async fn platform_token(t: &TestNode, c: &Creds) -> String {
    let r = post(t, "token", c, &[("grant_type", "client_credentials"), ("scope", "platform:api")]).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    s(&r.body, "access_token")
}

async fn exchange(t: &TestNode, c: &Creds, subject: &str, audiences: &[&str]) -> Reply {
    let mut pairs = vec![("grant_type", EXCHANGE), ("subject_token", subject)];
    pairs.extend(audiences.iter().map(|a| ("audience", *a)));
    post(t, "token", c, &pairs).await
}

async fn exchanged(t: &TestNode, c: &Creds, subject: &str, audiences: &[&str]) -> String {
    let r = exchange(t, c, subject, audiences).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    s(&r.body, "access_token")
}

/// A node whose catalog holds compute, image and volumev3.
async fn with_services() -> TestNode {
    let t = TestNode::start().await;
    for (ty, name) in [("compute", "nova"), ("image", "glance"), ("volumev3", "cinder")] {
        t.create("/v3/services", "service", json!({"type": ty, "name": name})).await;
    }
    t
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_narrowed_token_cannot_be_exchanged_for_another_service() {
    let t = with_services().await;
    let c = client_in(&t, D, json!({})).await;
    let subject = platform_token(&t, &c).await;
    // A token for every platform API narrows to any service, one or several.
    let both = exchanged(&t, &c, &subject, &["platform-apis:compute", "platform-apis:image"]).await;
    assert_eq!(claims(&both)["aud"], json!(["platform-apis:compute", "platform-apis:image"]));
    let compute = exchanged(&t, &c, &subject, &["platform-apis:compute"]).await;
    // A narrowed one only within its own audiences.
    for wider in [&["platform-apis:image"][..], &["platform-apis:compute", "platform-apis:volumev3"]] {
        assert_error(&exchange(&t, &c, &compute, wider).await, StatusCode::BAD_REQUEST, "invalid_target");
    }
    let again = exchanged(&t, &c, &compute, &["platform-apis:compute"]).await;
    assert_eq!(claims(&again)["aud"], json!(["platform-apis:compute"]));
    let image = exchanged(&t, &c, &both, &["platform-apis:image"]).await;
    assert_error(
        &exchange(&t, &c, &image, &["platform-apis:compute"]).await,
        StatusCode::BAD_REQUEST,
        "invalid_target",
    );
    // The exchanged token never outlives its subject.
    assert!(claims(&again)["exp"].as_i64().unwrap() <= claims(&compute)["exp"].as_i64().unwrap());
    assert!(claims(&compute)["exp"].as_i64().unwrap() <= claims(&subject)["exp"].as_i64().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audience_is_a_platform_service_type_as_the_spec_writes_it() {
    let t = with_services().await;
    let c = client_in(&t, D, json!({})).await;
    let subject = platform_token(&t, &c).await;
    let compute = exchanged(&t, &c, &subject, &["compute"]).await;
    assert_eq!(claims(&compute)["aud"], json!(["platform-apis:compute"]));
    // Both forms mix, and one audience named twice is listed once.
    let both = exchanged(&t, &c, &subject, &["compute", "platform-apis:image", "platform-apis:compute"]).await;
    assert_eq!(claims(&both)["aud"], json!(["platform-apis:compute", "platform-apis:image"]));
    // Narrowing still holds in the bare form.
    assert_eq!(claims(&exchanged(&t, &c, &compute, &["compute"]).await)["aud"], json!(["platform-apis:compute"]));
    assert_error(&exchange(&t, &c, &compute, &["image"]).await, StatusCode::BAD_REQUEST, "invalid_target");
    // A type the catalog does not hold, or the bare platform audience, is an unknown target.
    for unknown in ["network", "platform-apis:network", "platform-apis"] {
        assert_error(&exchange(&t, &c, &subject, &[unknown]).await, StatusCode::BAD_REQUEST, "invalid_target");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_exchange_nests_the_earlier_actor() {
    let t = with_services().await;
    let first = client_in(&t, D, json!({})).await;
    let second = client_in(&t, D, json!({})).await;
    let subject = platform_token(&t, &first).await;
    let once = exchanged(&t, &first, &subject, &["platform-apis:compute"]).await;
    assert_eq!(claims(&once)["act"], json!({"sub": first.id}));
    let twice = exchanged(&t, &second, &once, &["platform-apis:compute"]).await;
    assert_eq!(claims(&twice)["act"], json!({"sub": second.id, "act": {"sub": first.id}}));
    let r = post(&t, "introspect", &second, &[("token", &twice)]).await;
    assert_eq!(r.body["act"], json!({"sub": second.id, "act": {"sub": first.id}}), "{}", r.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoking_the_subject_token_ends_the_tokens_exchanged_from_it() {
    let t = with_services().await;
    let c = client_in(&t, D, json!({})).await;
    let subject = platform_token(&t, &c).await;
    let once = exchanged(&t, &c, &subject, &["platform-apis:compute"]).await;
    let twice = exchanged(&t, &c, &once, &["platform-apis:compute"]).await;
    let sibling = exchanged(&t, &c, &platform_token(&t, &c).await, &["platform-apis:compute"]).await;
    for token in [&subject, &once, &twice, &sibling] {
        assert!(active(&t, &c, token).await);
    }
    let r = post(&t, "revoke", &c, &[("token", &subject)]).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    for token in [&subject, &once, &twice] {
        assert!(!active(&t, &c, token).await, "a token exchanged from the revoked one is live");
    }
    assert!(active(&t, &c, &sibling).await, "an unrelated token stays live");
    // Revoking a middle token ends its descendants, not its subject.
    let subject = platform_token(&t, &c).await;
    let once = exchanged(&t, &c, &subject, &["platform-apis:compute"]).await;
    let twice = exchanged(&t, &c, &once, &["platform-apis:compute"]).await;
    post(&t, "revoke", &c, &[("token", &once)]).await;
    assert!(!active(&t, &c, &twice).await);
    assert!(active(&t, &c, &subject).await);
    assert_error(&exchange(&t, &c, &once, &["platform-apis:compute"]).await, StatusCode::BAD_REQUEST, "invalid_grant");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoking_the_subjects_refresh_family_ends_the_exchanged_token() {
    let t = with_services().await;
    let alice = user_in(&t, D, "alice", json!({})).await;
    let c = client_in(&t, D, json!({})).await;
    let tokens = user_tokens(&t, &c, &alice, "openid platform:api").await;
    let exchanged = exchanged(&t, &c, &s(&tokens, "access_token"), &["platform-apis:compute"]).await;
    assert!(active(&t, &c, &exchanged).await);
    let r = post(&t, "revoke", &c, &[("token", &s(&tokens, "refresh_token"))]).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert!(!active(&t, &c, &exchanged).await);
}
