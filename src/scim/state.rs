//! The node's SCIM state: write limits and the caches every resource shares.

use std::sync::Arc;

use super::caller;
use crate::api_keys::simulate::Matched;
use crate::config::ScimSettings;
use crate::http::cache_metrics::CacheMetrics;
use crate::mapped_auth::limits::PerProvider;
use crate::token::AppliedCache;

/// The node's SCIM state.
pub struct Scim {
    /// SCIM writes per provider (`[keystone] scim_realm_write_rate_limit`).
    pub write_limit: PerProvider,
    /// What each key's realm ruleset matched (`None`: nothing), per rulesets revision.
    pub grants: AppliedCache<(String, String), Option<Arc<Matched>>>,
    /// What a key (by secret hash) resolved to for a domain, per applied state.
    pub callers: AppliedCache<(String, String), Arc<caller::Resolved>>,
}

impl Scim {
    pub fn new(s: &ScimSettings, caches: &CacheMetrics) -> Scim {
        Scim {
            write_limit: PerProvider::new(s.write_rate_limit, "scim_realm_write_rate_limit", "SCIM writes"),
            grants: AppliedCache::new(1024).observed(caches.stats("scim_realm_grants")),
            callers: AppliedCache::new(1024).observed(caches.stats("scim_api_key_resolution")),
        }
    }
}
