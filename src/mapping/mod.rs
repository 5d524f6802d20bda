//! Mapping rulesets (issue 9): external identities (OIDC, Kubernetes, SPIFFE) become users,
//! groups and authorizations. This part is the model, the stateless write-time validation
//! and the pure evaluation engine; the API, storage and logins build on it.

pub mod api;
mod checks;
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
mod tests;

use std::fmt;

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

/// Every `detail` key the mapping administration answers with: the spec's table (Errors
/// item 7) plus `domain_id_immutable` (a PUT that would move a ruleset to another domain,
/// which the spec refuses with 422 without naming a key) and `scim_realm_project_authorization`
/// (a project authorization for a provider with an active SCIM realm, likewise 422 unnamed)
/// and `user_mapping_unauthorized` (403: a rule or a login naming a user it may not become).
pub const DETAIL_KEYS: &[&str] = &[
    "system_token_shadowing",
    "domain_claim_required",
    "domain_override_fixed_mode",
    "invalid_rule_name",
    "duplicate_rule_name",
    "regex_safety_violation",
    "shadow_registry_conflict",
    "group_not_found",
    "mapping_rule_removed",
    "mapping_disabled",
    "mapping_not_found",
    "system_mapping_immutable",
    "role_grant_unauthorized",
    "cross_domain_mapping",
    "group_assignment_unauthorized",
    "system_scope_requires_is_system",
    "domain_mapping_unauthorized",
    "domain_resolution_mode_requires_admin",
    "allowed_domains_required",
    "interpolated_value_too_long",
    "ruleset_version_mismatch",
    "role_not_found",
    "invalid_template",
    "domain_id_immutable",
    "scim_realm_project_authorization",
    "user_mapping_unauthorized",
];

/// The static form of a detail key that crossed the raft log as a string (`None`: unknown).
pub fn detail_key(key: &str) -> Option<&'static str> {
    DETAIL_KEYS.iter().find(|k| **k == key).copied()
}

impl From<MappingError> for crate::http::ApiError {
    fn from(e: MappingError) -> Self {
        let status =
            axum::http::StatusCode::from_u16(e.status).unwrap_or(axum::http::StatusCode::INTERNAL_SERVER_ERROR);
        crate::http::ApiError::new(status, e.message).with_detail(e.key)
    }
}

/// A system mapping (any rule with `is_system`) is immutable: PUT and rule mutations are
/// refused (422 `system_mapping_immutable`); it can only be deleted.
pub fn is_system(rs: &model::MappingRuleSet) -> bool {
    rs.is_system()
}
