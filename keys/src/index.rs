//! Keyed hashing of index terms: secondary indexes on names and other identifying values
//! store HMAC-SHA256(index key, namespace || 0 || term), so the data directory never holds
//! them in plaintext while equality look-ups still work.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::KEY_LEN;

pub struct IndexHasher {
    key: Zeroizing<[u8; KEY_LEN]>,
}

impl IndexHasher {
    pub(crate) fn new(key: [u8; KEY_LEN]) -> Self {
        IndexHasher { key: Zeroizing::new(key) }
    }

    pub(crate) fn key_bytes(&self) -> &[u8] {
        &self.key[..]
    }

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
