//! SCIM v2 provisioning per realm (issue 10; spec "SCIM realm and resource index", the SCIM
//! and realm-administration endpoint tables, Authentication items 7–8; api-shapes §11).
//!
//! - `realms`: `/v4/scim-realms` administration and the purge path (normal tokens);
//! - `caller`: who a `/SCIM/v2/{domain_id}` request acts as (an API key through its realm);
//! - `resource`: what `/Users` and `/Groups` share (fencing, policy, paging, filters,
//!   writes); `users` and `groups`: the two resources and their attribute mappings;
//! - `filter`, `patch`: the restricted filter grammar and PATCH operations;
//! - `wire`: `application/scim+json`, the error envelope, ETags; `write`: every write's rate
//!   limit, raft command and audit event; `discovery`: the static documents;
//! - the state lives in `state::scim` (apply: `state::apply::scim`), the janitor in
//!   `jobs::scim`.

pub mod caller;
pub mod discovery;
pub mod filter;
pub mod groups;
pub mod patch;
pub mod realms;
pub mod resource;
pub mod schemas;
pub mod users;
mod values;
pub mod wire;
mod write;

#[cfg(test)]
mod cluster_tests;
#[cfg(test)]
mod endpoint_tests;
#[cfg(test)]
mod guard_tests;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use utoipa_axum::router::OpenApiRouter;

use crate::api_keys::simulate::Matched;
use crate::config::ScimSettings;
use crate::mapped_auth::limits::PerProvider;
use crate::node::AppState;
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
    pub fn new(s: &ScimSettings) -> Scim {
        Scim {
            write_limit: PerProvider::new(s.write_rate_limit, "SCIM writes"),
            grants: AppliedCache::new(1024),
            callers: AppliedCache::new(1024),
        }
    }
}

pub fn routes() -> OpenApiRouter<AppState> {
    realms::routes().merge(users::routes()).merge(groups::routes()).merge(discovery::routes())
}

/// Whether a request path is a SCIM one (its errors are SCIM envelopes).
pub fn is_scim_path(path: &str) -> bool {
    path.starts_with("/SCIM/v2/")
}
