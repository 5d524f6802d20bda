//! A per-node cache of OIDC providers' key sets (JWKS), keyed by `jwks_uri`.
//!
//! A set is fetched over HTTPS (reqwest, rustls; through the node's outbound policy,
//! `outbound`: public addresses only unless allowed, 5 s timeout, no redirects, rate per
//! host; body at most 1 MiB) and kept for [`JwksCache::ttl`]. A token naming a `kid` the cached set lacks
//! triggers one refetch (key rollover), but at most once per [`JwksCache::refetch_interval`]
//! per URI: a flood of tokens with invented kids costs the IdP one request per interval.
//! Only asymmetric keys are kept: RSA (RS256/384/512, PS256/384/512) and EC P-256 (ES256) /
//! P-384 (ES384); symmetric (`oct`) and unknown keys are skipped, as are keys meant for
//! encryption (`use: enc`). A key's own `alg`, when given, narrows it to that algorithm.
//!
//! A failed fetch is remembered for the same interval: logins in it get its error without a
//! new request (an unreachable IdP is not retried per login), and a set past its TTL is not
//! used once a refetch failed (fail closed). Concurrent logins needing a fetch of one URI
//! wait for the single fetch in flight.
//!
//! At most [`MAX_URIS`] URIs are remembered; past it, the one used least recently is
//! forgotten (it is fetched again when next needed).
//!
//! Nodes fetch independently (nothing is replicated): a key set is public, refetching it is
//! cheap, and every node must verify tokens on its own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};

use super::outbound::Outbound;
use super::verify::VerifyError;
use crate::http::cache_metrics::CacheStats;

/// The largest key set accepted.
pub const MAX_JWKS_BYTES: usize = 1024 * 1024;
/// URIs whose sets are kept at most.
pub const MAX_URIS: usize = 1024;
pub const DEFAULT_TTL: Duration = Duration::from_secs(300);
pub const DEFAULT_REFETCH_INTERVAL: Duration = Duration::from_secs(10);

pub const RSA_ALGS: &[Algorithm] =
    &[Algorithm::RS256, Algorithm::RS384, Algorithm::RS512, Algorithm::PS256, Algorithm::PS384, Algorithm::PS512];

/// One verification key and the algorithms it may be used with (never `none`, never HS*).
#[derive(Clone)]
pub struct VerifyKey {
    pub kid: Option<String>,
    pub key: DecodingKey,
    pub algs: Vec<Algorithm>,
}

impl VerifyKey {
    /// A JWK as a verification key; `None` for keys this service does not verify with
    /// (symmetric, OKP, encryption keys, unknown curves or algorithms).
    pub fn from_jwk(jwk: &Jwk) -> Option<VerifyKey> {
        if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
            return None;
        }
        let family: Vec<Algorithm> = match &jwk.algorithm {
            // RSA keys under 2048 bits are refused (NIST SP 800-131A; RFC 7518 §3.3).
            AlgorithmParameters::RSA(p) if modulus_bits(&p.n) < MIN_RSA_BITS => return None,
            AlgorithmParameters::RSA(_) => RSA_ALGS.to_vec(),
            AlgorithmParameters::EllipticCurve(p) => match p.curve {
                EllipticCurve::P256 => vec![Algorithm::ES256],
                EllipticCurve::P384 => vec![Algorithm::ES384],
                _ => return None,
            },
            _ => return None,
        };
        let algs = match jwk.common.key_algorithm {
            None => family,
            Some(ka) => {
                let alg = key_alg(ka)?;
                if !family.contains(&alg) {
                    return None;
                }
                vec![alg]
            }
        };
        let key = DecodingKey::from_jwk(jwk).ok()?;
        Some(VerifyKey { kid: jwk.common.key_id.clone(), key, algs })
    }
}

/// The smallest RSA modulus verified with.
pub const MIN_RSA_BITS: usize = 2048;

/// Bits of a base64url big-endian modulus (0 when it does not decode).
fn modulus_bits(n: &str) -> usize {
    use base64::Engine;
    let Ok(bytes) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(n.trim_end_matches('=')) else {
        return 0;
    };
    let bytes: Vec<u8> = bytes.into_iter().skip_while(|b| *b == 0).collect();
    match bytes.first() {
        None => 0,
        Some(first) => bytes.len() * 8 - first.leading_zeros() as usize,
    }
}

fn key_alg(ka: KeyAlgorithm) -> Option<Algorithm> {
    Some(match ka {
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::RS384 => Algorithm::RS384,
        KeyAlgorithm::RS512 => Algorithm::RS512,
        KeyAlgorithm::PS256 => Algorithm::PS256,
        KeyAlgorithm::PS384 => Algorithm::PS384,
        KeyAlgorithm::PS512 => Algorithm::PS512,
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::ES384 => Algorithm::ES384,
        _ => return None,
    })
}

