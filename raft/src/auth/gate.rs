//! The receiving side: checks a request in an order that lets a stranger cost almost nothing.
//! Header form, timestamp window, destination (this member), MAC, declared length against
//! `Content-Length` and [`MAX_BODY`], all before the body is touched; then the nonce is
//! remembered; then the body is read as it streams, never beyond the declared length, and its
//! digest compared with the signed one.

use std::collections::{BTreeSet, HashSet};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use sha2::{Digest, Sha256};

use super::{Credential, Signed, HEADER, MAX_BODY, WINDOW_S};

/// Most nonces remembered at once. Only requests with a valid MAC are remembered, so only a
/// member (or an operator with the secret) can fill it; a full memory refuses (503) rather
/// than forgetting a nonce that could then be replayed.
const MAX_NONCES: usize = 500_000;
/// Most bytes reserved up front for a body (the rest grows as it arrives): a member's
/// declared length is trusted for the limit, not for an allocation it might never fill.
const PREALLOC: usize = 1 << 20;

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Missing,
    Malformed,
    /// Signed with the previous release's scheme.
    OldScheme,
    BadMac,
    Stale {
        off_by: i64,
    },
    /// Signed for another member.
    WrongMember {
        to: u64,
        me: u64,
    },
    /// Declared (or sent) more than [`MAX_BODY`].
    TooLarge,
    /// The body sent is not the one signed (length or digest), or more than declared is sent.
    BodyMismatch,
    Replayed,
    Busy,
}

impl Refusal {
    fn response(&self) -> Response {
        let (status, text) = match self {
            Refusal::Missing | Refusal::BadMac => (StatusCode::UNAUTHORIZED, "cluster credential required".to_string()),
            Refusal::Malformed => (
                StatusCode::UNAUTHORIZED,
                "cluster credential required: requests must be signed (idnode-hmac-v2); a member or tool \
                 sending the old static credential runs an older idnode"
                    .to_string(),
            ),
            Refusal::OldScheme => (
                StatusCode::UNAUTHORIZED,
                "request signed with idnode-hmac-v1: the member or tool that sent it runs an older idnode; \
                 every member and tool must run a release that signs idnode-hmac-v2"
                    .to_string(),
            ),
            Refusal::Stale { off_by } => (
                StatusCode::UNAUTHORIZED,
                format!(
                    "request timestamp is {off_by} s off this node's clock (allowed: ±{WINDOW_S} s): check the \
                     members' clocks (NTP)"
                ),
            ),
            Refusal::WrongMember { to, me } => {
                (StatusCode::UNAUTHORIZED, format!("request signed for member {to}, and this is member {me}"))
            }
            Refusal::TooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "request body too large".to_string()),
            Refusal::BodyMismatch => {
                (StatusCode::UNAUTHORIZED, "request body does not match its signature".to_string())
            }
            Refusal::Replayed => (StatusCode::UNAUTHORIZED, "request replayed".to_string()),
            Refusal::Busy => (StatusCode::SERVICE_UNAVAILABLE, "too many peer requests; retry".to_string()),
        };
        (status, text).into_response()
    }
}

/// Called once a request's MAC verified and its nonce was fresh (before its body is read):
/// the listener uses it to take the connection out of its count of unauthenticated ones.
#[derive(Clone)]
pub struct OnVerified(pub Arc<dyn Fn() + Send + Sync>);

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

/// What a member checks its incoming requests with: the cluster key, its own member id
/// (requests signed for another member are refused) and the nonces it has seen.
pub struct Gate {
    cred: Arc<Credential>,
    me: u64,
    seen: Mutex<Seen>,
    /// The second of the last refusal logged, and how many were not logged since.
    last_warn_s: AtomicI64,
    unlogged: AtomicU64,
}

impl Gate {
    pub fn new(cred: Arc<Credential>, me: u64) -> Self {
        Gate {
            cred,
            me,
            seen: Mutex::new(Seen::default()),
            last_warn_s: AtomicI64::new(0),
            unlogged: AtomicU64::new(0),
        }
    }

