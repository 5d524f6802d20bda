//! Keystone's expiring group memberships through a real OIDC login: a ruleset's
//! `authorization_ttl` (or the node's `[federation] default_authorization_ttl`) makes the
//! rule's groups expiring memberships, listed with their end, counted for the group's roles
//! until then and not after, even with nothing written in between; without a TTL the groups
//! are synced for good again.

use super::*;
use crate::clock::now_micros;
use crate::state::command::Command;
use crate::state::read::IdentityReads;
use crate::state::shadow::{GroupRequest, ShadowCommand};

/// A group `ops` of the domain holding the role `operator` (which the rule does not grant,
/// nor does any role it grants imply) on the project.
async fn ops_group(f: &Fed) -> String {
    let g = f.t.create("/v3/groups", "group", json!({"name": "ops", "domain_id": f.domain})).await;
    let operator = f.t.create("/v3/roles", "role", json!({"name": "operator"})).await;
    let path = format!("/v3/projects/{}/groups/{g}/roles/{operator}", f.project);
    assert_eq!(f.t.admin(Method::PUT, &path, None).await.status, StatusCode::NO_CONTENT);
    g
}

/// The staff rule binding `group`, in a ruleset with `ttl` (minutes) when given.
async fn ruleset(f: &Fed, group: &str, ttl: Option<u32>) -> Reply {
    let mut rule = f.staff_rule("local");
    rule["groups"] = json!([{"group_id": group, "group_name": "ops", "strategy": "get"}]);
    let mut body = json!({"mapping": {"mapping_id": "m1", "domain_id": f.domain, "provider_id": "corp",
                                      "source": {"type": "federation", "idp_id": f.idp}, "rules": [rule]}});
    if let Some(ttl) = ttl {
        body["mapping"]["authorization_ttl"] = json!(ttl);
    }
    match f.t.admin(Method::GET, "/v4/mappings/m1", None).await.status {
        StatusCode::OK => f.t.admin(Method::PUT, "/v4/mappings/m1", Some(body)).await,
        _ => f.t.admin(Method::POST, "/v4/mappings", Some(body)).await,
    }
}

async fn alice_logs_in(f: &Fed) -> Reply {
    let r = f.jwt_login(&f.ec.sign(&claims("alice", "alice@corp.example")), Some(f.project_scope())).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r
}

fn alice(f: &Fed) -> String {
    derived_user_id(DerivedBy::Mapped, &f.domain, &f.idp, "alice")
}