/// A provider's usable keys.
#[derive(Clone, Default)]
pub struct KeySet {
    pub keys: Vec<VerifyKey>,
}

impl KeySet {
    /// Parses a JWKS document key by key: keys that do not parse or are not usable are
    /// skipped (one exotic key must not hide the others).
    pub fn parse(body: &[u8]) -> Result<KeySet, VerifyError> {
        let doc: serde_json::Value = serde_json::from_slice(body)
            .map_err(|_| VerifyError::KeySetUnavailable("the key set is not JSON".into()))?;
        let Some(keys) = doc.get("keys").and_then(|k| k.as_array()) else {
            return Err(VerifyError::KeySetUnavailable("the key set has no \"keys\" array".into()));
        };
        let keys = keys
            .iter()
            .filter_map(|k| serde_json::from_value::<Jwk>(k.clone()).ok())
            .filter_map(|k| VerifyKey::from_jwk(&k))
            .collect();
        Ok(KeySet { keys })
    }

    /// The keys a token with this `kid` may be checked with: the key with that kid, or,
    /// for a token without a kid, every key.
    pub fn candidates<'a>(&'a self, kid: Option<&'a str>) -> impl Iterator<Item = &'a VerifyKey> + 'a {
        self.keys.iter().filter(move |k| kid.is_none() || k.kid.as_deref() == kid)
    }

    fn has(&self, kid: Option<&str>) -> bool {
        self.candidates(kid).next().is_some()
    }
}

/// What is known of one URI.
#[derive(Default)]
struct Entry {
    set: Option<Arc<KeySet>>,
    /// The size of the document the set was parsed from.
    bytes: usize,
    fetched_at: Option<Instant>,
    /// The last fetch attempt (successful or not): the rate limit of refetches.
    attempted_at: Option<Instant>,
    /// Why the last attempt failed (`None`: it succeeded).
    last_error: Option<VerifyError>,
}

/// One URI: its entry, and the lock a fetch holds (concurrent logins needing a fetch wait for
/// the one in flight instead of fetching too).
#[derive(Default)]
struct Slot {
    entry: Mutex<Entry>,
    fetching: tokio::sync::Mutex<()>,
}

/// The node's key-set cache (one per node, shared by every login), of at most [`MAX_URIS`]
/// URIs.
pub struct JwksCache {
    outbound: Arc<Outbound>,
    /// Each URI's slot and when it was last asked for (a use counter: the least recently used
    /// has the smallest).
    slots: Mutex<HashMap<String, (u64, Arc<Slot>)>>,
    uses: std::sync::atomic::AtomicU64,
    pub ttl: Duration,
    pub refetch_interval: Duration,
    pub max_uris: usize,
    stats: CacheStats,
}

impl JwksCache {
    pub fn new(ttl: Duration, refetch_interval: Duration, outbound: Arc<Outbound>) -> JwksCache {
        JwksCache {
            outbound,
            slots: Mutex::new(HashMap::new()),
            uses: Default::default(),
            ttl,
            refetch_interval,
            max_uris: MAX_URIS,
            stats: CacheStats::default(),
        }
    }

    /// Reports hits (a fresh set answered), misses (a fetch was due) and what it holds.
    pub fn observed(mut self, stats: CacheStats) -> Self {
        self.stats = stats;
        self
    }

    /// Reports what the cache holds: the URIs and the documents fetched for them.
    fn report(&self, slots: &HashMap<String, (u64, Arc<Slot>)>) {
        let bytes: usize = slots
            .iter()
            .map(|(uri, (_, slot))| uri.len() + slot.entry.lock().unwrap_or_else(|p| p.into_inner()).bytes)
            .sum();
        self.stats.holds(slots.len(), bytes);
    }

    fn slot(&self, uri: &str) -> Arc<Slot> {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let now = self.uses.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Some((used, slot)) = slots.get_mut(uri) {
            *used = now;
            return slot.clone();
        }
        if slots.len() >= self.max_uris.max(1) {
            if let Some(lru) = slots.iter().min_by_key(|(_, (used, _))| *used).map(|(k, _)| k.clone()) {
                slots.remove(&lru);
            }
        }
        let slot = Arc::new(Slot::default());
        slots.insert(uri.to_owned(), (now, slot.clone()));
        self.report(&slots);
        slot
    }

