//! Peer request authentication. Every call to the peer routes and the operator routes carries
//! an HMAC-SHA256, keyed by a key derived (HKDF) from the cluster secret, over its method,
//! path, a timestamp, a random nonce, the member it is meant for, and its body's declared
//! length and SHA-256. The secret never travels; a captured request cannot be altered (path,
//! body), replayed to the same member (its nonce is remembered for the whole window in which
//! its timestamp is accepted) or to another member (the MAC names the destination).
//!
//! Because the header alone carries the whole MAC input, a receiver authenticates a request
//! before it reads a byte of the body ([`gate`]): a stranger with a well-formed header costs a
//! MAC computation, never a 64 MiB buffer, and the body is then read only up to the length a
//! member signed, hashed as it arrives. Without a secret a random per-process key is used:
//! nobody else can call the routes, which suits a single node.

mod gate;
#[cfg(test)]
mod tests;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

pub use gate::{require, Gate, OnVerified, Refusal};

pub const HEADER: &str = "x-idnode-cluster-auth";
/// The scheme tag that starts the header's value.
const SCHEME: &str = "idnode-hmac-v2";
/// The previous release's tag: refused with a message that names the cause.
const OLD_SCHEME: &str = "idnode-hmac-v1";
/// The HKDF label of the request MAC key (distinct from the snapshot and backup keys). The
/// scheme tag is the first MAC input, so v1 and v2 MACs never collide under the same key.
const KEY_PURPOSE: &str = "idnode peer request mac v1";
/// How far (seconds) a request's timestamp may be from the receiver's clock, either way.
/// Members are expected to run NTP; this leaves room for skew and slow delivery while keeping
/// the replay memory small.
pub const WINDOW_S: i64 = 30;
/// Largest body a request may declare (append batches and snapshot chunks fit with room to
/// spare). Only a request whose MAC verified gets its body read, and only up to what it declared.
pub const MAX_BODY: usize = 64 << 20;

/// What the header says, its form already checked (not yet its MAC, window or destination).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Signed {
    pub ts: i64,
    pub nonce: [u8; 16],
    /// The member id the request is meant for.
    pub to: u64,
    /// The body's declared length and SHA-256.
    pub len: u64,
    pub digest: [u8; 32],
    pub tag: [u8; 32],
}

impl Signed {
    /// `<scheme> <ts> <nonce> <to> <len> <sha256> <mac>`, hex for the binary parts.
    fn parse(header: Option<&[u8]>) -> Result<Signed, Refusal> {
        let header = std::str::from_utf8(header.ok_or(Refusal::Missing)?).map_err(|_| Refusal::Malformed)?;
        let parts: Vec<&str> = header.splitn(8, ' ').collect();
        match parts.first() {
            Some(&SCHEME) => {}
            Some(&OLD_SCHEME) => return Err(Refusal::OldScheme),
            _ => return Err(Refusal::Malformed),
        }
        let [_, ts, nonce, to, len, digest, tag] = parts[..] else {
            return Err(Refusal::Malformed);
        };
        let len: u64 = len.parse().map_err(|_| Refusal::Malformed)?;
        if len > MAX_BODY as u64 {
            return Err(Refusal::TooLarge);
        }
        Ok(Signed {
            ts: ts.parse().map_err(|_| Refusal::Malformed)?,
            nonce: hex_array(nonce)?,
            to: to.parse().map_err(|_| Refusal::Malformed)?,
            len,
            digest: hex_array(digest)?,
            tag: hex_array(tag)?,
        })
    }

    fn header(&self) -> String {
        format!(
            "{SCHEME} {} {} {} {} {} {}",
            self.ts,
            hex::encode(self.nonce),
            self.to,
            self.len,
            hex::encode(self.digest),
            hex::encode(self.tag)
        )
    }
}

/// `N` bytes in hex, exactly.
fn hex_array<const N: usize>(s: &str) -> Result<[u8; N], Refusal> {
    hex::decode(s).ok().and_then(|v| v.try_into().ok()).ok_or(Refusal::Malformed)
}

/// SHA-256 of `bytes` as an array.
fn sha256(bytes: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(&Sha256::digest(bytes));
    out
}

/// The cluster's request key: signs requests, and (inside a [`Gate`]) checks them.
pub struct Credential {
    key: Zeroizing<[u8; 32]>,
}

impl Credential {
    pub fn from_secret(secret: Option<&str>) -> Self {
        let key = match secret {
            Some(s) => idnode_keys::derive_key(s.as_bytes(), KEY_PURPOSE),
            None => Zeroizing::new(idnode_keys::random_bytes::<32>()),
        };
        Credential { key }
    }

    /// The MAC over everything the header and request line say; the body enters only through
    /// its declared length and digest, so it can be checked before the body is read.
    fn mac(&self, method: &str, path: &str, s: &Signed) -> Hmac<Sha256> {
        // Variable parts are length-prefixed, the rest fixed-size: no two requests share an
        // input. (HMAC takes a key of any length: the error case cannot happen.)
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key[..]).unwrap_or_else(|_| unreachable!());
        for part in [SCHEME.as_bytes(), method.as_bytes(), path.as_bytes()] {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        mac.update(&s.ts.to_be_bytes());
        mac.update(&s.nonce);
        mac.update(&s.to.to_be_bytes());
        mac.update(&s.len.to_be_bytes());
        mac.update(&s.digest);
        mac
    }

    /// Constant-time check of the header's MAC.
    fn verify_mac(&self, method: &str, path: &str, s: &Signed) -> Result<(), Refusal> {
        self.mac(method, path, s).verify_slice(&s.tag).map_err(|_| Refusal::BadMac)
    }

    /// The header value for one request to member `to`, signed at `now` (unix seconds) with a
    /// fresh nonce.
    pub fn sign(&self, method: &str, path: &str, body: &[u8], to: u64, now: i64) -> String {
        let mut s = Signed {
            ts: now,
            nonce: idnode_keys::random_bytes::<16>(),
            to,
            len: body.len() as u64,
            digest: sha256(body),
            tag: [0; 32],
        };
        let tag = self.mac(method, path, &s).finalize().into_bytes();
        s.tag.copy_from_slice(&tag);
        s.header()
    }
}

/// Unix seconds now.
pub fn now_s() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// The header a request to member `to` of a cluster with `secret` must carry (for tools that
/// call the peer or operator routes): `method` and `path_and_query` as sent, `body` the exact
/// bytes sent. A tool learns `to` from the member's [`crate::PATH_MEMBER_ID`] route.
pub fn sign_request(secret: &str, to: u64, method: &str, path_and_query: &str, body: &[u8]) -> (&'static str, String) {
    (HEADER, Credential::from_secret(Some(secret)).sign(method, path_and_query, body, to, now_s()))
}
