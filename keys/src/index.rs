//! Keyed hashing of index terms: secondary indexes on names and other identifying values
//! store HMAC-SHA256(index key, namespace || 0 || term), so the data directory never holds
//! them in plaintext while equality look-ups still work.
//!
//! The index key is cluster state, not node key material: apply reads and writes index
//! entries, so every replica must compute the same terms or their uniqueness checks (and so
//! their command outcomes) would differ after one of them installs a snapshot from another.
//! It is created once at bootstrap, travels in the replicated log and in snapshots, and is
//! sealed at rest under each node's data key like every other value.

use std::fmt;

use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use zeroize::{Zeroize, ZeroizeOnDrop, Zeroizing};

use crate::{random_bytes, KeyError, KEY_LEN};

/// The cluster's index key, as replicated (never printed).
#[derive(Clone, Serialize, Deserialize, Zeroize, ZeroizeOnDrop)]
pub struct IndexKey([u8; KEY_LEN]);

impl IndexKey {
    pub fn generate() -> Self {
        IndexKey(random_bytes())
    }

    pub fn from_bytes(raw: &[u8]) -> Result<Self, KeyError> {
        let arr: [u8; KEY_LEN] = raw.try_into().map_err(|_| KeyError::Malformed)?;
        Ok(IndexKey(arr))
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.0[..]
    }

    pub fn hasher(&self) -> IndexHasher {
        IndexHasher { key: Zeroizing::new(self.0) }
    }
}

impl fmt::Debug for IndexKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("IndexKey(..)")
    }
}

pub struct IndexHasher {
    key: Zeroizing<[u8; KEY_LEN]>,
}

impl IndexHasher {
    pub fn hash(&self, namespace: &[u8], term: &[u8]) -> [u8; 32] {
        // HMAC accepts keys of any length, so construction cannot fail.
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&self.key[..]) else {
            return [0; 32];
        };
        mac.update(namespace);
        mac.update(&[0]);
        mac.update(term);
        mac.finalize().into_bytes().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_key_same_terms_and_no_key_in_debug() {
        let k = IndexKey::generate();
        let copy = IndexKey::from_bytes(k.as_bytes()).unwrap();
        assert_eq!(k.hasher().hash(b"ns", b"x"), copy.hasher().hash(b"ns", b"x"));
        assert_ne!(k.hasher().hash(b"ns", b"x"), IndexKey::generate().hasher().hash(b"ns", b"x"));
        assert_ne!(k.hasher().hash(b"ns", b"x"), k.hasher().hash(b"nt", b"x"), "namespaces separate terms");
        assert_eq!(format!("{k:?}"), "IndexKey(..)");
        assert!(IndexKey::from_bytes(&[1, 2, 3]).is_err());
    }
}
