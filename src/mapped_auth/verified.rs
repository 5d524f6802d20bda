//! A per-node cache of external JWTs already verified (Envoy's JWT cache, in spirit): a
//! workload presents the same token for its whole life, and checking its ECDSA or RSA
//! signature again on every login was the largest single cost of a login.
//!
//! An entry is keyed by SHA-256 of the provider's verification settings (id, issuer,
//! audience, key-set URI) and the token, so a changed provider never finds an old entry. It
//! lives until the token's `exp` (plus the verifier's leeway) and at most [`MAX_AGE`], the key
//! set's own cache lifetime: a key the IdP withdraws stops being trusted here no later than
//! the key-set cache would stop trusting it. Only successes are cached; the whole map is
//! dropped when it is full (entries are cheap to recompute).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::http::cache_metrics::CacheStats;
use crate::providers::jwks::DEFAULT_TTL;
use crate::providers::verify::{Claims, LEEWAY_SECS};
use crate::state::providers::OidcProvider;

/// Longest time an entry is trusted: the key-set cache's lifetime.
pub const MAX_AGE: Duration = DEFAULT_TTL;
/// Entries held at most.
pub const CAPACITY: usize = 10_000;

/// Key hash → (trusted until, claims).
type Entries = HashMap<[u8; 32], (Instant, Arc<Claims>)>;

#[derive(Default)]
pub struct VerifiedCache {
    map: Mutex<Entries>,
    stats: CacheStats,
}

fn key(provider_id: &str, idp: &OidcProvider, token: &str) -> [u8; 32] {
    let mut h = Sha256::new();
    for part in [provider_id, &idp.issuer, &idp.client_id, &idp.jwks_uri, token] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part.as_bytes());
    }
    h.finalize().into()
}

/// Approximate bytes of verified claims: their names and string values.
fn claims_bytes(c: &Claims) -> usize {
    c.iter().map(|(k, v)| k.len() + v.as_str().map_or(16, str::len)).sum()
}

impl VerifiedCache {
    /// Reports hits, misses and what it holds (entries; bytes: their keys, claims unsized).
    pub fn observed(mut self, stats: CacheStats) -> Self {
        self.stats = stats;
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The claims of `token` if it verified for this provider and is still within its life.
    pub fn get(&self, provider_id: &str, idp: &OidcProvider, token: &str) -> Option<Arc<Claims>> {
        let k = key(provider_id, idp, token);
        let mut map = self.lock();
        let found = match map.get(&k) {
            Some((until, claims)) if Instant::now() < *until => Some(claims.clone()),
            Some(_) => {
                map.remove(&k);
                None
            }
            None => None,
        };
        self.stats.lookup(found)
    }

    /// Remembers a verified token; `now` is unix seconds (its `exp` is compared with it).
    pub fn put(&self, provider_id: &str, idp: &OidcProvider, token: &str, claims: Arc<Claims>, now: i64) {
        let Some(exp) = claims.get("exp").and_then(serde_json::Value::as_i64) else { return };
        let left = exp.saturating_add(LEEWAY_SECS).saturating_sub(now);
        if left <= 0 {
            return;
        }
        let life = Duration::from_secs(left as u64).min(MAX_AGE);
        let mut map = self.lock();
        if map.len() >= CAPACITY {
            map.clear();
        }
        map.insert(key(provider_id, idp, token), (Instant::now() + life, claims));
        let bytes = map.values().map(|(_, c)| 32 + claims_bytes(c)).sum();
        self.stats.holds(map.len(), bytes);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn idp(issuer: &str) -> OidcProvider {
        OidcProvider {
            issuer: issuer.into(),
            client_id: "c".into(),
            client_secret: None,
            jwks_uri: "https://i/jwks".into(),
            allowed_redirect_uris: vec![],
            oidc_scopes: vec![],
            token_endpoint_auth_method: None,
        }
    }

    fn claims(exp: i64) -> Arc<Claims> {
        Arc::new(json!({"sub": "s", "exp": exp}).as_object().unwrap().clone())
    }

    #[test]
    fn entries_are_per_provider_settings_and_never_outlive_the_token() {
        let cache = VerifiedCache::default();
        let a = idp("https://a");
        cache.put("p", &a, "tok", claims(1_000), 500);
        assert!(cache.get("p", &a, "tok").is_some());
        assert!(cache.get("p", &a, "other").is_none());
        assert!(cache.get("q", &a, "tok").is_none(), "another provider id");
        assert!(cache.get("p", &idp("https://b"), "tok").is_none(), "a changed issuer");
        cache.put("p", &a, "old", claims(100), 500);
        assert!(cache.get("p", &a, "old").is_none(), "expired beyond the leeway: not cached");
        let none = Arc::new(json!({"sub": "s"}).as_object().unwrap().clone());
        cache.put("p", &a, "no-exp", none, 500);
        assert!(cache.get("p", &a, "no-exp").is_none());
    }
}
