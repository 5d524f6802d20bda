//! Token lifecycle fixes from the code review, each against a real one-node cluster.

use axum::http::{Method, StatusCode};
use idnode_raft::StateApp;
use serde_json::json;

use crate::state::model::Revocation;
use crate::state::{cf, Reader};
use crate::testkit::TestNode;

fn admin_scope() -> serde_json::Value {
    json!({"project": {"name": "admin", "domain": {"id": "default"}}})
}

async fn validate(t: &TestNode, subject: &str) -> StatusCode {
    t.admin(Method::GET, &format!("/v3/auth/tokens#{subject}"), None).await.status
}

async fn rescope(t: &TestNode, parent: &str) -> String {
    let body = json!({"auth": {"identity": {"methods": ["token"], "token": {"id": parent}}, "scope": admin_scope()}});
    let r = t.call(Method::POST, "/v3/auth/tokens", None, Some(body)).await;
    assert!(r.status.is_success(), "re-scope: {}", r.body);
    r.headers.get("x-subject-token").and_then(|v| v.to_str().ok()).expect("subject token").to_string()
}

#[tokio::test]
async fn installing_a_snapshot_empties_the_validation_cache() {
    let t = TestNode::start().await;
    let subject = t.token("admin", "secret", admin_scope()).await;
    assert_eq!(validate(&t, &subject).await, StatusCode::OK, "validated, and now cached");
    // A snapshot replaces the state without applying an entry: here, one in which the token
    // is revoked.
    let vt = t.node.validate_token(&subject, false).await.expect("valid");
    let mut batch = t.node.engine.batch();
    for audit in vt.payload.audit_id_strings() {
        batch.put_t(cf::REVOCATIONS, audit.into_bytes(), &Revocation { expires_at: i64::MAX, revoked_at: 0 }).unwrap();
    }
    t.node.engine.write(batch, false).unwrap();
    t.node.app.installed_snapshot(&t.node.engine);
    assert_eq!(validate(&t, &subject).await, StatusCode::NOT_FOUND, "the cache outlived the snapshot install");
}

#[tokio::test]
async fn revocations_are_kept_through_the_allow_expired_window() {
    let t = TestNode::start_with(&[("token", "allow_expired_window", "3600")]).await;
    let subject = t.token("admin", "secret", admin_scope()).await;
    let vt = t.node.validate_token(&subject, false).await.expect("valid");
    let r = t.admin(Method::DELETE, &format!("/v3/auth/tokens#{subject}"), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    let audit = vt.payload.audit_id_strings()[0].clone();
    let rec: Revocation =
        Reader::get(&t.node.engine.read(), cf::REVOCATIONS, audit.as_bytes()).unwrap().expect("recorded");
    assert_eq!(rec.expires_at, vt.payload.expires_at + 3600 * 1_000_000, "kept while allow_expired could accept it");
}

#[tokio::test]
async fn revoking_the_first_token_of_a_chain_kills_every_rescoped_descendant() {
    let t = TestNode::start().await;
    let first = t.token("admin", "secret", json!("unscoped")).await;
    let child = rescope(&t, &first).await;
    let grandchild = rescope(&t, &child).await;
    let great = rescope(&t, &grandchild).await;
    for tok in [&child, &grandchild, &great] {
        assert_eq!(validate(&t, tok).await, StatusCode::OK);
    }
    let r = t.admin(Method::DELETE, &format!("/v3/auth/tokens#{first}"), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    for (name, tok) in [("child", &child), ("grandchild", &grandchild), ("great-grandchild", &great)] {
        assert_eq!(validate(&t, tok).await, StatusCode::NOT_FOUND, "the {name} outlived the chain's revoked root");
    }
}

#[tokio::test]
async fn the_leader_refuses_a_proposal_it_could_not_apply() {
    let t = TestNode::start().await;
    let before = t.node.raft.committed_index();
    for garbage in [vec![0xff, 0xff, 0xff, 0xff], Vec::new(), {
        let mut ok = postcard::to_allocvec(&crate::state::Command::ClearAuthFailures { user_id: "x".into() }).unwrap();
        ok.push(7);
        ok
    }] {
        let r = t.node.raft.propose(garbage).await;
        assert!(matches!(r, Err(idnode_raft::ProposeError::Rejected(_))), "{r:?}");
    }
    assert_eq!(t.node.raft.committed_index(), before, "nothing entered the log");
    // The node still works.
    t.create("/v3/projects", "project", json!({"name": "after-garbage", "domain_id": "default"})).await;
}

#[tokio::test]
async fn unknown_and_known_users_fail_the_same_way() {
    let t = TestNode::start_with(&[("security_compliance", "lockout_failure_attempts", "5")]).await;
    let log = || t.node.raft.committed_index();
    let known = {
        let before = log();
        let r = t.try_token("admin", "wrong-password", admin_scope()).await;
        (r.status, r.body.clone(), log() - before)
    };
    let unknown = {
        let before = log();
        let r = t.try_token("nobody-here", "wrong-password", admin_scope()).await;
        (r.status, r.body.clone(), log() - before)
    };
    assert_eq!(known.0, StatusCode::UNAUTHORIZED);
    assert_eq!(known, unknown, "(status, body, log entries written) differ between a known and an unknown user");
    assert!(t.node.engine.read().user("-").unwrap().is_none());
}

/// The cache series are real: a second validation of the same token is a hit of the token
/// validation cache, and the series show what the cache holds.
#[tokio::test]
async fn validation_cache_hits_misses_and_size_are_exported() {
    let t = TestNode::start().await;
    let series = |text: &str, name: &str| {
        let line = format!("{name}{{cache=\"token_validation\"}} ");
        text.lines().find_map(|l| l.strip_prefix(line.as_str())).and_then(|v| v.parse::<f64>().ok()).unwrap_or(-1.0)
    };
    let before = t.node.metrics_text().unwrap();
    let subject = t.token("admin", "secret", admin_scope()).await;
    assert_eq!(validate(&t, &subject).await, StatusCode::OK);
    assert_eq!(validate(&t, &subject).await, StatusCode::OK);
    let after = t.node.metrics_text().unwrap();
    assert!(series(&after, "idnode_cache_hits_total") > series(&before, "idnode_cache_hits_total"), "{after}");
    assert!(series(&after, "idnode_cache_misses_total") > series(&before, "idnode_cache_misses_total"));
    assert!(series(&after, "idnode_cache_entries") >= 1.0, "{after}");
    assert!(series(&after, "idnode_cache_bytes") > 0.0, "{after}");
    for cache in ["token_body", "catalog", "regex", "jwks", "oidc_discovery", "verified_jwt", "scim_api_key_resolution"]
    {
        assert!(after.contains(&format!("idnode_cache_hits_total{{cache=\"{cache}\"}}")), "{cache}: {after}");
    }
}
