//! Memory of the signed requests this node has already exchanged for a token, so a captured
//! request (a log line, a proxy, a client's retry queue) cannot be exchanged again while its
//! timestamp is still inside the accepted window. Each signature is kept only as a keyed hash
//! (a random key per process: the table holds nothing a reader could present) and only until
//! its timestamp leaves the window; after that the freshness check refuses it anyway.
//!
//! The table is per node, in memory: a cluster-wide table would cost a raft write on every
//! signed request, and the skew bound already limits a replay on another node to the window
//! (docs/decisions.md). It is bounded: when full of live entries it refuses new requests
//! (fail closed) rather than forgetting a signature that is still replayable.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};

use hmac::{Hmac, Mac};
use sha2::Sha256;

type Digest = [u8; 32];

/// Live signatures a node remembers: about 100 bytes each, so 25 MB at most, and room for
/// 140 signed requests a second sustained over the 30-minute window a signature can live.
pub const CAPACITY: usize = 250_000;

/// Why a signed request may not be exchanged now.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// This signature was already exchanged and its window has not passed.
    Replayed,
    /// The table is full of live entries; the oldest leaves it in this many seconds.
    Full { retry_after_s: u64 },
}

pub struct ReplayGuard {
    /// HMAC-SHA256 key of a full block, so keying cannot fail.
    key: [u8; 64],
    capacity: usize,
    table: Mutex<Table>,
}

#[derive(Default)]
struct Table {
    /// Keyed hash -> Unix micros after which it may be forgotten.
    until: HashMap<Digest, i64>,
    /// The same entries ordered by expiry, so pruning touches only expired ones.
    by_expiry: BTreeSet<(i64, Digest)>,
}

impl ReplayGuard {
    /// A table of at most `capacity` live signatures.
    pub fn new(capacity: usize) -> Self {
        ReplayGuard { key: idnode_keys::random_bytes(), capacity, table: Mutex::new(Table::default()) }
    }

    /// Records `signature` of credential `access` until `until` (Unix micros), or refuses it
    /// when it is already recorded. Check and record are one step, so two concurrent copies of
    /// a request cannot both pass.
    pub fn remember(&self, access: &str, signature: &str, until: i64, now: i64) -> Result<(), Refused> {
        let digest = self.digest(access, signature);
        let mut t = self.lock();
        t.forget_expired(now);
        if t.until.contains_key(&digest) {
            return Err(Refused::Replayed);
        }
        if t.until.len() >= self.capacity {
            let oldest = t.by_expiry.first().map_or(now, |(at, _)| *at);
            let wait_us = (oldest - now).max(0) as u64;
            return Err(Refused::Full { retry_after_s: wait_us.div_ceil(1_000_000).max(1) });
        }
        t.until.insert(digest, until);
        t.by_expiry.insert((until, digest));
        Ok(())
    }

    /// Live entries.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.lock().until.len()
    }

    fn digest(&self, access: &str, signature: &str) -> Digest {
        let mut mac = <Hmac<Sha256> as Mac>::new(&self.key.into());
        mac.update(access.as_bytes());
        mac.update(&[0]);
        mac.update(signature.as_bytes());
        mac.finalize().into_bytes().into()
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Table {
    fn forget_expired(&mut self, now: i64) {
        while let Some(&(at, digest)) = self.by_expiry.first() {
            if at > now {
                break;
            }
            self.by_expiry.pop_first();
            self.until.remove(&digest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_is_accepted_once_until_its_window_passes() {
        let g = ReplayGuard::new(10);
        assert_eq!(g.remember("ak", "sig", 100, 0), Ok(()));
        assert_eq!(g.remember("ak", "sig", 100, 50), Err(Refused::Replayed));
        assert_eq!(g.remember("other", "sig", 100, 50), Ok(()), "another credential's signature");
        assert_eq!(g.remember("ak", "sig2", 100, 50), Ok(()));
        assert_eq!(g.len(), 3);
        // Past its window the entry is forgotten (freshness refuses such a request anyway).
        assert_eq!(g.remember("ak", "sig", 300, 100), Ok(()));
        assert_eq!(g.len(), 1, "expired entries are pruned");
    }

    #[test]
    fn a_full_table_refuses_instead_of_forgetting() {
        let g = ReplayGuard::new(2);
        assert_eq!(g.remember("ak", "a", 5_000_000, 0), Ok(()));
        assert_eq!(g.remember("ak", "b", 9_000_000, 0), Ok(()));
        assert_eq!(g.remember("ak", "c", 9_000_000, 1_000_000), Err(Refused::Full { retry_after_s: 4 }));
        assert_eq!(g.remember("ak", "a", 9_000_000, 1_000_000), Err(Refused::Replayed), "nothing live was dropped");
        assert_eq!(g.remember("ak", "c", 9_000_000, 5_000_000), Ok(()), "room once the oldest expired");
    }
}
