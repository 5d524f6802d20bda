//! Verification of external identity tokens: JWTs of OIDC identity providers (against the
//! provider's JWKS, `jwks`) and SPIFFE JWT-SVIDs (offline, against the trust domain's bundle).
//! Kubernetes service-account tokens are verified by the cluster (`token_review`).
//!
//! What is checked, for both kinds:
//! - the header's `alg` is an asymmetric algorithm the key allows (RS*, PS*, ES256/ES384):
//!   `none` and HS* are refused before any key is looked at;
//! - the signature;
//! - `exp` is required and must not have passed, `nbf` (if present) must have come, and
//!   `iat` (if present) must be a number not in the future, each with [`LEEWAY_SECS`] of
//!   allowance for clock skew between the issuer and this node;
//! - OIDC: `iss` equals the provider's `issuer` exactly, `aud` (a string or an array)
//!   contains the provider's `client_id`;
//! - SVID: `sub` is a SPIFFE ID of exactly the trust domain, `aud` contains the expected
//!   audience.
//!
//! Errors say which check failed and never echo the token (nor claim values taken from it).

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::jwks::{JwksCache, VerifyKey, RSA_ALGS};
use crate::state::providers::{OidcProvider, TrustDomain};

/// Clock-skew allowance (seconds) on `exp`, `nbf` and `iat`: a token is accepted up to 60 s
/// after its `exp` and from 60 s before its `nbf`.
pub const LEEWAY_SECS: i64 = 60;

/// A verified token's claims, for the mapping engine.
pub type Claims = Map<String, Value>;

/// Why a token was refused (each is a 401 at the login endpoints), or why it could not be
/// checked (`KeySetUnavailable`, `ReviewUnavailable`: the issuer could not be reached).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("the token is not a well-formed JWT")]
    Malformed,
    #[error("the token's signing algorithm ({0}) is not accepted")]
    Algorithm(String),
    #[error("no key of the issuer matches the token's key id")]
    UnknownKey,
    #[error("the token's signature does not verify")]
    Signature,
    #[error("the token's issuer (iss) is not the provider's")]
    Issuer,
    #[error("the token's audience (aud) does not include {0:?}")]
    Audience(String),
    #[error("the token has no valid expiry (exp)")]
    MissingExpiry,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet (nbf)")]
    NotYetValid,
    #[error("the token's issue time (iat) is not valid")]
    IssuedAt,
    #[error("the token's subject is not a SPIFFE ID of trust domain {0:?}")]
    Subject(String),
    #[error("the issuer's key set is unavailable: {0}")]
    KeySetUnavailable(String),
    #[error("the trust bundle holds no usable key")]
    NoBundleKey,
    #[error("the cluster did not authenticate the token{}", .0.as_deref().map(|e| format!(": {e}")).unwrap_or_default())]
    NotAuthenticated(Option<String>),
    #[error("the token review failed: {0}")]
    ReviewUnavailable(String),
}

/// Verifies an OIDC identity provider's JWT (see the module description) and returns its
/// claims. `now`: Unix seconds.
pub async fn verify_oidc_jwt(
    idp: &OidcProvider,
    token: &str,
    now: i64,
    cache: &JwksCache,
) -> Result<Claims, VerifyError> {
    let header = header(token)?;
    let set = cache.key_set(&idp.jwks_uri, header.kid.as_deref()).await?;
    let claims = verify_signature(token, header.alg, set.candidates(header.kid.as_deref()))?;
    if claims.get("iss").and_then(Value::as_str) != Some(idp.issuer.as_str()) {
        return Err(VerifyError::Issuer);
    }
    check_audience(&claims, &idp.client_id)?;
    check_times(&claims, now)?;
    Ok(claims)
}

/// Verifies a SPIFFE JWT-SVID offline against the trust domain's bundle (every key of the
/// bundle's certificates is tried; a `kid` is not required), for the expected `audience`.
pub fn verify_svid(td: &TrustDomain, token: &str, audience: &str, now: i64) -> Result<Claims, VerifyError> {
    let header = header(token)?;
    let keys = bundle_keys(&td.trust_bundle_pem);
    if keys.is_empty() {
        return Err(VerifyError::NoBundleKey);
    }
    let claims = verify_signature(token, header.alg, keys.iter())?;
    let sub = claims.get("sub").and_then(Value::as_str).unwrap_or_default();
    if !is_spiffe_id_of(sub, &td.trust_domain) {
        return Err(VerifyError::Subject(td.trust_domain.clone()));
    }
    check_audience(&claims, audience)?;
    check_times(&claims, now)?;
    Ok(claims)
}

/// `spiffe://<trust_domain>/<path>` with exactly this trust domain and a non-empty path
/// without empty, `.` or `..` segments, query or fragment (SPIFFE-ID §2).
pub fn is_spiffe_id_of(id: &str, trust_domain: &str) -> bool {
    let Some(rest) = id.strip_prefix("spiffe://") else { return false };
    let Some((td, path)) = rest.split_once('/') else { return false };
    td == trust_domain
        && !path.is_empty()
        && path.split('/').all(|seg| !seg.is_empty() && seg != "." && seg != "..")
        && path.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-/".contains(&b))
}

