//! ES256 signing keys of the OAuth2/OIDC provider (one set per domain). A key is drawn by
//! the node that proposes it and travels in a command, so every replica signs and publishes
//! the same key; the private half is PKCS#8 DER, the public half the JWK coordinates.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use p256::elliptic_curve::sec1::Coordinates;
use p256::pkcs8::{DecodePrivateKey, EncodePrivateKey};
use zeroize::Zeroizing;

use crate::KeyError;

/// A fresh P-256 key pair.
pub struct Es256Key {
    /// PKCS#8 DER of the private key.
    pub pkcs8: Zeroizing<Vec<u8>>,
    /// Public point coordinates, base64url without padding (JWK `x` and `y`).
    pub x: String,
    pub y: String,
}

/// Draws a P-256 key from the operating system's CSPRNG.
pub fn generate_es256() -> Result<Es256Key, KeyError> {
    let key = SigningKey::random(&mut rand::rngs::OsRng);
    let der = key.to_pkcs8_der().map_err(|_| KeyError::Malformed)?;
    let point = key.verifying_key().to_encoded_point(false);
    let Coordinates::Uncompressed { x, y } = point.coordinates() else {
        return Err(KeyError::Malformed);
    };
    Ok(Es256Key {
        pkcs8: Zeroizing::new(der.as_bytes().to_vec()),
        x: URL_SAFE_NO_PAD.encode(x),
        y: URL_SAFE_NO_PAD.encode(y),
    })
}

/// A private key parsed for signing. Parse once and keep it: decoding PKCS#8 derives the public
/// key and checks it against the stored one, two scalar multiplications, twice the cost of a
/// signature. Signing lives in this crate so that the generic ECDSA code is compiled with its
/// optimisation level (the dev profile builds the idnode crate itself unoptimised).
pub struct Es256Signer(SigningKey);

impl Es256Signer {
    pub fn from_pkcs8(der: &[u8]) -> Result<Self, KeyError> {
        SigningKey::from_pkcs8_der(der).map(Es256Signer).map_err(|_| KeyError::Malformed)
    }

    /// ECDSA P-256 with SHA-256 over `msg`, deterministic (RFC 6979): `r || s`, as a JWS
    /// ES256 signature.
    pub fn sign(&self, msg: &[u8]) -> Result<[u8; 64], KeyError> {
        let sig: Signature = self.0.try_sign(msg).map_err(|_| KeyError::Malformed)?;
        let mut out = [0u8; 64];
        out.copy_from_slice(&sig.to_bytes());
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_distinct_and_coordinates_are_32_bytes() {
        let a = generate_es256().unwrap();
        let b = generate_es256().unwrap();
        assert_ne!(a.x, b.x);
        assert_eq!(URL_SAFE_NO_PAD.decode(&a.x).unwrap().len(), 32);
        assert_eq!(URL_SAFE_NO_PAD.decode(&a.y).unwrap().len(), 32);
        assert!(a.pkcs8.len() > 100);
    }

    #[test]
    fn signatures_verify_under_the_public_coordinates_and_are_deterministic() {
        use p256::ecdsa::signature::Verifier;
        let k = generate_es256().unwrap();
        let signer = Es256Signer::from_pkcs8(&k.pkcs8).unwrap();
        let sig = signer.sign(b"header.claims").unwrap();
        assert_eq!(sig, signer.sign(b"header.claims").unwrap(), "RFC 6979");
        let mut sec1 = vec![4u8];
        sec1.extend(URL_SAFE_NO_PAD.decode(&k.x).unwrap());
        sec1.extend(URL_SAFE_NO_PAD.decode(&k.y).unwrap());
        let vk = p256::ecdsa::VerifyingKey::from_sec1_bytes(&sec1).unwrap();
        vk.verify(b"header.claims", &Signature::from_slice(&sig).unwrap()).unwrap();
        assert!(Es256Signer::from_pkcs8(b"not a key").is_err());
    }
}
