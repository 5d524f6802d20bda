//! Mapping rulesets (issue 9): external identities (OIDC, Kubernetes, SPIFFE) become users,
//! groups and authorizations. This part is the model, the stateless write-time validation
//! and the pure evaluation engine; the API, storage and logins build on it.

pub mod api;
mod checks;
pub mod cli;
pub mod engine;
pub mod model;
mod mutate;
pub mod regex_cache;
pub mod targets;
pub mod template;
pub mod validate;

#[cfg(test)]
mod api_tests;
#[cfg(test)]
mod cli_tests;
#[cfg(test)]
mod tests;

/// The spec's mapping error (status and detail key); it lives in the token layer, which
/// answers it when a mapped token's ruleset no longer stands.
pub use crate::token::MappingError;

/// A system mapping (any rule with `is_system`) is immutable: PUT and rule mutations are
/// refused (422 `system_mapping_immutable`); it can only be deleted.
pub fn is_system(rs: &model::MappingRuleSet) -> bool {
    rs.is_system()
}
