//! SCIM realms (spec "SCIM realm and resource index", api-shapes §11.10): one per provider
//! coordinate (`domain_id`, `provider_id`), naming the identity provider (`idp_id`, an OIDC
//! provider of the registry) whose mapping ruleset grants the realm's API keys their roles.
//! In the `scim` column family; times are unix seconds stamped by the service.

use serde::{Deserialize, Serialize};

/// Key layouts of the `scim` column family.
pub mod keys {
    pub const REALM_PREFIX: &[u8] = b"r/";
    pub fn realm(domain_id: &str, provider_id: &str) -> Vec<u8> {
        format!("r/{domain_id}/{provider_id}").into_bytes()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScimRealm {
    pub domain_id: String,
    pub provider_id: String,
    pub idp_id: String,
    pub display_name: String,
    pub enabled: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ScimCommand {
    /// Creates (`create`: the coordinate must be free, the domain exist) or replaces a realm;
    /// its `idp_id` must name a registered OIDC identity provider (404 otherwise).
    PutRealm { realm: Box<ScimRealm>, create: bool },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ScimApplied {
    Realm(Box<ScimRealm>),
}
