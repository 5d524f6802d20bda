//! Application metric families (HTTP, tokens, authentication). The policy engine and the raft
//! crate register their own series into the same registry.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

pub type Labels = Vec<(&'static str, String)>;

pub fn labels(pairs: &[(&'static str, &str)]) -> Labels {
    pairs.iter().map(|(k, v)| (*k, v.to_string())).collect()
}

pub struct Metrics {
    pub http_requests: Family<Labels, Counter>,
    pub http_duration: Family<Labels, Histogram>,
    pub token_validations: Family<Labels, Counter>,
    pub tokens_issued: Family<Labels, Counter>,
    pub auth_attempts: Family<Labels, Counter>,
    pub rate_limited: Family<Labels, Counter>,
    /// Every cache's series (`cache_metrics`).
    pub caches: super::cache_metrics::CacheMetrics,
}

impl Metrics {
    pub fn new(registry: &mut Registry) -> Self {
        let m = Metrics {
            http_requests: Family::default(),
            http_duration: Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.0001, 2.5, 14))),
            token_validations: Family::default(),
            tokens_issued: Family::default(),
            auth_attempts: Family::default(),
            rate_limited: Family::default(),
            caches: Default::default(),
        };
        m.caches.register(registry);
        registry.register("idnode_http_requests", "HTTP requests by method, route and status", m.http_requests.clone());
        registry.register("idnode_http_request_duration_seconds", "HTTP request latency", m.http_duration.clone());
        registry.register("idnode_token_validations", "Token validations by result", m.token_validations.clone());
        registry.register("idnode_tokens_issued", "Tokens issued by scope kind", m.tokens_issued.clone());
        registry.register(
            "idnode_auth_attempts",
            "Authentication attempts by method and result",
            m.auth_attempts.clone(),
        );
        registry.register("idnode_rate_limited", "Requests refused by a rate limit, by route", m.rate_limited.clone());
        m
    }
}
