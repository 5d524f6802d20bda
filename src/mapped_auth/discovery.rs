//! The OIDC discovery documents of the browser flow's providers, cached per issuer.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::refusal::refused;
use crate::http::cache_metrics::CacheStats;
use crate::http::error::{ApiError, ApiResult};
use crate::providers::jwks::read_capped;
use crate::providers::outbound::Outbound;
use crate::providers::verify::VerifyError;

pub const DISCOVERY_TTL: Duration = Duration::from_secs(3600);
/// How long a failed discovery is remembered (logins in it fail without a new request).
pub const DISCOVERY_RETRY: Duration = Duration::from_secs(10);
/// Issuers whose discovery documents are kept at most.
pub const MAX_DISCOVERY_DOCS: usize = 1024;
/// Largest answer read from a provider.
pub const MAX_RESPONSE: usize = 256 * 1024;

/// The endpoints of a provider's discovery document.
#[derive(Clone, Deserialize)]
pub struct Discovery {
    issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
}

/// What is known of one issuer's discovery: the document or a failure, when it was learnt
/// and when it was last asked for.
struct Known {
    at: Instant,
    /// A use counter: the least recently used has the smallest.
    used: u64,
    doc: Option<Discovery>,
}

pub struct DiscoveryCache {
    docs: Mutex<HashMap<String, Known>>,
    uses: std::sync::atomic::AtomicU64,
    max: usize,
    stats: CacheStats,
}

pub fn unreachable(why: impl std::fmt::Display) -> ApiError {
    refused(VerifyError::KeySetUnavailable(why.to_string()))
}

/// An https URL (plain http only to a loopback host), as the provider's endpoints must be.
fn endpoint_ok(u: &str) -> bool {
    crate::oauth2::clients::valid_redirect_uri(u)
}

impl DiscoveryCache {
    /// A cache of at most `max` issuers.
    pub fn new(max: usize) -> DiscoveryCache {
        DiscoveryCache {
            docs: Mutex::new(HashMap::new()),
            uses: Default::default(),
            max: max.max(1),
            stats: CacheStats::default(),
        }
    }

    /// Reports hits, misses (a fetch was due) and what it holds (issuers, endpoint bytes).
    pub fn observed(mut self, stats: CacheStats) -> Self {
        self.stats = stats;
        self
    }

    fn tick(&self) -> u64 {
        self.uses.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }

    /// How many issuers are remembered.
    #[cfg(test)]
    pub fn remembered(&self) -> usize {
        self.docs.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// The cached answer while it holds: a document for [`DISCOVERY_TTL`], a failure for
    /// [`DISCOVERY_RETRY`].
    fn cached(&self, issuer: &str) -> Option<ApiResult<Discovery>> {
        let mut docs = self.docs.lock().unwrap_or_else(|p| p.into_inner());
        let k = docs.get_mut(issuer)?;
        let live = match &k.doc {
            Some(_) => k.at.elapsed() < DISCOVERY_TTL,
            None => k.at.elapsed() < DISCOVERY_RETRY,
        };
        if !live {
            return None;
        }
        k.used = self.tick();
        Some(k.doc.clone().ok_or_else(|| unreachable("the discovery document failed recently")))
    }

    fn remember(&self, issuer: &str, doc: Option<Discovery>) {
        let mut docs = self.docs.lock().unwrap_or_else(|p| p.into_inner());
        if !docs.contains_key(issuer) && docs.len() >= self.max {
            if let Some(lru) = docs.iter().min_by_key(|(_, k)| k.used).map(|(i, _)| i.clone()) {
                docs.remove(&lru);
            }
        }
        docs.insert(issuer.to_string(), Known { at: Instant::now(), used: self.tick(), doc });
        let bytes = docs
            .iter()
            .map(|(i, k)| {
                i.len()
                    + k.doc
                        .as_ref()
                        .map_or(0, |d| d.issuer.len() + d.authorization_endpoint.len() + d.token_endpoint.len())
            })
            .sum();
        self.stats.holds(docs.len(), bytes);
    }

    pub async fn get(&self, outbound: &Outbound, issuer: &str) -> ApiResult<Discovery> {
        if let Some(answer) = self.stats.lookup(self.cached(issuer)) {
            return answer;
        }
        let fetched = fetch_discovery(outbound, issuer).await;
        self.remember(issuer, fetched.as_ref().ok().cloned());
        fetched.map_err(unreachable)
    }
}

async fn fetch_discovery(outbound: &Outbound, issuer: &str) -> Result<Discovery, String> {
    let url = format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/'));
    let client = outbound.client();
    let mut resp = outbound.send(client, client.get(url)).await?;
    if !resp.status().is_success() {
        return Err(format!("discovery answered {}", resp.status()));
    }
    let body = read_capped(&mut resp, MAX_RESPONSE).await?;
    let d: Discovery = serde_json::from_slice(&body).map_err(|_| "the discovery document is not valid".to_string())?;
    if d.issuer != issuer || !endpoint_ok(&d.authorization_endpoint) || !endpoint_ok(&d.token_endpoint) {
        return Err("the discovery document names another issuer or an insecure endpoint".into());
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use std::sync::Arc;

    use axum::http::StatusCode;

    use super::*;

    fn doc(issuer: &str) -> Discovery {
        Discovery {
            issuer: issuer.into(),
            authorization_endpoint: format!("{issuer}/authorize"),
            token_endpoint: format!("{issuer}/token"),
        }
    }

    #[test]
    fn the_discovery_cache_keeps_a_bounded_number_of_issuers() {
        let cache = DiscoveryCache::new(2);
        let issuer = |i: usize| format!("https://idp{i}.example");
        cache.remember(&issuer(1), Some(doc(&issuer(1))));
        for i in 2..50 {
            cache.remember(&issuer(i), Some(doc(&issuer(i))));
            assert!(cache.cached(&issuer(1)).is_some(), "issuer 1, used all along, stays");
        }
        assert_eq!(cache.remembered(), 2);
        assert!(cache.cached(&issuer(49)).is_some() && cache.cached(&issuer(2)).is_none());
    }

    /// A failed discovery is remembered: logins right after it do not ask the provider again.
    #[tokio::test]
    async fn a_failed_discovery_is_not_retried_at_once() {
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        let app = axum::Router::new().route(
            "/.well-known/openid-configuration",
            axum::routing::get(move || {
                h.fetch_add(1, Ordering::SeqCst);
                async { (StatusCode::INTERNAL_SERVER_ERROR, "upstream detail") }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let outbound = Outbound::permissive();
        let cache = DiscoveryCache::new(MAX_DISCOVERY_DOCS);
        for _ in 0..5 {
            let err = cache.get(&outbound, &issuer).await.err().expect("refused");
            assert_eq!(err.status, StatusCode::SERVICE_UNAVAILABLE);
            assert!(!err.message.contains("500") && !err.message.contains("upstream"), "{}", err.message);
        }
        assert_eq!(hits.load(Ordering::SeqCst), 1, "one request for five logins");
    }
}
