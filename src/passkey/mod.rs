//! Passkeys (issue 12; spec "Passkey (v4)", Authentication item 4, api-shapes §9): WebAuthn
//! registration and login on webauthn-rs. `settings` the relying party's configuration,
//! `ceremony` the two ceremonies through raft, `wire` the bodies (upstream's snake_case and
//! the browser's spelling), `api` the endpoints. The OAuth2 sign-in page's passkey button is
//! in `oauth2::passkey_login`. State: `state::passkeys`.

mod api;
pub mod ceremony;
pub mod settings;
pub mod wire;

#[cfg(test)]
mod tests;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use ceremony::RelyingParty;

use crate::context::Core;
use crate::token::Tokens;

crate::http::openapi::feature_routes! {
    /// The passkey endpoints.
    pub fn routes() over [Core, Tokens, RelyingParty] {
        OpenApiRouter::new()
            .routes(routes!(api::start))
            .routes(routes!(api::finish))
            .routes(routes!(api::register_start))
            .routes(routes!(api::register_finish))
            .routes(routes!(api::list))
            .routes(routes!(api::update, api::delete))
    }
}
