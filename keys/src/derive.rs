//! Keys derived from the cluster secret (HKDF-SHA256), one per purpose, so material that must
//! be readable by every member but by nobody else (snapshot streams between peers, backups)
//! needs no key distribution beyond the secret the members already share.

use hkdf::Hkdf;
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::KEY_LEN;

/// The key for `purpose` (a fixed, versioned label such as `"idnode snapshot stream v1"`).
pub fn derive_key(secret: &[u8], purpose: &str) -> Zeroizing<[u8; KEY_LEN]> {
    let hk = Hkdf::<Sha256>::new(Some(b"idnode-cluster-secret-kdf"), secret);
    let mut out = Zeroizing::new([0u8; KEY_LEN]);
    // 32 bytes is far below HKDF-SHA256's 8160-byte limit, so expansion cannot fail.
    if hk.expand(purpose.as_bytes(), &mut out[..]).is_err() {
        out.fill(0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purpose_and_secret_separate_keys() {
        let a = derive_key(b"secret", "snapshot v1");
        assert_eq!(*a, *derive_key(b"secret", "snapshot v1"));
        assert_ne!(*a, *derive_key(b"secret", "backup v1"));
        assert_ne!(*a, *derive_key(b"other", "snapshot v1"));
        assert_ne!(*a, [0u8; KEY_LEN]);
    }
}
