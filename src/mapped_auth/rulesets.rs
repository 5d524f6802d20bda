//! The rulesets a login through a provider evaluates: the token layer's live rulesets
//! (`token::rulesets`, parsed once per applied state) whose source names the provider.

use std::sync::Arc;

use crate::http::error::{ApiError, ApiResult};
use crate::mapping::model::MappingRuleSet;
use crate::mapping::targets;
use crate::mapping::MappingError;
use crate::state::providers::Provider;
use crate::token::Tokens;

pub use crate::token::rulesets::{all, Live};

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
