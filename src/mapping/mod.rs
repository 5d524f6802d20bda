//! Mapping rulesets (issue 9): external identities (OIDC, Kubernetes, SPIFFE) become users,
//! groups and authorizations. This part is the model, the stateless write-time validation
//! and the pure evaluation engine; the API, storage and logins build on it.
#![allow(dead_code)] // the mapping API and federation logins that call this arrive with the rest of issue 9

pub mod engine;
pub mod model;
pub mod regex_cache;
pub mod template;
pub mod validate;

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
