//! Mapping rulesets (issue 9, api-shapes §12), in the `mappings` column family keyed by
//! `mapping_id`, and the one command that changes them. A ruleset travels and is kept as
//! its JSON text (`MappingRuleSet::to_stored`): postcard cannot read its tagged enums back.
//! Listing by domain filters the records' plain `domain_id` (no secondary index: rulesets
//! are few, and only administration lists them).

use serde::{Deserialize, Serialize};

/// Key layout of the `mappings` column family.
pub mod keys {
    pub const RULESET_PREFIX: &[u8] = b"r/";
    /// A counter every ruleset write or delete moves on: what caches of parsed rulesets key
    /// their entries by, so writes elsewhere (a SCIM create, a token revocation) keep them.
    pub const REVISION: &[u8] = b"rev";
    pub fn ruleset(mapping_id: &str) -> Vec<u8> {
        format!("r/{mapping_id}").into_bytes()
    }
}

/// A stored ruleset: the JSON text, with the fields lookups need outside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MappingRecord {
    pub mapping_id: String,
    /// `None`: a global ruleset (the claims-driven modes).
    pub domain_id: Option<String>,
    /// `MappingRuleSet::to_stored`, with its `ruleset_version` set.
    pub ruleset: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum MappingCommand {
    /// Creates (`create`: the id must be free) or replaces (it must exist, unchanged since
    /// `expected_version` when given) a ruleset. `ruleset` is its stored JSON, stamped by the
    /// service with a fresh `ruleset_version`. Apply refuses changing `domain_id`, replacing
    /// a system mapping (any stored rule with `is_system`), an unknown domain (404) and any
    /// unknown role id (422 `role_not_found`).
    Put { ruleset: String, create: bool, expected_version: Option<String> },
    /// Deletes a ruleset (system mappings included).
    Delete { id: String },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum MappingApplied {
    Done,
    Ruleset(MappingRecord),
}
