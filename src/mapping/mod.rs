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
