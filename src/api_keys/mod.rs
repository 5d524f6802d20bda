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

use std::sync::Arc;

use axum::extract::FromRef;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::context::Core;
use crate::token::Tokens;

/// The API key endpoints. The simulation takes the whole node for the mapped logins' regex
/// cache.
pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Arc<Core>: FromRef<S>,
    Arc<Tokens>: FromRef<S>,
    Arc<crate::serve::node::Node>: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(api::list, api::create))
        .routes(routes!(api::get, api::update))
        .routes(routes!(api::revoke))
        .routes(routes!(api::simulate_access))
}
