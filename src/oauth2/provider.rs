//! The provider's per-node state: parsed key sets and revocation lists cached per state
//! version, metrics, and the per-client introspection limit.

use std::sync::Arc;

use super::error::OAuthError;
use super::keys::DomainKeys;
use super::metrics::OAuth2Metrics;
use super::revocations::{self, RevokedList};
use crate::token::AppliedCache;

/// Per-node state of the provider: parsed key sets, cached per state version.
pub struct Provider {
    pub keys: AppliedCache<String, Arc<DomainKeys>>,
    /// The last parsed key set of each domain, kept across writes that do not change it.
    pub parsed_keys: std::sync::Mutex<std::collections::HashMap<String, Arc<DomainKeys>>>,
    pub metrics: OAuth2Metrics,
    /// Each domain's published revocation list, per state version.
    pub revoked: AppliedCache<String, Arc<RevokedList>>,
    /// Introspection calls per client (the per-source limit is the router's).
    introspect_per_client: Option<governor::DefaultKeyedRateLimiter<String>>,
}

impl Provider {
    pub fn new(per_second: u32, burst: u32, caches: &crate::http::cache_metrics::CacheMetrics) -> Self {
        // One process-wide choice of JWT backend (RustCrypto: no C build); a second install
        // (tests building several nodes) is refused harmlessly.
        let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
        let introspect_per_client = std::num::NonZeroU32::new(per_second).map(|rate| {
            let burst = std::num::NonZeroU32::new(burst).unwrap_or(rate);
            governor::RateLimiter::keyed(governor::Quota::per_second(rate).allow_burst(burst))
        });
        Provider {
            keys: AppliedCache::new(1024).observed(caches.stats("oauth2_signing_keys")),
            parsed_keys: Default::default(),
            metrics: OAuth2Metrics::default(),
            revoked: AppliedCache::with_budget(
                revocations::CACHED_DOMAINS,
                revocations::CACHED_BYTES,
                revocations::footprint,
            )
            .observed(caches.stats("oauth2_jti_revocations")),
            introspect_per_client,
        }
    }

    /// Counts an introspection against the client's own bucket.
    pub fn limit_client(&self, client_id: &str) -> Result<(), OAuthError> {
        let Some(limiter) = &self.introspect_per_client else { return Ok(()) };
        limiter.check_key(&client_id.to_string()).map_err(|not_until| {
            use governor::clock::{Clock, DefaultClock};
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            OAuthError::rate_limited(wait.as_secs().max(1))
        })
    }

    /// Forgets idle clients' buckets.
    pub fn housekeep(&self) {
        if let Some(l) = &self.introspect_per_client {
            l.retain_recent();
            l.shrink_to_fit();
        }
    }
}

/// What an endpoint of one domain's provider extracts first, in this order: the core
/// context, the provider's per-node state, and the domain of the path (`{domain_id}`).
pub struct DomainEndpoint(pub Arc<crate::context::Core>, pub Arc<Provider>, pub String);

impl<S> axum::extract::FromRequestParts<S> for DomainEndpoint
where
    S: Send + Sync,
    Arc<crate::context::Core>: axum::extract::FromRef<S>,
    Arc<Provider>: axum::extract::FromRef<S>,
{
    type Rejection = axum::extract::rejection::PathRejection;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self, Self::Rejection> {
        use axum::extract::FromRef;
        let node = Arc::<crate::context::Core>::from_ref(state);
        let provider = Arc::<Provider>::from_ref(state);
        let axum::extract::Path(domain_id) = axum::extract::Path::<String>::from_request_parts(parts, state).await?;
        Ok(DomainEndpoint(node, provider, domain_id))
    }
}
