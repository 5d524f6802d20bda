//! The OAuth2 authorization server and OpenID Connect provider of every domain
//! (`/v4/oauth2/{domain_id}`): signing keys, the client registry, discovery and the key set.
//! Every state change (keys, clients, codes, device grants, refresh families, consents,
//! sessions, revocations) is a replicated command (`state::oauth2`), so any node finishes a flow
//! another node started and a revocation holds on every node once it returns.

pub mod authorize;
pub mod client_auth;
pub mod clients;
pub mod consents;
pub mod cutoff;
pub mod device;
pub mod discovery;
pub mod error;
pub mod exchange;
pub mod form;
pub mod html;
pub mod introspect;
pub mod issuer;
pub mod keys;
pub mod metrics;
pub mod page_state;
pub mod passkey_login;
pub mod password_login;
pub mod propose;
pub mod provider;
pub mod revocations;
pub mod revoke;
pub mod rotate_cli;
pub mod schedule;
pub mod schemas;
pub mod scopes;
pub mod secrets;
pub mod sessions;
pub mod token;
pub mod tokens;
pub mod userinfo;

#[cfg(test)]
mod tests;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use provider::Provider;

use crate::context::Core;
use crate::passkey::ceremony::RelyingParty;
use crate::token::Tokens;

crate::http::openapi::feature_routes! {
    /// Every operation of the provider, for the router and the OpenAPI description.
    pub fn routes() over [Core, Tokens, Provider, RelyingParty] {
        OpenApiRouter::new()
            .routes(routes!(discovery::openid_configuration))
            .routes(routes!(discovery::jwks))
            .routes(routes!(discovery::revoked_jtis))
            .routes(routes!(discovery::list_keys))
            .routes(routes!(discovery::rotate_keys))
            .routes(routes!(clients::list, clients::create))
            .routes(routes!(clients::get, clients::update, clients::delete))
            .routes(routes!(clients::rotate_secret))
            .routes(routes!(token::token))
            .routes(routes!(introspect::introspect))
            .routes(routes!(revoke::revoke))
            .routes(routes!(userinfo::get, userinfo::post))
            .routes(routes!(authorize::authorize))
            .routes(routes!(authorize::authorize_consent))
            .routes(routes!(passkey_login::passkey_start))
            .routes(routes!(passkey_login::passkey_login))
            .routes(routes!(password_login::authorize_login))
            .routes(routes!(password_login::device_login))
            .routes(routes!(device::device_authorization))
            .routes(routes!(device::device_page))
            .routes(routes!(device::device_consent))
            .routes(routes!(consents::list))
            .routes(routes!(consents::delete))
            .routes(routes!(sessions::list, sessions::delete_all))
            .routes(routes!(sessions::delete))
    }
}
