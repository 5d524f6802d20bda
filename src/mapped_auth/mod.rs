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
//! - `confine`: what a login may reach (whose user, which groups and roles);
//! - `rulesets`: the live rulesets a provider's login evaluates (what a mapped token is worth
//!   at validation is the token layer's `token::rulesets`); `limits`: the per-provider rate
//!   limits.

pub mod browser;
mod confine;
pub mod limits;
pub mod login;
pub mod oidc;
mod principal;
pub mod rulesets;
pub mod schemas;
mod verified;
pub mod workloads;

#[cfg(test)]
mod cluster_tests;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::FromRef;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::config::{FederationSettings, ShadowRegistrySettings};
use crate::mapping::regex_cache::RegexCache;
use crate::providers::jwks::{JwksCache, DEFAULT_REFETCH_INTERVAL, DEFAULT_TTL};
use crate::providers::outbound::Outbound;
use crate::token::Tokens;

/// The node's state for mapped logins.
pub struct MappedAuth {
    /// What the node may reach when it calls a provider (`[federation]`).
    pub outbound: Arc<Outbound>,
    pub jwks: JwksCache,
    pub regexes: RegexCache,
    pub regex_deadline: Duration,
    pub auth_limit: limits::PerProvider,
    pub creation_limit: limits::PerProvider,
    /// The OIDC discovery documents of the browser flow's providers.
    pub discovery: browser::DiscoveryCache,
    /// IdP JWTs already verified (`verified`).
    pub verified: verified::VerifiedCache,
}

impl MappedAuth {
    pub fn new(s: &ShadowRegistrySettings, f: &FederationSettings) -> anyhow::Result<MappedAuth> {
        let outbound =
            Arc::new(Outbound::new(f.allow_private_networks, f.outbound_rate_limit).map_err(|e| anyhow::anyhow!(e))?);
        Ok(MappedAuth {
            jwks: JwksCache::new(DEFAULT_TTL, DEFAULT_REFETCH_INTERVAL, outbound.clone()),
            outbound,
            regexes: RegexCache::new(),
            regex_deadline: Duration::from_secs_f64(s.regex_timeout_ms / 1000.0),
            auth_limit: limits::PerProvider::new(s.auth_rate_limit, "authentications"),
            creation_limit: limits::PerProvider::new(s.creation_rate_limit, "new principals"),
            discovery: browser::DiscoveryCache::new(browser::MAX_DISCOVERY_DOCS),
            verified: verified::VerifiedCache::default(),
        })
    }

    pub fn housekeep(&self) {
        self.auth_limit.housekeep();
        self.creation_limit.housekeep();
        self.outbound.housekeep();
    }
}

pub fn routes<S>() -> OpenApiRouter<S>
where
    S: Clone + Send + Sync + 'static,
    Arc<Tokens>: FromRef<S>,
    Arc<MappedAuth>: FromRef<S>,
{
    OpenApiRouter::new()
        .routes(routes!(oidc::jwt_login))
        .routes(routes!(browser::start))
        .routes(routes!(browser::callback))
        .routes(routes!(workloads::k8s_login))
        .routes(routes!(workloads::spiffe_login))
}
