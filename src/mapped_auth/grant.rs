//! What a token minted from a mapping rule is worth at validation (spec, Errors item 7 and
//! the paragraph after it). The token names its ruleset, rule and `ruleset_version`; each
//! validation re-reads the live ruleset and refuses, in this order:
//! - the ruleset is gone: 404 `mapping_not_found`;
//! - it is disabled: 403 `mapping_disabled`;
//! - the rule is gone: 403 `mapping_rule_removed` (the rule's name is not echoed);
//! - the ruleset changed in any other way: 401 `ruleset_version_mismatch` (neither version
//!   is echoed).
//!
//! Every ruleset write stamps a fresh version, so the last check alone would refuse every
//! stale token; the first three come first so the answer says why. A version that matches
//! means the rule is exactly what it was at issuance, so the roles are computed from the
//! live rule: its authorizations on the token's target, plus (virtual users) the direct
//! grants of the groups the shadow record binds, plus every role those imply. A local user
//! also holds its own assignments (its synced groups included), like any user.

use std::collections::BTreeSet;

use crate::assignment::listing::{self, Filter};
use crate::mapping::model::{Authorization, MappingRule};
use crate::mapping::MappingError;
use crate::state::model::{Target, User};
use crate::state::shadow::{keys, VirtualUserMetadata};
use crate::state::{cf, Reader};
use crate::token::{MappedGrant, Tokens};

/// The live rule a token was minted from, or why the token no longer stands.
pub fn live_rule(node: &Tokens, m: &MappedGrant) -> idnode_storage::Result<Result<MappingRule, MappingError>> {
    let Some(live) = super::rulesets::one(node, &m.mapping_id)? else {
        return Ok(Err(MappingError::new(404, "mapping_not_found", "The token's mapping ruleset no longer exists.")));
    };
    if !live.rs.enabled {
        return Ok(Err(MappingError::new(403, "mapping_disabled", "The token's mapping ruleset is disabled.")));
    }
    let Some(rule) = live.rs.rules.iter().find(|r| r.name == m.rule_name) else {
        return Ok(Err(MappingError::new(
            403,
            "mapping_rule_removed",
            "The mapping rule the token was issued by has been removed.",
        )));
    };
    if live.version != m.ruleset_version {
        return Ok(Err(MappingError::new(
            401,
            "ruleset_version_mismatch",
            "The mapping ruleset changed since the token was issued.",
        )));
    }
    Ok(Ok(rule.clone()))
}

/// A virtual user's shadow record and the user it stands for in a token.
pub fn virtual_user(view: &impl Reader, user_id: &str) -> idnode_storage::Result<Option<(User, VirtualUserMetadata)>> {
    let Some(r) = view.get::<VirtualUserMetadata>(cf::SHADOW, &keys::record(user_id))? else { return Ok(None) };
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
/// the direct grants there of `groups` (a virtual user's bound groups), and every role
/// those imply; only global roles that exist.
pub fn roles_on(
    view: &impl Reader,
    rule: &MappingRule,
    groups: &[String],
    target: &Target,
) -> idnode_storage::Result<BTreeSet<String>> {
    let mut ids = rule_roles_on(rule, target);
    for g in groups {
        let f = Filter { group: Some(g.clone()), target: Some(target.clone()), ..Filter::default() };
        ids.extend(listing::list(view, &f)?.into_iter().map(|e| e.role_id));
    }
    let mut out = BTreeSet::new();
    for id in listing::implied_closure(view, &ids)? {
        if view.role(&id)?.is_some_and(|r| r.domain_id.is_none()) {
            out.insert(id);
        }
    }
    Ok(out)
}