/// The JOSE header, with the algorithm checked to be an asymmetric one.
fn header(token: &str) -> Result<jsonwebtoken::Header, VerifyError> {
    let header = jsonwebtoken::decode_header(token).map_err(|_| unknown_alg(token))?;
    if !(RSA_ALGS.contains(&header.alg) || matches!(header.alg, Algorithm::ES256 | Algorithm::ES384)) {
        return Err(VerifyError::Algorithm(format!("{:?}", header.alg)));
    }
    Ok(header)
}

/// Why a header jsonwebtoken cannot read was refused: an `alg` it does not know (`none`
/// among them; named in the error when it is a short plain name), or a malformed token.
fn unknown_alg(token: &str) -> VerifyError {
    use base64::Engine;
    let header = token.split('.').next().unwrap_or_default();
    let alg = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header.trim_end_matches('='))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|h| h.get("alg").and_then(Value::as_str).map(str::to_owned));
    match alg {
        Some(a) if a.len() <= 16 && a.bytes().all(|b| b.is_ascii_alphanumeric()) => VerifyError::Algorithm(a),
        Some(_) => VerifyError::Algorithm("unknown".into()),
        None => VerifyError::Malformed,
    }
}

/// Checks the signature with the first key that allows `alg` and verifies it; claims are not
/// validated here (the callers check them against `now`).
fn verify_signature<'a>(
    token: &str,
    alg: Algorithm,
    keys: impl Iterator<Item = &'a VerifyKey>,
) -> Result<Claims, VerifyError> {
    let mut validation = Validation::new(alg);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    let mut tried = false;
    for key in keys.filter(|k| k.algs.contains(&alg)) {
        tried = true;
        match jsonwebtoken::decode::<Claims>(token, &key.key, &validation) {
            Ok(data) => return Ok(data.claims),
            Err(e) => match e.kind() {
                jsonwebtoken::errors::ErrorKind::InvalidSignature
                | jsonwebtoken::errors::ErrorKind::InvalidEcdsaKey
                | jsonwebtoken::errors::ErrorKind::InvalidRsaKey(_)
                | jsonwebtoken::errors::ErrorKind::InvalidKeyFormat
                | jsonwebtoken::errors::ErrorKind::Provider(_) => continue,
                _ => return Err(VerifyError::Malformed),
            },
        }
    }
    Err(if tried { VerifyError::Signature } else { VerifyError::UnknownKey })
}

/// `aud`, a string or an array of strings, contains `expected`.
fn check_audience(claims: &Claims, expected: &str) -> Result<(), VerifyError> {
    let ok = match claims.get("aud") {
        Some(Value::String(a)) => a == expected,
        Some(Value::Array(a)) => a.iter().any(|v| v.as_str() == Some(expected)),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(VerifyError::Audience(expected.to_owned()))
    }
}

/// A NumericDate claim (a JSON number, possibly fractional): `Ok(None)` when absent.
fn numeric_date(claims: &Claims, name: &str) -> Result<Option<i64>, ()> {
    match claims.get(name) {
        None => Ok(None),
        Some(v) => match v.as_i64() {
            Some(n) => Ok(Some(n)),
            None => v.as_f64().filter(|f| f.is_finite()).map(|f| Some(f.floor() as i64)).ok_or(()),
        },
    }
}

pub fn check_times(claims: &Claims, now: i64) -> Result<(), VerifyError> {
    let exp = numeric_date(claims, "exp").ok().flatten().ok_or(VerifyError::MissingExpiry)?;
    if now >= exp.saturating_add(LEEWAY_SECS) {
        return Err(VerifyError::Expired);
    }
    match numeric_date(claims, "nbf") {
        Err(()) => return Err(VerifyError::NotYetValid),
        Ok(Some(nbf)) if nbf > now.saturating_add(LEEWAY_SECS) => return Err(VerifyError::NotYetValid),
        Ok(_) => {}
    }
    match numeric_date(claims, "iat") {
        Err(()) => Err(VerifyError::IssuedAt),
        Ok(Some(iat)) if iat > now.saturating_add(LEEWAY_SECS) || iat > exp => Err(VerifyError::IssuedAt),
        Ok(_) => Ok(()),
    }
}

/// The verification keys of a PEM trust bundle: each certificate's subject public key, RSA or
/// EC P-256 / P-384 (other keys and unparsable blocks are skipped). Validity periods of the
/// bundle certificates are not checked: a SPIFFE bundle is a key set in certificate form.
pub fn bundle_keys(pem: &str) -> Vec<VerifyKey> {
    use x509_cert::der::asn1::ObjectIdentifier;
    const RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
    const EC: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
    const P256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
    const P384: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.132.0.34");
    let Ok(certs) = super::registry::load_pem_chain(pem) else { return Vec::new() };
    certs
        .iter()
        .filter_map(|cert| {
            let spki = &cert.tbs_certificate.subject_public_key_info;
            let bits = spki.subject_public_key.as_bytes()?;
            let (key, algs) = if spki.algorithm.oid == RSA {
                (DecodingKey::from_rsa_der(bits), RSA_ALGS.to_vec())
            } else if spki.algorithm.oid == EC {
                let curve = spki.algorithm.parameters.as_ref()?.decode_as::<ObjectIdentifier>().ok()?;
                let alg = match curve {
                    c if c == P256 => Algorithm::ES256,
                    c if c == P384 => Algorithm::ES384,
                    _ => return None,
                };
                (DecodingKey::from_ec_der(bits), vec![alg])
            } else {
                return None;
            };
            Some(VerifyKey { kid: None, key, algs })
        })
        .collect()
}