    /// How many URIs are remembered.
    #[cfg(test)]
    pub fn remembered(&self) -> usize {
        self.slots.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether `uri` is remembered.
    #[cfg(test)]
    pub fn holds(&self, uri: &str) -> bool {
        self.slots.lock().unwrap_or_else(|p| p.into_inner()).contains_key(uri)
    }

    /// The answer from what is cached, or `None` when a fetch is due: the set while it is
    /// fresh and knows `kid`; within `refetch_interval` of the last attempt, the set (fresh,
    /// or stale after a successful attempt: the caller then finds no key) or the last
    /// attempt's error — never a new request.
    fn cached(&self, slot: &Slot, kid: Option<&str>) -> Option<Result<Arc<KeySet>, VerifyError>> {
        let now = Instant::now();
        let e = slot.entry.lock().unwrap_or_else(|p| p.into_inner());
        let fresh = e.fetched_at.is_some_and(|t| now.duration_since(t) < self.ttl);
        let may_refetch = e.attempted_at.is_none_or(|t| now.duration_since(t) >= self.refetch_interval);
        match (&e.set, &e.last_error) {
            (Some(set), _) if fresh && set.has(kid) => Some(Ok(set.clone())),
            _ if may_refetch => None,
            (_, Some(err)) => Some(Err(err.clone())),
            (Some(set), None) => Some(Ok(set.clone())),
            (None, None) => None,
        }
    }

    /// The key set of `uri` for a token naming `kid` (see [`JwksCache::cached`]): a fetch when
    /// nothing fresh is cached or the kid is unknown, at most once per `refetch_interval`.
    pub async fn key_set(&self, uri: &str, kid: Option<&str>) -> Result<Arc<KeySet>, VerifyError> {
        let slot = self.slot(uri);
        if let Some(answer) = self.stats.lookup(self.cached(&slot, kid)) {
            return answer;
        }
        let _fetching = slot.fetching.lock().await;
        // a fetch that finished while this login waited counts as its own
        if let Some(answer) = self.cached(&slot, kid) {
            return answer;
        }
        let fetched = self.fetch(uri).await;
        let now = Instant::now();
        let answer = {
            let mut e = slot.entry.lock().unwrap_or_else(|p| p.into_inner());
            e.attempted_at = Some(now);
            match fetched {
                Ok((set, bytes)) => {
                    let set = Arc::new(set);
                    e.set = Some(set.clone());
                    e.bytes = bytes;
                    e.fetched_at = Some(now);
                    e.last_error = None;
                    Ok(set)
                }
                Err(err) => {
                    e.last_error = Some(err.clone());
                    Err(err)
                }
            }
        };
        self.report(&self.slots.lock().unwrap_or_else(|p| p.into_inner()));
        answer
    }

    /// The key set at `uri` and the size of its document.
    async fn fetch(&self, uri: &str) -> Result<(KeySet, usize), VerifyError> {
        let unavailable = |why: String| VerifyError::KeySetUnavailable(why);
        let client = self.outbound.client();
        let req = client.get(uri).header(reqwest::header::ACCEPT, "application/json, application/jwk-set+json");
        let mut resp = self.outbound.send(client, req).await.map_err(unavailable)?;
        if !resp.status().is_success() {
            return Err(unavailable(format!("the key set endpoint answered {}", resp.status())));
        }
        let body = read_capped(&mut resp, MAX_JWKS_BYTES).await.map_err(unavailable)?;
        Ok((KeySet::parse(&body)?, body.len()))
    }
}

/// A response body of at most `cap` bytes (refused as soon as it grows past it); the error
/// says why, for a `VerifyError`.
pub async fn read_capped(resp: &mut reqwest::Response, cap: usize) -> Result<Vec<u8>, String> {
    let too_large = || format!("the response is larger than {cap} bytes");
    if resp.content_length().is_some_and(|n| n > cap as u64) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| format!("reading failed: {}", e.without_url()))? {
        if body.len() + chunk.len() > cap {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod size_tests {
    use base64::Engine;

    use super::*;

    #[test]
    fn rsa_moduli_under_2048_bits_are_not_verification_keys() {
        let enc = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
        let mut n2048 = vec![0x80u8];
        n2048.extend(std::iter::repeat_n(0x01u8, 255));
        assert_eq!(modulus_bits(&enc(&n2048)), 2048);
        let mut n1024 = vec![0x00u8, 0xC0];
        n1024.extend(std::iter::repeat_n(0x01u8, 127));
        assert_eq!(modulus_bits(&enc(&n1024)), 1024);
        let jwk = |n: &str| -> Jwk {
            serde_json::from_value(serde_json::json!({"kty": "RSA", "kid": "k", "n": n, "e": "AQAB"})).unwrap()
        };
        assert!(VerifyKey::from_jwk(&jwk(&enc(&n1024))).is_none());
        assert!(VerifyKey::from_jwk(&jwk(&enc(&n2048))).is_some());
    }
}
