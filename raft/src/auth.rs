//! Peer request authentication. Every call to the peer routes and the operator routes carries
//! an HMAC-SHA256 over its method, path, body digest, a timestamp and a random nonce, keyed by
//! a key derived (HKDF) from the cluster secret: the secret never travels, a captured request
//! cannot be replayed (its nonce is remembered for the whole window in which its timestamp is
//! accepted) nor altered (path, body), and a static credential no longer exists to be stolen
//! from one request and used for another. Without a secret a random per-process key is used:
//! nobody else can call the routes, which suits a single node.

use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

pub const HEADER: &str = "x-idnode-cluster-auth";
/// The scheme tag that starts the header's value.
const SCHEME: &str = "idnode-hmac-v1";
/// The HKDF label of the request MAC key (distinct from the snapshot and backup keys).
const KEY_PURPOSE: &str = "idnode peer request mac v1";
/// How far (seconds) a request's timestamp may be from the receiver's clock, either way.
/// Members are expected to run NTP; this leaves room for skew and slow delivery while keeping
/// the replay memory small.
pub const WINDOW_S: i64 = 30;
/// Most nonces remembered at once. Only requests with a valid MAC are remembered, so only a
/// member (or an operator with the secret) can fill it; a full memory refuses (503) rather
/// than forgetting a nonce that could then be replayed.
const MAX_NONCES: usize = 500_000;
/// Largest body the check buffers (append batches and snapshot chunks fit with room to spare).
pub const MAX_BODY: usize = 64 << 20;

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Missing,
    Malformed,
    BadMac,
    Stale { off_by: i64 },
    Replayed,
    Busy,
}

impl Refusal {
    fn response(&self) -> Response {
        let (status, text) = match self {
            Refusal::Missing => (StatusCode::UNAUTHORIZED, "cluster credential required".to_string()),
            Refusal::Malformed => (
                StatusCode::UNAUTHORIZED,
                "cluster credential required: requests must be signed (idnode-hmac-v1); a member or tool \
                 sending the old static credential runs an older idnode"
                    .to_string(),
            ),
            Refusal::BadMac => (StatusCode::UNAUTHORIZED, "cluster credential required".to_string()),
            Refusal::Stale { off_by } => (
                StatusCode::UNAUTHORIZED,
                format!(
                    "request timestamp is {off_by} s off this node's clock (allowed: ±{WINDOW_S} s): check the \
                     members' clocks (NTP)"
                ),
            ),
            Refusal::Replayed => (StatusCode::UNAUTHORIZED, "request replayed".to_string()),
            Refusal::Busy => (StatusCode::SERVICE_UNAVAILABLE, "too many peer requests; retry".to_string()),
        };
        (status, text).into_response()
    }
}

/// Nonces seen, each kept until its timestamp leaves the window.
#[derive(Default)]
struct Seen {
    set: HashSet<[u8; 16]>,
    by_expiry: BTreeSet<(i64, [u8; 16])>,
}

impl Seen {
    fn prune(&mut self, now: i64) {
        while let Some(&(expiry, nonce)) = self.by_expiry.first() {
            if expiry >= now {
                break;
            }
            self.by_expiry.pop_first();
            self.set.remove(&nonce);
        }
    }
}

/// A request header's parts, its timestamp already inside the window.
struct Signed {
    ts: i64,
    nonce: [u8; 16],
    tag: Vec<u8>,
}

impl Signed {
    fn parse(header: Option<&[u8]>, now: i64) -> Result<Signed, Refusal> {
        let header = std::str::from_utf8(header.ok_or(Refusal::Missing)?).map_err(|_| Refusal::Malformed)?;
        let mut parts = header.split(' ');
        let (Some(SCHEME), Some(ts), Some(nonce), Some(tag), None) =
            (parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(Refusal::Malformed);
        };
        let ts: i64 = ts.parse().map_err(|_| Refusal::Malformed)?;
        let nonce: [u8; 16] = hex::decode(nonce).ok().and_then(|n| n.try_into().ok()).ok_or(Refusal::Malformed)?;
        let tag = hex::decode(tag).map_err(|_| Refusal::Malformed)?;
        let off_by = ts.saturating_sub(now);
        if off_by.abs() > WINDOW_S {
            return Err(Refusal::Stale { off_by });
        }
        Ok(Signed { ts, nonce, tag })
    }
}

pub struct Credential {
    key: Zeroizing<[u8; 32]>,
    seen: Mutex<Seen>,
}

impl Credential {
    pub fn from_secret(secret: Option<&str>) -> Self {
        let key = match secret {
            Some(s) => idnode_keys::derive_key(s.as_bytes(), KEY_PURPOSE),
            None => Zeroizing::new(idnode_keys::random_bytes::<32>()),
        };
        Credential { key, seen: Mutex::new(Seen::default()) }
    }

