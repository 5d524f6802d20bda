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
mod state;
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

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use caller::KeyChecks;
pub use state::Scim;

use crate::context::Core;
use crate::http::client_ip::TrustedProxies;
use crate::token::Tokens;

crate::http::openapi::feature_routes! {
    /// Every SCIM operation: realm administration (tokens), the resources (API keys) and the
    /// static documents.
    pub fn routes() over [Core, Tokens, Scim, dyn KeyChecks] + TrustedProxies {
        OpenApiRouter::new()
            .routes(routes!(realms::list, realms::create))
            .routes(routes!(realms::get, realms::patch))
            .routes(routes!(realms::purge))
            .routes(routes!(users::list, users::create))
            .routes(routes!(users::get, users::put, users::patch, users::delete))
            .routes(routes!(groups::list, groups::create))
            .routes(routes!(groups::get, groups::put, groups::patch, groups::delete))
            .routes(routes!(discovery::service_provider_config))
            .routes(routes!(discovery::schemas))
            .routes(routes!(discovery::schema))
            .routes(routes!(discovery::resource_types))
            .routes(routes!(discovery::resource_type))
            .routes(routes!(discovery::bulk))
            .routes(routes!(discovery::search))
            .routes(routes!(
                discovery::scim_me_get,
                discovery::scim_me_post,
                discovery::scim_me_put,
                discovery::scim_me_patch,
                discovery::scim_me_delete
            ))
    }
}

/// Whether a request path is a SCIM one (its errors are SCIM envelopes).
pub fn is_scim_path(path: &str) -> bool {
    path.starts_with("/SCIM/v2/")
}
