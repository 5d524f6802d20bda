//! A user moved from Keystone keeps its password: the hash Keystone stored (here one its own
//! bcrypt hasher wrote, see `idnode_keys::keystone_hash`) proves the password at login, and
//! that login replaces it with argon2id, in the history too, without moving anything else.

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::clock::now_micros;
use crate::state::command::Command;
use crate::state::model::User;
use crate::state::Reader;
use crate::testkit::TestNode;

/// `correct horse battery`, as Keystone 30's bcrypt hasher stored it (cost 4).
const KEPT: &str = "$2b$04$IAhPfKYtQSLKh9R40yZvx.PmgDEOb17XuFvwJOZWcQtFWSgzg0.LS";
const PW: &str = "correct horse battery";

async fn auth(t: &TestNode, id: &str, pw: &str) -> StatusCode {
    let body =
        json!({"auth": {"identity": {"methods": ["password"], "password": {"user": {"id": id, "password": pw}}}}});
    t.call(Method::POST, "/v3/auth/tokens", None, Some(body)).await.status
}

/// A user of the default domain whose stored hash (and history) is `KEPT`, as an import
/// writes it.
async fn kept_user(t: &TestNode, id: &str) -> User {
    let mut u = crate::testkit::fixtures::user(id, id, "default");
    u.password_hash = Some(KEPT.into());
    t.node.propose(Command::CreateUser(u.clone())).await.unwrap();
    let record = Command::RecordPassword {
        user_id: id.into(),
        hash: KEPT.into(),
        at: now_micros(),
        self_service: false,
        keep: 2,
        expires_at: None,
    };
    t.node.propose(record).await.unwrap();
    u
}

fn stored(t: &TestNode, id: &str) -> User {
    t.node.engine.read().user(id).unwrap().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keystone_hash_logs_in_and_the_login_replaces_it_with_argon2id() {
    let t = TestNode::start_with(&[("security_compliance", "unique_last_password_count", "2")]).await;
    let before = kept_user(&t, "kept1").await;
    assert_eq!(auth(&t, "kept1", "correct horse batterY").await, StatusCode::UNAUTHORIZED);
    assert_eq!(stored(&t, "kept1").password_hash.as_deref(), Some(KEPT), "a failed login rehashes nothing");

    assert_eq!(auth(&t, "kept1", PW).await, StatusCode::OK);
    let after = stored(&t, "kept1");
    let new_hash = after.password_hash.clone().unwrap();
    assert!(new_hash.starts_with("$argon2id$"), "{new_hash}");
    assert_eq!(after.tokens_valid_after, before.tokens_valid_after, "not a password change: tokens stay");
    let history = t.node.engine.read().password_state("kept1").unwrap().unwrap().history;
    assert_eq!(history, vec![new_hash.clone()], "the history holds the new hash in the old one's place");
    assert_eq!(auth(&t, "kept1", PW).await, StatusCode::OK);
    assert_eq!(auth(&t, "kept1", "wrong").await, StatusCode::UNAUTHORIZED);
    assert_eq!(stored(&t, "kept1").password_hash, Some(new_hash), "an argon2id hash stays as it is");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_history_compares_against_a_kept_hash_and_a_raced_rehash_changes_nothing() {
    let t = TestNode::start_with(&[("security_compliance", "unique_last_password_count", "2")]).await;
    kept_user(&t, "kept2").await;
    // A self-service change needs a token, whose login rehashes: the same command puts the
    // kept hash back (in the history too), so the change is judged against Keystone's hash.
    let token = t.token_for_id("kept2", PW, Value::Null).await;
    t.node
        .propose(Command::RehashPassword {
            user_id: "kept2".into(),
            old_hash: stored(&t, "kept2").password_hash.unwrap(),
            new_hash: KEPT.into(),
        })
        .await
        .unwrap();
    assert_eq!(stored(&t, "kept2").password_hash.as_deref(), Some(KEPT));
    // Back to the same password: refused by the kept hash in the history.
    let body = json!({"user": {"original_password": PW, "password": PW}});
    let r = t.call(Method::POST, "/v3/users/kept2/password", Some(&token), Some(body)).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert!(r.body["error"]["message"].as_str().unwrap_or_default().contains("previous password"), "{}", r.body);
    // A rehash computed from a hash that is no longer stored writes nothing.
    let stale =
        Command::RehashPassword { user_id: "kept2".into(), old_hash: "$2b$04$other".into(), new_hash: "x".into() };
    t.node.propose(stale).await.unwrap();
    assert_eq!(stored(&t, "kept2").password_hash.as_deref(), Some(KEPT));
}
