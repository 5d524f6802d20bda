//! The cryptography behind `jsonwebtoken`: RustCrypto for everything, except that ES256
//! signatures are verified with ring. An OAuth2 introspection of a token never seen before is
//! one ES256 verification; RustCrypto's portable P-256 does about 2,300 a second on one core
//! here, ring's assembly about five times that (docs/benchmarks.md, issue 32). ring is already
//! in the build for rustls, so this costs no extra C compilation. Signing stays on RustCrypto
//! (`Es256Signer`): a token is signed once and verified many times.

use std::sync::{LazyLock, Once};

use jsonwebtoken::crypto::{rust_crypto, CryptoProvider, JwtVerifier};
use jsonwebtoken::signature;
use jsonwebtoken::{Algorithm, DecodingKey, DecodingKeyKind};
use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_FIXED};

/// An ES256 public key (SEC1 uncompressed point, as `DecodingKey::from_ec_components` and the
/// PEM/DER constructors hold it) checking JOSE signatures (`r || s`, 64 bytes).
struct RingEs256(UnparsedPublicKey<Vec<u8>>);

impl signature::Verifier<Vec<u8>> for RingEs256 {
    fn verify(&self, msg: &[u8], sig: &Vec<u8>) -> Result<(), signature::Error> {
        self.0.verify(msg, sig).map_err(|_| signature::Error::new())
    }
}

impl JwtVerifier for RingEs256 {
    fn algorithm(&self) -> Algorithm {
        Algorithm::ES256
    }
}

fn verifier_factory(alg: &Algorithm, key: &DecodingKey) -> jsonwebtoken::errors::Result<Box<dyn JwtVerifier>> {
    match (alg, key.kind()) {
        (Algorithm::ES256, DecodingKeyKind::SecretOrDer(point)) => {
            Ok(Box::new(RingEs256(UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point.clone()))))
        }
        _ => (rust_crypto::DEFAULT_PROVIDER.verifier_factory)(alg, key),
    }
}

static PROVIDER: LazyLock<CryptoProvider> =
    LazyLock::new(|| CryptoProvider { verifier_factory, ..rust_crypto::DEFAULT_PROVIDER.clone() });

/// Makes this backend `jsonwebtoken`'s for the process. Call it before the first JWT is
/// decoded (startup); later calls do nothing. If something decoded a JWT first, jsonwebtoken
/// keeps its default (RustCrypto), which is slower but verifies the same signatures.
pub fn install_jwt_backend() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = PROVIDER.install_default();
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{decode, encode, EncodingKey, Header, Validation};
    use p256::ecdsa::SigningKey;
    use p256::pkcs8::EncodePrivateKey;
    use serde_json::json;

    fn key_pair() -> (EncodingKey, DecodingKey, DecodingKey) {
        let sk = SigningKey::random(&mut rand::rngs::OsRng);
        let der = sk.to_pkcs8_der().expect("pkcs8");
        let point = sk.verifying_key().to_encoded_point(false);
        let b64 = |b: &[u8]| {
            use base64::Engine;
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
        };
        let dk = DecodingKey::from_ec_components(&b64(point.x().expect("x")), &b64(point.y().expect("y"))).expect("dk");
        let other = SigningKey::random(&mut rand::rngs::OsRng).verifying_key().to_encoded_point(false);
        let wrong =
            DecodingKey::from_ec_components(&b64(other.x().expect("x")), &b64(other.y().expect("y"))).expect("dk");
        (EncodingKey::from_ec_der(der.as_bytes()), dk, wrong)
    }

    #[test]
    fn ring_verifies_what_rustcrypto_signs_and_refuses_the_rest() {
        install_jwt_backend();
        let (ek, dk, wrong) = key_pair();
        let token =
            encode(&Header::new(Algorithm::ES256), &json!({"sub": "x", "exp": 4_000_000_000u64}), &ek).expect("sign");
        let mut v = Validation::new(Algorithm::ES256);
        v.required_spec_claims.clear();
        assert_eq!(decode::<serde_json::Value>(&token, &dk, &v).expect("valid").claims["sub"], "x");
        assert!(decode::<serde_json::Value>(&token, &wrong, &v).is_err(), "another key's signature");
        // One bit of the signature, of the claims, or a truncated signature: refused.
        let (head, sig) = token.rsplit_once('.').expect("three parts");
        let flipped = format!("{head}.{}{}", if sig.starts_with('A') { 'B' } else { 'A' }, &sig[1..]);
        assert!(decode::<serde_json::Value>(&flipped, &dk, &v).is_err());
        let short = format!("{head}.{}", &sig[..sig.len() - 4]);
        assert!(decode::<serde_json::Value>(&short, &dk, &v).is_err());
        let (h, rest) = token.split_once('.').expect("parts");
        let (_, s) = rest.split_once('.').expect("parts");
        let other_claims =
            encode(&Header::new(Algorithm::ES256), &json!({"sub": "y", "exp": 4_000_000_000u64}), &ek).expect("sign");
        let body = other_claims.split('.').nth(1).expect("claims");
        assert!(decode::<serde_json::Value>(&format!("{h}.{body}.{s}"), &dk, &v).is_err(), "spliced claims");
        // The factory's ES256 verifier is ring's, whatever default the process ended up with.
        use base64::Engine;
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(sig).expect("b64");
        let verifier = verifier_factory(&Algorithm::ES256, &dk).expect("verifier");
        assert!(verifier.verify(head.as_bytes(), &raw).is_ok());
        assert!(verifier.verify(format!("{head}x").as_bytes(), &raw).is_err());
    }
}