    fn mac(&self, method: &str, path: &str, body: &[u8], ts: i64, nonce: &[u8; 16]) -> Hmac<Sha256> {
        // Every part is length-prefixed or fixed-size, so no two requests share an input.
        // (HMAC takes a key of any length: the error case cannot happen.)
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key[..]).unwrap_or_else(|_| unreachable!());
        mac.update(SCHEME.as_bytes());
        for part in [method.as_bytes(), path.as_bytes()] {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        mac.update(&Sha256::digest(body));
        mac.update(&ts.to_be_bytes());
        mac.update(nonce);
        mac
    }

    /// The header value for one request, signed at `now` (unix seconds) with a fresh nonce.
    pub fn sign(&self, method: &str, path: &str, body: &[u8], now: i64) -> String {
        let nonce = idnode_keys::random_bytes::<16>();
        let tag = self.mac(method, path, body, now, &nonce).finalize().into_bytes();
        format!("{SCHEME} {now} {} {}", hex::encode(nonce), hex::encode(tag))
    }

    /// Checks a request's header at `now`; a request that passes has its nonce remembered, so
    /// the same header is refused next time (the middleware does the same in two steps).
    #[cfg(test)]
    pub fn verify(
        &self,
        method: &str,
        path: &str,
        body: &[u8],
        header: Option<&[u8]>,
        now: i64,
    ) -> Result<(), Refusal> {
        self.check(method, path, body, &Signed::parse(header, now)?, now)
    }

    fn check(&self, method: &str, path: &str, body: &[u8], s: &Signed, now: i64) -> Result<(), Refusal> {
        let Signed { ts, nonce, tag } = s;
        let (ts, nonce) = (*ts, *nonce);
        self.mac(method, path, body, ts, &nonce).verify_slice(tag).map_err(|_| Refusal::BadMac)?;
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.prune(now);
        if seen.set.contains(&nonce) {
            return Err(Refusal::Replayed);
        }
        if seen.set.len() >= MAX_NONCES {
            return Err(Refusal::Busy);
        }
        seen.set.insert(nonce);
        // Kept until no clock within the window would accept the timestamp again.
        seen.by_expiry.insert((ts + WINDOW_S, nonce));
        Ok(())
    }
}

/// Unix seconds now.
pub fn now_s() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// The header a request to a cluster with `secret` must carry (for tools that call the peer
/// or operator routes): `method` and `path_and_query` as sent, `body` the exact bytes sent.
pub fn sign_request(secret: &str, method: &str, path_and_query: &str, body: &[u8]) -> (&'static str, String) {
    (HEADER, Credential::from_secret(Some(secret)).sign(method, path_and_query, body, now_s()))
}