/// The user's groups as listed: (id, membership_expires_at).
async fn listed(f: &Fed, user: &str) -> Vec<(String, Value)> {
    let r = f.t.admin(Method::GET, &format!("/v3/users/{user}/groups"), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let groups = r.body["groups"].as_array().cloned().unwrap_or_default();
    groups
        .iter()
        .map(|g| (g["id"].as_str().unwrap_or_default().to_string(), g["membership_expires_at"].clone()))
        .collect()
}

async fn is_member(f: &Fed, group: &str, user: &str) -> StatusCode {
    f.t.admin(Method::HEAD, &format!("/v3/groups/{group}/users/{user}"), None).await.status
}

/// Whether an ISO 8601 time is `ttl_s` after a login made between `before` and now (unix
/// seconds): bounded by the clock on both sides, never by how long the login took.
fn ends_after_login(t: &Value, before: i64, ttl_s: i64) -> bool {
    let at = chrono::DateTime::parse_from_rfc3339(t.as_str().expect("a time")).expect("ISO 8601");
    (before + ttl_s..=now_secs() + ttl_s).contains(&at.timestamp())
}

#[tokio::test]
async fn a_ruleset_ttl_grants_expiring_memberships_that_give_the_groups_roles_until_they_end() {
    let f = Fed::new(&[]).await;
    let g = ops_group(&f).await;
    let r = ruleset(&f, &g, Some(30)).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["mapping"]["authorization_ttl"], json!(30), "{}", r.body);
    let before = now_secs();
    let token = subject(&alice_logs_in(&f).await);
    let uid = alice(&f);

    // Listed with its end, 30 minutes on; counted; not a permanent member.
    let groups = listed(&f, &uid).await;
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!(groups[0].0, g);
    assert!(ends_after_login(&groups[0].1, before, 1800), "{groups:?}");
    assert_eq!(is_member(&f, &g, &uid).await, StatusCode::NO_CONTENT);
    let members = f.t.admin(Method::GET, &format!("/v3/groups/{g}/users"), None).await;
    assert_eq!(members.body["users"], json!([]), "as in Keystone, the member list shows permanent members only");
    let mut roles = role_names(&f.validate(&token).await);
    roles.sort();
    assert_eq!(roles, vec!["member", "operator", "reader"], "the group's role through the expiring membership");
    let effective = f.t.admin(Method::GET, &format!("/v3/role_assignments?effective&user.id={uid}"), None).await;
    assert_eq!(effective.body["role_assignments"].as_array().map(Vec::len), Some(1), "{}", effective.body);

    // A second login at once writes nothing: the membership is as fresh as it needs.
    let before = f.t.node.engine.read().expiring_memberships_of_user(&uid).unwrap();
    alice_logs_in(&f).await;
    assert_eq!(f.t.node.engine.read().expiring_memberships_of_user(&uid).unwrap(), before);

    // The membership ends in a moment, with nothing written after: from its end on, the
    // group gives no role, is not listed and is not counted.
    let ends = now_micros() + 2_000_000;
    let cmd = ShadowCommand::ExpiringLogin {
        user: Box::new(f.t.node.engine.read().user(&uid).unwrap().unwrap()),
        groups: vec![GroupRequest {
            group_id: Some(g.clone()),
            name: "ops".into(),
            domain_id: f.domain.clone(),
            strategy: crate::mapping::model::GroupStrategy::Get,
            new_id: "unused".into(),
        }],
        idp_id: f.idp.clone(),
        at: now_micros(),
        expires_at: ends,
    };
    f.t.node.propose(Command::Shadow(cmd)).await.unwrap();
    let roles = role_names(&f.validate(&token).await);
    if now_micros() < ends {
        assert!(roles.contains(&"operator".to_string()), "{roles:?}");
    }
    let wait = ends - now_micros() + 100_000;
    if wait > 0 {
        tokio::time::sleep(Duration::from_micros(wait as u64)).await;
    }
    let roles = role_names(&f.validate(&token).await);
    assert!(!roles.contains(&"operator".to_string()), "the token lost the group's role: {roles:?}");
    let effective = f.t.admin(Method::GET, &format!("/v3/role_assignments?effective&user.id={uid}"), None).await;
    assert_eq!(effective.body["role_assignments"], json!([]), "{}", effective.body);
    assert!(listed(&f, &uid).await.is_empty());
    assert_eq!(is_member(&f, &g, &uid).await, StatusCode::NOT_FOUND);

    // Without a TTL the rule's groups are synced for good again.
    let r = ruleset(&f, &g, None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.body["mapping"].get("authorization_ttl").is_none(), "{}", r.body);
    alice_logs_in(&f).await;
    assert_eq!(listed(&f, &uid).await, vec![(g.clone(), Value::Null)]);
    assert!(f.t.node.engine.read().expiring_memberships_of_user(&uid).unwrap().is_empty());
}

#[tokio::test]
async fn the_nodes_default_ttl_applies_to_a_ruleset_without_one() {
    let f = Fed::new(&[("federation", "default_authorization_ttl", "45")]).await;
    let g = ops_group(&f).await;
    assert_eq!(ruleset(&f, &g, None).await.status, StatusCode::CREATED);
    let before = now_secs();
    alice_logs_in(&f).await;
    let groups = listed(&f, &alice(&f)).await;
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert!(ends_after_login(&groups[0].1, before, 2700), "{groups:?}");
    // The ruleset's own TTL wins over the node's.
    assert_eq!(ruleset(&f, &g, Some(5)).await.status, StatusCode::OK);
    let before = now_secs();
    alice_logs_in(&f).await;
    let groups = listed(&f, &alice(&f)).await;
    assert!(ends_after_login(&groups[0].1, before, 300), "{groups:?}");
}

#[tokio::test]
async fn a_ttl_ruleset_binding_a_group_that_became_privileged_refuses_the_login_and_writes_nothing() {
    let f = Fed::new(&[]).await;
    let g = ops_group(&f).await;
    assert_eq!(ruleset(&f, &g, Some(30)).await.status, StatusCode::CREATED);
    // The group comes to hold admin after the ruleset was written.
    let grant = format!("/v3/projects/{}/groups/{g}/roles/{}", f.project, role(&f.t, "admin"));
    assert_eq!(f.t.admin(Method::PUT, &grant, None).await.status, StatusCode::NO_CONTENT);
    let before = f.t.node.app.state_version();
    let r = f.jwt_login(&f.ec.sign(&claims("alice", "alice@corp.example")), Some(f.project_scope())).await;
    assert_eq!((r.status, r.body["detail"].clone()), (StatusCode::FORBIDDEN, json!("group_assignment_unauthorized")));
    assert_eq!(f.t.node.app.state_version(), before, "a refused login writes nothing");
    assert!(f.t.node.engine.read().expiring_members_of_group(&g).unwrap().is_empty());
}
