//! The live mapping rulesets, parsed once per applied state (`AppliedCache`), and what a token
//! minted from a mapping rule is worth at validation. Both live in the token layer because
//! validation needs them; mapped logins (`mapped_auth`) and API keys evaluate the same cache.
//! A change anywhere in the state drops the cache, so a token or login never sees a ruleset
//! older than what this node has applied.
//!
//! A mapped token (spec, Errors item 7 and the paragraph after it) names its ruleset, rule
//! and `ruleset_version`; each validation re-reads the live ruleset and refuses, in this order:
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

use std::fmt;
use std::sync::Arc;

use super::payload::MappedGrant;
use super::validate::Tokens;
use crate::state::mapping::MappingRecord;
use crate::state::read::MappingReads;
use crate::state::ruleset::{MappingRule, MappingRuleSet};
use crate::state::Reader;

/// A mapping error with the spec's HTTP status and detail key (Errors item 7), the key
/// without its `detail.` prefix: the API layer puts it in the body's `detail` field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MappingError {
    pub status: u16,
    pub key: &'static str,
    pub message: String,
}

impl MappingError {
    pub fn new(status: u16, key: &'static str, message: impl Into<String>) -> Self {
        MappingError { status, key, message: message.into() }
    }

    /// The write-time validation failures are all 422.
    pub fn invalid(key: &'static str, message: impl Into<String>) -> Self {
        Self::new(422, key, message)
    }
}

impl fmt::Display for MappingError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} (detail.{})", self.message, self.key)
    }
}

impl std::error::Error for MappingError {}

impl From<MappingError> for crate::http::ApiError {
    fn from(e: MappingError) -> Self {
        let status =
            axum::http::StatusCode::from_u16(e.status).unwrap_or(axum::http::StatusCode::INTERNAL_SERVER_ERROR);
        crate::http::ApiError::new(status, e.message).with_detail(e.key)
    }
}

/// A stored ruleset, parsed; `mapping_id` and `ruleset_version` are always set.
#[derive(Debug)]
pub struct Live {
    pub id: String,
    pub version: String,
    pub rs: MappingRuleSet,
}

fn parse(record: &MappingRecord) -> Option<Arc<Live>> {
    let rs = MappingRuleSet::from_stored(&record.ruleset).ok()?;
    let version = rs.ruleset_version.as_ref()?.to_string();
    Some(Arc::new(Live { id: record.mapping_id.clone(), version, rs }))
}

/// The rulesets' revision (`keys::REVISION`) in the state local reads see.
pub fn revision(view: &impl Reader) -> idnode_storage::Result<u64> {
    view.mappings_revision()
}

/// Every stored ruleset, in `mapping_id` order, parsed once per revision of the rulesets
/// (read from one view with them, so the two always agree).
pub fn all(tokens: &Tokens) -> idnode_storage::Result<Arc<Vec<Arc<Live>>>> {
    let view = tokens.engine.read();
    let rev = revision(&view)?;
    if let Some(all) = tokens.rulesets.get(&(), rev) {
        return Ok(all);
    }
    let records: Vec<MappingRecord> = view.mapping_records()?;
    let all = Arc::new(records.iter().filter_map(parse).collect::<Vec<_>>());
    tokens.rulesets.insert((), all.clone(), rev);
    Ok(all)
}

/// One ruleset as this node has applied it (token validation: parsing a ruleset per
/// validation cost more than the rest of it).
pub fn one(tokens: &Tokens, mapping_id: &str) -> idnode_storage::Result<Option<Arc<Live>>> {
    Ok(all(tokens)?.iter().find(|l| l.id == mapping_id).cloned())
}

/// The live rule a token was minted from, or why the token no longer stands.
pub fn live_rule(tokens: &Tokens, m: &MappedGrant) -> idnode_storage::Result<Result<MappingRule, MappingError>> {
    let Some(live) = one(tokens, &m.mapping_id)? else {
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
