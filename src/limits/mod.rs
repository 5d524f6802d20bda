//! Unified limits (Keystone's `/v3/registered_limits`, `/v3/limits`, `/v3/limits/model`):
//! the quotas services such as Nova read through oslo.limit. State: `state::limits`; the
//! rules are applied in `state::apply::limits`; the enforcement model is the node's
//! `[unified_limit] enforcement_model`.

mod limit;
mod registered;
mod render;
mod schemas;

#[cfg(test)]
mod tests;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::context::Core;
use crate::token::Tokens;

crate::http::openapi::feature_routes! {
    /// The unified limit endpoints.
    pub fn routes() over [Core, Tokens] {
        OpenApiRouter::new()
            .routes(routes!(registered::list, registered::create))
            .routes(routes!(registered::get, registered::update, registered::delete))
            .routes(routes!(limit::model))
            .routes(routes!(limit::list, limit::create))
            .routes(routes!(limit::get, limit::update, limit::delete))
    }
}
