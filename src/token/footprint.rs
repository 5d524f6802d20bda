//! Approximate memory of what the token caches hold, for their byte budgets
//! ([`super::AppliedCache::with_budget`]). Only the variable parts are counted in full (names,
//! free-form `extra` and `options`, roles, bodies); fixed parts count as their struct size.
//! Approximate is enough: the budget bounds memory, it does not account for it exactly.

use std::mem::size_of;
use std::sync::Arc;

use super::validate::ValidToken;
use crate::state::model::{Project, Role, User};

fn opt(s: &Option<String>) -> usize {
    s.as_ref().map_or(0, String::len)
}

fn user(u: &User) -> usize {
    let federated: usize =
        u.federated.iter().flat_map(|f| &f.protocols).map(|p| p.protocol_id.len() + p.unique_id.len()).sum();
    u.id.len()
        + u.name.len()
        + u.domain_id.len()
        + opt(&u.password_hash)
        + opt(&u.default_project_id)
        + u.extra.len()
        + u.options.len()
        + federated
}

fn project(p: &Project) -> usize {
    size_of::<Project>()
        + p.id.len()
        + p.name.len()
        + p.domain_id.len()
        + opt(&p.description)
        + opt(&p.parent_id)
        + p.tags.iter().map(String::len).sum::<usize>()
        + p.extra.len()
        + p.options.len()
}

fn role(r: &Role) -> usize {
    size_of::<Role>()
        + r.id.len()
        + r.name.len()
        + opt(&r.domain_id)
        + opt(&r.description)
        + r.extra.len()
        + r.options.len()
}

/// A validated token under its token string.
#[allow(clippy::ptr_arg)] // the signature of the cache's size function: its keys are Strings
pub fn valid_token(token: &String, vt: &Arc<ValidToken>) -> usize {
    let app_cred = vt
        .app_cred
        .as_ref()
        .map_or(0, |a| a.id.len() + a.name.len() + a.access_rules.iter().map(|r| r.to_string().len()).sum::<usize>());
    let trust = vt.trust.as_ref().map_or(0, |t| t.id.len() + t.trustor_user_id.len() + t.trustee_user_id.len());
    // A federated login names any number of groups.
    let federated = vt.payload.federated().map_or(0, |f| {
        f.identity_provider_id.len() + f.protocol_id.len() + f.group_ids.iter().map(|g| g.len() + 24).sum::<usize>()
    });
    let oauth1 = vt.oauth1.as_ref().map_or(0, |o| o.access_token_id.len() + o.consumer_id.len());
    token.len()
        + size_of::<ValidToken>()
        + vt.payload.user_id.len()
        + vt.payload.audit_ids.len() * 16
        + user(&vt.user)
        + project(&vt.user_domain)
        + vt.project.as_ref().map_or(0, project)
        + vt.scope_domain.as_ref().map_or(0, project)
        + vt.roles.iter().map(role).sum::<usize>()
        + app_cred
        + trust
        + federated
        + oauth1
}

/// A serialized token body under (token, nocatalog). The validated token beside it is shared
/// with the validation cache, which counts it.
pub fn token_body(key: &(String, bool), entry: &(Arc<ValidToken>, axum::body::Bytes)) -> usize {
    key.0.len() + size_of::<(Arc<ValidToken>, axum::body::Bytes)>() + entry.1.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::{Delegation, TokenPayload, TokenScope};

    fn domain() -> Project {
        Project {
            id: "d1".into(),
            name: "D".into(),
            domain_id: "d1".into(),
            description: None,
            enabled: true,
            is_domain: true,
            parent_id: None,
            tags: Vec::new(),
            extra: "{}".into(),
            options: "{}".into(),
            created_at: 0,
        }
    }

    fn token_with_extra(extra: &str) -> ValidToken {
        ValidToken {
            payload: TokenPayload {
                version: crate::token::PAYLOAD_VERSION,
                user_id: "u1".into(),
                methods: 1,
                scope: TokenScope::Unscoped,
                issued_at: 0,
                expires_at: i64::MAX,
                audit_ids: vec![[0; 16]],
                delegation: Delegation::None,
                restriction: None,
                user_cutoff: None,
            },
            user: User {
                id: "u1".into(),
                name: "u".into(),
                domain_id: "d1".into(),
                enabled: true,
                password_hash: None,
                default_project_id: None,
                password_expires_at: None,
                extra: extra.into(),
                options: "{}".into(),
                created_at: 0,
                tokens_valid_after: 0,
                federated: Vec::new(),
            },
            user_domain: domain(),
            project: None,
            scope_domain: None,
            roles: Vec::new(),
            is_admin_project: false,
            admin_scope: crate::policy::admin_scope::AdminScope::default(),
            app_cred: None,
            trust: None,
            oauth1: None,
            decisions: Default::default(),
        }
    }

    #[test]
    fn free_form_attributes_and_bodies_are_counted() {
        let key = "t".repeat(180);
        let small = valid_token(&key, &Arc::new(token_with_extra("{}")));
        let big = valid_token(&key, &Arc::new(token_with_extra(&format!("{{\"blob\": \"{}\"}}", "x".repeat(60_000)))));
        assert!(big - small >= 60_000, "{small} {big}");
        let vt = Arc::new(token_with_extra("{}"));
        let body = |n: usize| token_body(&(key.clone(), false), &(vt.clone(), vec![b'x'; n].into()));
        assert_eq!(body(10_000) - body(10), 9_990);
    }
}
