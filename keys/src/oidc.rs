//! ES256 signing keys of the OAuth2/OIDC provider (one set per domain). A key is drawn by
//! the node that proposes it and travels in a command, so every replica signs and publishes
//! the same key; the private half is PKCS#8 DER, the public half the JWK coordinates.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use p256::ecdsa::SigningKey;
use p256::elliptic_curve::sec1::Coordinates;
use p256::pkcs8::EncodePrivateKey;
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
}