    /// Every check that needs no body, in order, then the nonce is remembered: a request that
    /// passes is never accepted again, even if its body later turns out not to match.
    pub(crate) fn admit(
        &self,
        method: &str,
        path: &str,
        header: Option<&[u8]>,
        content_length: Option<u64>,
        now: i64,
    ) -> Result<Signed, Refusal> {
        let s = Signed::parse(header)?;
        let off_by = s.ts.saturating_sub(now);
        if off_by.abs() > WINDOW_S {
            return Err(Refusal::Stale { off_by });
        }
        if s.to != self.me {
            return Err(Refusal::WrongMember { to: s.to, me: self.me });
        }
        self.cred.verify_mac(method, path, &s)?;
        match content_length {
            Some(n) if n > MAX_BODY as u64 => return Err(Refusal::TooLarge),
            Some(n) if n != s.len => return Err(Refusal::BodyMismatch),
            _ => {}
        }
        self.remember(&s, now)?;
        Ok(s)
    }

    fn remember(&self, s: &Signed, now: i64) -> Result<(), Refusal> {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.prune(now);
        if seen.set.contains(&s.nonce) {
            return Err(Refusal::Replayed);
        }
        if seen.set.len() >= MAX_NONCES {
            return Err(Refusal::Busy);
        }
        seen.set.insert(s.nonce);
        // Kept until no clock within the window would accept the timestamp again.
        seen.by_expiry.insert((s.ts + WINDOW_S, s.nonce));
        Ok(())
    }

    /// The whole check of one request: `Ok` gives it back with its body read and verified.
    pub(crate) async fn check(&self, req: Request, now: i64) -> Result<Request, Refusal> {
        let (parts, body) = req.into_parts();
        let path = parts.uri.path_and_query().map_or_else(|| parts.uri.path(), |p| p.as_str());
        let content_length = match parts.headers.get(header::CONTENT_LENGTH) {
            Some(v) => Some(v.to_str().ok().and_then(|v| v.parse::<u64>().ok()).ok_or(Refusal::Malformed)?),
            None => None,
        };
        let header = parts.headers.get(HEADER).map(|v| v.as_bytes());
        let signed = self.admit(parts.method.as_str(), path, header, content_length, now)?;
        if let Some(OnVerified(hook)) = parts.extensions.get::<OnVerified>() {
            hook();
        }
        let body = read_signed_body(body, &signed).await?;
        Ok(Request::from_parts(parts, Body::from(body)))
    }

    #[cfg(test)]
    pub(crate) fn remembered(&self) -> usize {
        self.seen.lock().unwrap().set.len()
    }
}

/// Reads `body` as it arrives, hashing it, and stops with a refusal as soon as it exceeds the
/// declared length; the whole must then be exactly the signed length and digest.
pub(crate) async fn read_signed_body(body: Body, s: &Signed) -> Result<Bytes, Refusal> {
    let limit = usize::try_from(s.len).map_err(|_| Refusal::TooLarge)?;
    let mut buf = Vec::with_capacity(limit.min(PREALLOC));
    let mut hash = Sha256::new();
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        // A sender that broke off mid-body sent something other than what it signed.
        let chunk = chunk.map_err(|_| Refusal::BodyMismatch)?;
        if chunk.len() > limit - buf.len() {
            return Err(Refusal::BodyMismatch);
        }
        hash.update(&chunk);
        buf.extend_from_slice(&chunk);
    }
    if buf.len() != limit || hash.finalize()[..] != s.digest[..] {
        return Err(Refusal::BodyMismatch);
    }
    Ok(Bytes::from(buf))
}

/// Refuses (401) any request that is not signed for this member of this cluster, signed too
/// long ago (or too far ahead), seen before, or whose body is not the one signed.
pub async fn require(State(gate): State<Arc<Gate>>, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    let now = super::now_s();
    match gate.check(req, now).await {
        Ok(req) => next.run(req).await,
        Err(refusal) => {
            if !matches!(refusal, Refusal::Missing) {
                gate.log_refusal(&refusal, &path, now);
            }
            refusal.response()
        }
    }
}

impl Gate {
    /// One warning a second at most, with the count of those not logged: a flood of strangers
    /// must not turn into a flood of log lines.
    fn log_refusal(&self, refusal: &Refusal, path: &str, now: i64) {
        if self.last_warn_s.swap(now, Ordering::Relaxed) == now {
            self.unlogged.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let unlogged = self.unlogged.swap(0, Ordering::Relaxed);
        tracing::warn!(?refusal, %path, unlogged, "peer request refused (unlogged: refusals since the last line)");
    }
}