/// Refuses (401) any request that is not signed for this cluster, signed too long ago (or
/// too far ahead), or seen before.
pub async fn require(State(cred): State<Arc<Credential>>, req: Request, next: Next) -> Response {
    let (parts, body) = req.into_parts();
    let path = parts.uri.path_and_query().map_or_else(|| parts.uri.path().to_string(), |p| p.as_str().to_string());
    let refused = |refusal: Refusal| {
        if !matches!(refusal, Refusal::Missing) {
            tracing::warn!(?refusal, %path, "peer request refused");
        }
        refusal.response()
    };
    // The header is checked before the body is read: a caller without one costs no buffering.
    let now = now_s();
    let signed = match Signed::parse(parts.headers.get(HEADER).map(|v| v.as_bytes()), now) {
        Ok(s) => s,
        Err(refusal) => return refused(refusal),
    };
    let body = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(_) => return (StatusCode::PAYLOAD_TOO_LARGE, "request body too large").into_response(),
    };
    if let Err(refusal) = cred.check(parts.method.as_str(), &path, &body, &signed, now) {
        return refused(refusal);
    }
    next.run(Request::from_parts(parts, Body::from(body))).await
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000;

    #[test]
    fn signed_request_passes_once() {
        let a = Credential::from_secret(Some("s3cret"));
        let b = Credential::from_secret(Some("s3cret"));
        let h = a.sign("POST", "/raft/vote", b"body", NOW);
        assert!(!h.contains("s3cret"));
        assert_eq!(b.verify("POST", "/raft/vote", b"body", Some(h.as_bytes()), NOW + 3), Ok(()));
        assert_eq!(b.verify("POST", "/raft/vote", b"body", Some(h.as_bytes()), NOW + 4), Err(Refusal::Replayed));
        // A fresh signature of the same request is a new request.
        let h2 = a.sign("POST", "/raft/vote", b"body", NOW);
        assert_eq!(b.verify("POST", "/raft/vote", b"body", Some(h2.as_bytes()), NOW), Ok(()));
    }

    #[test]
    fn old_static_bearer_is_refused() {
        // What the previous release sent: hex SHA-256 of a label and the secret.
        let mut h = Sha256::new();
        h.update(b"idnode-raft-peer-credential-v1\0");
        h.update(b"s3cret");
        let bearer = hex::encode(h.finalize());
        let b = Credential::from_secret(Some("s3cret"));
        assert_eq!(b.verify("POST", "/raft/vote", b"", Some(bearer.as_bytes()), NOW), Err(Refusal::Malformed));
        assert_eq!(b.verify("POST", "/raft/vote", b"", None, NOW), Err(Refusal::Missing));
    }

    #[test]
    fn tampered_requests_are_refused() {
        let a = Credential::from_secret(Some("s3cret"));
        let b = Credential::from_secret(Some("s3cret"));
        let signed = a.sign("POST", "/raft/append", b"entries", NOW);
        let h = Some(signed.as_bytes());
        assert_eq!(b.verify("POST", "/raft/append", b"entriez", h, NOW), Err(Refusal::BadMac));
        assert_eq!(b.verify("POST", "/raft/vote", b"entries", h, NOW), Err(Refusal::BadMac));
        assert_eq!(b.verify("GET", "/raft/append", b"entries", h, NOW), Err(Refusal::BadMac));
        // A moved timestamp breaks the MAC too.
        let parts: Vec<&str> = signed.split(' ').collect();
        let moved = format!("{} {} {} {}", parts[0], NOW + 1, parts[2], parts[3]);
        assert_eq!(b.verify("POST", "/raft/append", b"entries", Some(moved.as_bytes()), NOW), Err(Refusal::BadMac));
        // Another cluster's secret.
        let other = Credential::from_secret(Some("another")).sign("POST", "/raft/append", b"entries", NOW);
        assert_eq!(b.verify("POST", "/raft/append", b"entries", Some(other.as_bytes()), NOW), Err(Refusal::BadMac));
        // The untampered request still passes: refusals remembered nothing.
        assert_eq!(b.verify("POST", "/raft/append", b"entries", h, NOW), Ok(()));
    }

    #[test]
    fn stale_and_future_timestamps_are_refused() {
        let a = Credential::from_secret(Some("s3cret"));
        let old = a.sign("POST", "/raft/vote", b"", NOW - WINDOW_S - 1);
        assert_eq!(a.verify("POST", "/raft/vote", b"", Some(old.as_bytes()), NOW), Err(Refusal::Stale { off_by: -31 }));
        let ahead = a.sign("POST", "/raft/vote", b"", NOW + WINDOW_S + 1);
        assert!(matches!(a.verify("POST", "/raft/vote", b"", Some(ahead.as_bytes()), NOW), Err(Refusal::Stale { .. })));
        let edge = a.sign("POST", "/raft/vote", b"", NOW - WINDOW_S);
        assert_eq!(a.verify("POST", "/raft/vote", b"", Some(edge.as_bytes()), NOW), Ok(()));
    }

    #[test]
    fn nonces_are_forgotten_only_after_the_window() {
        let a = Credential::from_secret(Some("s3cret"));
        let h = a.sign("POST", "/raft/vote", b"", NOW);
        assert_eq!(a.verify("POST", "/raft/vote", b"", Some(h.as_bytes()), NOW), Ok(()));
        // Still inside the window: remembered.
        assert_eq!(a.verify("POST", "/raft/vote", b"", Some(h.as_bytes()), NOW + WINDOW_S), Err(Refusal::Replayed));
        // Past it: the timestamp is refused, and the next accepted request forgets the nonce.
        let later = NOW + WINDOW_S + 1;
        assert!(matches!(a.verify("POST", "/raft/vote", b"", Some(h.as_bytes()), later), Err(Refusal::Stale { .. })));
        let fresh = a.sign("POST", "/raft/vote", b"", later);
        assert_eq!(a.verify("POST", "/raft/vote", b"", Some(fresh.as_bytes()), later), Ok(()));
        assert_eq!(a.seen.lock().unwrap().set.len(), 1);
    }

    #[test]
    fn no_secret_means_nobody_gets_in() {
        let a = Credential::from_secret(None);
        let b = Credential::from_secret(None);
        let h = a.sign("POST", "/raft/vote", b"", NOW);
        assert_eq!(b.verify("POST", "/raft/vote", b"", Some(h.as_bytes()), NOW), Err(Refusal::BadMac));
        let h = sign_request("", "POST", "/raft/vote", b"").1;
        assert_eq!(b.verify("POST", "/raft/vote", b"", Some(h.as_bytes()), now_s()), Err(Refusal::BadMac));
    }
}
