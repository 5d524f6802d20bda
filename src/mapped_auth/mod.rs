//! Authentication through mapping rulesets (issue 9; spec "Authentication" item 6, the
//! mapping rows of "Errors" and "Limits"): an identity an external provider vouches for
//! (an OIDC provider's JWT, directly or through the browser flow; a Kubernetes
//! service-account token; a SPIFFE JWT-SVID) becomes a Keystone token, authorized by what the
//! first matching rule grants.
//!
//! - `oidc`, `browser`, `workloads`: the endpoints, each verifying its kind of token;
//! - `login`: evaluation, principal, scope and minting, shared by all of them;
//! - `principal`: `local` (a real user, groups synced) and `ephemeral` (a virtual user in the
//!   shadow registry) principals, written only when something changed;
//! - `confine`: what a login may reach (whose user, which groups and roles); `restricted`: the
//!   token restriction a rule names;
//! - `rulesets`: the live rulesets a provider's login evaluates (what a mapped token is worth
//!   at validation is the token layer's `token::rulesets`); `limits`: the per-provider rate
//!   limits.

pub mod browser;
mod confine;
mod discovery;
pub mod limits;
pub mod login;
pub mod oidc;
mod principal;
mod refusal;
mod restricted;
pub mod rulesets;
pub mod schemas;
mod state;
mod verified;
pub mod workloads;

#[cfg(test)]
mod cluster_tests;
#[cfg(test)]
mod tests;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::token::Tokens;

pub use state::MappedAuth;

crate::http::openapi::feature_routes! {
    pub fn routes() over [Tokens, MappedAuth] {
        OpenApiRouter::new()
            .routes(routes!(oidc::jwt_login))
            .routes(routes!(browser::start))
            .routes(routes!(browser::callback))
            .routes(routes!(workloads::k8s_login))
            .routes(routes!(workloads::spiffe_login))
    }
}
