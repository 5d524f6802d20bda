//! Size limits on the free-form attributes clients may store with a resource: `extra` (the
//! attributes outside a resource's schema, which Keystone keeps and echoes back) and
//! `options`. The request body limit (1 MiB) bounds one request, not a record: a PATCH merges
//! new attributes into the stored ones, so without a limit on the record a client could grow a
//! user without end, and every copy of it (the replicated log, snapshots, each node's state,
//! token validation caches) with it.
//!
//! `options` is checked where it is parsed ([`super::body::Sent::options`]). `extra` is checked
//! on the command about to be replicated ([`check_command`], called by `Node::propose`): that
//! is the one place every create and update of every resource passes, with the merged
//! attributes in hand, whichever handler built them.

use serde_json::{Map, Value};

use super::ApiError;
use crate::state::Command;

/// Serialized bytes a resource's `extra` attributes may take (apply holds a `PatchUser` to it
/// too, since it merges at apply time).
pub use crate::state::model::MAX_EXTRA_BYTES;
/// Serialized bytes of `options`: Keystone's options are a handful of flags and short lists.
pub const MAX_OPTIONS_BYTES: usize = 16 * 1024;

/// Refuses a command (or a batch holding one) that would store a resource whose `extra`
/// attributes are larger than [`MAX_EXTRA_BYTES`].
pub fn check_command(cmd: &Command) -> Result<(), ApiError> {
    match cmd {
        Command::All(cmds) => cmds.iter().try_for_each(check_command),
        Command::CreateProject(p) | Command::UpdateProject(p) => {
            check_extra(if p.is_domain { "domain" } else { "project" }, &p.extra)
        }
        Command::CreateUser(u) | Command::UpdateUser(u) => check_extra("user", &u.extra),
        Command::PatchUser(p) => check_extra("user", p.extra.as_deref().unwrap_or("{}")),
        Command::CreateGroup(g) | Command::UpdateGroup(g) => check_extra("group", &g.extra),
        Command::CreateRole(r) | Command::UpdateRole(r) => check_extra("role", &r.extra),
        Command::CreateRegion(r) | Command::UpdateRegion(r) => check_extra("region", &r.extra),
        Command::CreateService(s) | Command::UpdateService(s) => check_extra("service", &s.extra),
        Command::CreateEndpoint(e) | Command::UpdateEndpoint(e) => check_extra("endpoint", &e.extra),
        Command::CreateCredential(c) | Command::UpdateCredential(c) => check_extra("credential", &c.extra),
        _ => Ok(()),
    }
}

/// 400 naming the field (and the largest attribute, the one to shrink) when `extra` (JSON
/// object text) is too large.
pub fn check_extra(kind: &str, extra: &str) -> Result<(), ApiError> {
    if extra.len() <= MAX_EXTRA_BYTES {
        return Ok(());
    }
    let largest = serde_json::from_str::<Map<String, Value>>(extra)
        .ok()
        .and_then(|m| m.iter().max_by_key(|(_, v)| v.to_string().len()).map(|(k, _)| format!(" (largest: '{k}')")))
        .unwrap_or_default();
    Err(ApiError::bad_request(format!(
        "Invalid input for field 'extra': the {kind}'s attributes outside its schema take {} bytes serialized, \
         more than the {MAX_EXTRA_BYTES} allowed{largest}.",
        extra.len()
    )))
}

/// 400 naming `options` when its serialized form is too large.
pub fn check_options(serialized: &str) -> Result<(), ApiError> {
    if serialized.len() <= MAX_OPTIONS_BYTES {
        return Ok(());
    }
    Err(ApiError::bad_request(format!(
        "Invalid input for field 'options': takes {} bytes serialized, more than the {MAX_OPTIONS_BYTES} allowed.",
        serialized.len()
    )))
}

#[cfg(test)]
mod tests {
    use axum::http::{Method, StatusCode};
    use serde_json::json;

    use super::*;
    use crate::testkit::TestNode;

    fn message(r: &crate::testkit::Reply) -> String {
        r.body["error"]["message"].as_str().unwrap_or_default().to_string()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn extra_and_options_are_bounded_with_a_400_naming_the_field() {
        let t = TestNode::start().await;
        let big = "x".repeat(MAX_EXTRA_BYTES);

        let r =
            t.admin(Method::POST, "/v3/users", Some(json!({"user": {"name": "u1", "team": "blue", "bio": big}}))).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", message(&r));
        let m = message(&r);
        assert!(m.contains("'extra'") && m.contains("user") && m.contains("'bio'"), "{m}");
        let r = t
            .admin(
                Method::POST,
                "/v3/projects",
                Some(json!({"project": {"name": "p1", "domain_id": "default", "bio": big}})),
            )
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", message(&r));
        assert!(message(&r).contains("'extra'"), "{}", message(&r));

        // Each update within the limit, the merged record beyond it.
        let half = "y".repeat(MAX_EXTRA_BYTES / 2 + 1);
        let id = t.create("/v3/users", "user", json!({"name": "u2", "a": half})).await;
        let r = t.admin(Method::PATCH, &format!("/v3/users/{id}"), Some(json!({"user": {"b": half}}))).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", message(&r));
        assert!(message(&r).contains("'extra'"), "{}", message(&r));
        let r = t.admin(Method::PATCH, &format!("/v3/users/{id}"), Some(json!({"user": {"b": "small"}}))).await;
        assert_eq!((r.status, &r.body["user"]["b"]), (StatusCode::OK, &json!("small")), "{}", message(&r));

        let options = json!({"multi_factor_auth_rules": [["x".repeat(MAX_OPTIONS_BYTES)]]});
        let r = t.admin(Method::POST, "/v3/users", Some(json!({"user": {"name": "u3", "options": options}}))).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", message(&r));
        assert!(message(&r).contains("'options'"), "{}", message(&r));
        let r = t.admin(Method::PATCH, &format!("/v3/users/{id}"), Some(json!({"user": {"options": options}}))).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", message(&r));
        let r = t.admin(Method::POST, "/v3/roles", Some(json!({"role": {"name": "r1", "options": options}}))).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", message(&r));
    }
}
