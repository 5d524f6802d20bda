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

use crate::mapping::model::MappingRule;
use crate::mapping::MappingError;
use crate::token::{MappedGrant, Tokens};

pub use crate::reads::mapped::as_user;

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
