//! Token restrictions (issue 31; api-shapes §13.3): the administration of
//! `/v4/tokens/restrictions`. State: `state::restrictions`; what a restriction does to its
//! tokens: `token::restriction` (validation), `auth::restricted` (renewal and re-scoping by
//! the token method) and `mapped_auth::restricted` (a rule that names one).

mod api;
mod schemas;

#[cfg(test)]
mod cluster_tests;
#[cfg(test)]
mod tests;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::context::Core;
use crate::token::Tokens;

crate::http::openapi::feature_routes! {
    /// The token restriction endpoints.
    pub fn routes() over [Core, Tokens] {
        OpenApiRouter::new()
            .routes(routes!(api::list, api::create))
            .routes(routes!(api::get, api::update, api::delete))
    }
}
