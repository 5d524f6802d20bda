//! The node's state for mapped logins (what every endpoint and the principals share).

use std::sync::Arc;
use std::time::Duration;

use super::discovery::{DiscoveryCache, MAX_DISCOVERY_DOCS};
use super::{limits, verified};
use crate::config::{FederationSettings, ShadowRegistrySettings};
use crate::http::cache_metrics::CacheMetrics;
use crate::mapping::regex_cache::RegexCache;
use crate::providers::jwks::{JwksCache, DEFAULT_REFETCH_INTERVAL, DEFAULT_TTL};
use crate::providers::outbound::Outbound;

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
    pub discovery: DiscoveryCache,
    /// IdP JWTs already verified (`verified`).
    pub verified: verified::VerifiedCache,
    /// `[federation] default_authorization_ttl`, minutes (0: none).
    pub default_authorization_ttl: u32,
}

impl MappedAuth {
    pub fn new(
        s: &ShadowRegistrySettings,
        f: &FederationSettings,
        caches: &CacheMetrics,
    ) -> anyhow::Result<MappedAuth> {
        let outbound =
            Arc::new(Outbound::new(f.allow_private_networks, f.outbound_rate_limit).map_err(|e| anyhow::anyhow!(e))?);
        Ok(MappedAuth {
            jwks: JwksCache::new(DEFAULT_TTL, DEFAULT_REFETCH_INTERVAL, outbound.clone())
                .observed(caches.stats("jwks")),
            outbound,
            regexes: RegexCache::new().observed(caches.stats("regex")),
            regex_deadline: Duration::from_secs_f64(s.regex_timeout_ms / 1000.0),
            auth_limit: limits::PerProvider::new(
                s.auth_rate_limit,
                "shadow_registry_auth_rate_limit",
                "authentications",
            ),
            creation_limit: limits::PerProvider::new(
                s.creation_rate_limit,
                "shadow_registry_creation_rate_limit",
                "new principals",
            ),
            discovery: DiscoveryCache::new(MAX_DISCOVERY_DOCS).observed(caches.stats("oidc_discovery")),
            verified: verified::VerifiedCache::default().observed(caches.stats("verified_jwt")),
            default_authorization_ttl: f.default_authorization_ttl,
        })
    }

    pub fn housekeep(&self) {
        self.auth_limit.housekeep();
        self.creation_limit.housekeep();
        self.outbound.housekeep();
    }
}
