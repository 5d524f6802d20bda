//! API keys (issue 10; spec "API key (v4)", api-shapes §8): domain-owned bearer credentials
//! bound to a provider coordinate, for machine clients such as an IdP's SCIM provisioning.
//! `api` the administration, `secret` the bearer format and its keyed hash, `auth` what a use
//! checks (and the batched `last_used_at`), `simulate` the grant a key would get through the
//! mapping rulesets. State: `state::api_keys`.

mod api;
pub mod auth;
mod schemas;
pub mod secret;
pub mod simulate;

#[cfg(test)]
mod tests;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::context::Core;
use crate::mapped_auth::MappedAuth;
use crate::token::Tokens;

crate::http::openapi::feature_routes! {
    /// The API key endpoints. The simulation reads the mapped logins' regex cache.
    pub fn routes() over [Core, Tokens, MappedAuth] {
        OpenApiRouter::new()
            .routes(routes!(api::list, api::create))
            .routes(routes!(api::get, api::update))
            .routes(routes!(api::revoke))
            .routes(routes!(api::simulate_access))
    }
}
