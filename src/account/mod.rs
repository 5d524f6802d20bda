//! The account page of every domain (`/v4/account/{domain_id}`): a user signs in with a
//! password or a passkey and manages their passkeys, password, the applications they allowed,
//! their application sessions and their application credentials.
//!
//! The page holds no authority of its own. Signing in gets the user's own token from the API,
//! and every action is the API operation a client would call, sent in-process through the
//! same router with that token (`web::api`): the same policy, guard rails, validation and
//! rate limits decide. The page adds what a browser needs: a sealed session cookie, a CSRF
//! value per session, a same-origin check on every post, and an audit event per action.

pub mod audit;
pub mod consents;
pub mod credentials;
pub mod passkeys;
pub mod password;
pub mod session;
pub mod sessions;
pub mod signin;
pub mod templates;
pub mod visit;

#[cfg(test)]
mod tests;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::token::Tokens;

crate::http::openapi::feature_routes! {
    /// Every page and action of the account page.
    pub fn routes() over [Tokens] {
        OpenApiRouter::new()
            .routes(routes!(signin::show))
            .routes(routes!(signin::sign_in))
            .routes(routes!(signin::sign_in_expired))
            .routes(routes!(signin::passkey_start))
            .routes(routes!(signin::passkey_sign_in))
            .routes(routes!(signin::sign_out))
            .routes(routes!(passkeys::page))
            .routes(routes!(passkeys::register_start))
            .routes(routes!(passkeys::register_finish))
            .routes(routes!(passkeys::rename))
            .routes(routes!(passkeys::remove))
            .routes(routes!(password::page, password::change))
            .routes(routes!(consents::page))
            .routes(routes!(consents::revoke))
            .routes(routes!(sessions::page))
            .routes(routes!(sessions::end))
            .routes(routes!(sessions::end_all))
            .routes(routes!(credentials::page, credentials::create))
            .routes(routes!(credentials::delete))
    }
}
