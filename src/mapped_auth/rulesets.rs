//! The live rulesets a login evaluates and a mapped token is checked against, parsed once per
//! applied state (`AppliedCache`): a change anywhere in the state drops the cache, so a token
//! or login never sees a ruleset older than what this node has applied.

use std::sync::Arc;

use crate::http::error::{ApiError, ApiResult};
use crate::mapping::model::MappingRuleSet;
use crate::mapping::targets;
use crate::mapping::MappingError;
use crate::state::mapping::MappingRecord;
use crate::state::providers::Provider;
use crate::state::read::MappingReads;
use crate::state::Reader;
use crate::token::Tokens;

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
pub fn all(node: &Tokens) -> idnode_storage::Result<Arc<Vec<Arc<Live>>>> {
    let view = node.engine.read();
    let rev = revision(&view)?;
    if let Some(all) = node.rulesets.get(&(), rev) {
        return Ok(all);
    }
    let records: Vec<MappingRecord> = view.mapping_records()?;
    let all = Arc::new(records.iter().filter_map(parse).collect::<Vec<_>>());
    node.rulesets.insert((), all.clone(), rev);
    Ok(all)
}

/// One ruleset as this node has applied it (token validation: parsing a ruleset per
/// validation cost more than the rest of it).
pub fn one(node: &Tokens, mapping_id: &str) -> idnode_storage::Result<Option<Arc<Live>>> {
    Ok(all(node)?.iter().find(|l| l.id == mapping_id).cloned())
}

/// Whether a ruleset takes its identities from `p`: its `source` names it (by id; a SPIFFE
/// trust domain's name only for a record of the ruleset's own domain) and the provider may
/// feed it (never one domain's provider into another domain's ruleset: `targets`).
pub fn names(rs: &MappingRuleSet, p: &Provider) -> bool {
    let domain = rs.domain_id.as_deref();
    targets::names(&rs.source, domain, p) && targets::feeds(p, domain)
}

/// The enabled rulesets whose source is `p`, in `mapping_id` order: a login tries them in
/// turn and the first rule that matches in any of them wins. None at all is 404
/// `mapping_not_found`.
pub fn for_provider(node: &Tokens, p: &Provider) -> ApiResult<Vec<Arc<Live>>> {
    let found: Vec<Arc<Live>> = all(node)?.iter().filter(|l| names(&l.rs, p)).cloned().collect();
    if found.is_empty() {
        return Err(MappingError::new(404, "mapping_not_found", "No mapping ruleset names this provider.").into());
    }
    let enabled: Vec<Arc<Live>> = found.into_iter().filter(|l| l.rs.enabled).collect();
    if enabled.is_empty() {
        return Err(
            MappingError::new(403, "mapping_disabled", "Every mapping ruleset of this provider is disabled.").into()
        );
    }
    Ok(enabled)
}

/// 401 for a login whose identity no rule maps.
pub fn no_rule_matched() -> ApiError {
    ApiError::unauthorized("No mapping rule matches the presented identity.")
}
