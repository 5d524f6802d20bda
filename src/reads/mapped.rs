//! What a mapped principal holds, as token validation and the login paths read it: a virtual
//! user's record and the user it presents, and the roles a mapping rule's token carries on a
//! target (the rule's authorizations there, the direct grants there of the groups a virtual
//! user binds, and every role those imply). Whether the rule itself still stands is the
//! token layer's check (`token::rulesets`).

use std::collections::BTreeSet;

use super::listing::{self, Filter};
use crate::state::model::{Target, User};
use crate::state::read::ShadowReads;
use crate::state::ruleset::{Authorization, MappingRule};
use crate::state::shadow::VirtualUserMetadata;
use crate::state::Reader;

/// A virtual user's shadow record and the user it stands for in a token.
pub fn virtual_user(view: &impl Reader, user_id: &str) -> idnode_storage::Result<Option<(User, VirtualUserMetadata)>> {
    let Some(r) = view.virtual_user_record(user_id)? else { return Ok(None) };
    Ok(Some((as_user(&r), r)))
}

/// The user record a virtual user presents: no password, no default project, nothing to
/// revoke by (its tokens die with its record, its ruleset version or its disabling).
pub fn as_user(r: &VirtualUserMetadata) -> User {
    User {
        id: r.user_id.clone(),
        name: r.resolved_user_name.clone(),
        domain_id: r.domain_id.clone().unwrap_or_default(),
        enabled: r.enabled,
        password_hash: None,
        default_project_id: None,
        password_expires_at: None,
        extra: "{}".into(),
        options: "{}".into(),
        created_at: r.created_at.saturating_mul(1_000_000),
        tokens_valid_after: 0,
        federated: Vec::new(),
    }
}

/// The role ids the rule's authorizations name on `target`.
pub fn rule_roles_on(rule: &MappingRule, target: &Target) -> Vec<String> {
    rule.authorizations
        .iter()
        .filter(|a| match (a, target) {
            (Authorization::Project { project_id, .. }, Target::Project(p)) => project_id == p,
            (Authorization::Domain { domain_id, .. }, Target::Domain(d)) => domain_id == d,
            (Authorization::System { .. }, Target::System) => true,
            _ => false,
        })
        .flat_map(|a| a.roles().iter().map(|r| r.id.clone()))
        .collect()
}

/// What a mapped principal holds on `target` through its mapping: the rule's roles there,
/// the direct grants there of `groups` (a virtual user's bound groups; `group_grants` when
/// the relationship store already answered for them), and every role those imply; only
/// global roles that exist.
pub fn roles_on(
    view: &impl Reader,
    rule: &MappingRule,
    groups: &[String],
    group_grants: Option<Vec<String>>,
    target: &Target,
) -> idnode_storage::Result<BTreeSet<String>> {
    let mut ids = rule_roles_on(rule, target);
    match group_grants {
        Some(granted) => ids.extend(granted),
        None => {
            for g in groups {
                let f = Filter { group: Some(g.clone()), target: Some(target.clone()), ..Filter::default() };
                ids.extend(listing::list(view, &f)?.into_iter().map(|e| e.role_id));
            }
        }
    }
    let mut out = BTreeSet::new();
    for id in listing::implied_closure(view, &ids)? {
        if view.role(&id)?.is_some_and(|r| r.domain_id.is_none()) {
            out.insert(id);
        }
    }
    Ok(out)
}
