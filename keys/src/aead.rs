//! XChaCha20-Poly1305 with random 192-bit nonces: random nonces are safe at this size, so no
//! nonce counter has to survive crashes.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

use crate::{random_bytes, KeyError};

pub const KEY_LEN: usize = 32;
pub const NONCE_LEN: usize = 24;

/// Seals `plaintext`, binding `ad`. Output: nonce || ciphertext+tag.
pub fn seal(key: &[u8; KEY_LEN], ad: &[u8], plaintext: &[u8]) -> Vec<u8> {
    let cipher = XChaCha20Poly1305::new(key.into());
    let nonce: [u8; NONCE_LEN] = random_bytes();
    let mut out = Vec::with_capacity(NONCE_LEN + plaintext.len() + 16);
    out.extend_from_slice(&nonce);
    // Encryption with a valid key and in-memory buffers cannot fail.
    let ct = cipher.encrypt(XNonce::from_slice(&nonce), Payload { msg: plaintext, aad: ad }).unwrap_or_default();
    out.extend_from_slice(&ct);
    out
}

/// Opens what [`seal`] produced with the same key and associated data.
pub fn open(key: &[u8; KEY_LEN], ad: &[u8], sealed: &[u8]) -> Result<Vec<u8>, KeyError> {
    if sealed.len() < NONCE_LEN + 16 {
        return Err(KeyError::Malformed);
    }
    let (nonce, ct) = sealed.split_at(NONCE_LEN);
    XChaCha20Poly1305::new(key.into())
        .decrypt(XNonce::from_slice(nonce), Payload { msg: ct, aad: ad })
        .map_err(|_| KeyError::Decrypt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_binding() {
        let key = [7u8; 32];
        let s = seal(&key, b"cf:users", b"hello");
        assert_eq!(open(&key, b"cf:users", &s).unwrap(), b"hello");
        assert!(open(&key, b"cf:projects", &s).is_err(), "associated data is bound");
        assert!(open(&[8u8; 32], b"cf:users", &s).is_err(), "key is bound");
        let mut t = s.clone();
        let last = t.len() - 1;
        t[last] ^= 1;
        assert!(open(&key, b"cf:users", &t).is_err(), "tampering is detected");
        assert_ne!(seal(&key, b"a", b"x"), seal(&key, b"a", b"x"), "nonces are random");
    }
}
