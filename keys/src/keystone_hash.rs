//! Keystone's stored password hashes, verified natively so users moved from Keystone log in
//! with their old passwords (issue 52); the caller replaces such a hash with argon2id at the
//! first login it verifies. The formats are the ones Keystone 30's `password_hashers` write and
//! read, all in passlib's notation:
//!
//! - bcrypt: `$2b$12$<22 salt><31 digest>` (also `$2a$`, `$2x$`, `$2y$`);
//! - bcrypt_sha256: `$bcrypt-sha256$v=2,t=2b,r=12$<salt>$<digest>`, bcrypt over the base64
//!   of HMAC-SHA256 keyed by the salt text (passlib's first version, `$bcrypt-sha256$2b,12$`:
//!   of SHA-256, unkeyed);
//! - scrypt: `$scrypt$ln=16,r=8,p=1$<salt>$<digest>`;
//! - pbkdf2_sha512: `$pbkdf2-sha512$<rounds>$<salt>$<digest>`.
//!
//! Salts and digests of the last two are base64 without padding, `.` standing for `+`.
//! Work factors are bounded: a hash asking for more than any Keystone setting would (a
//! corrupted or hostile import) is refused, never computed for minutes.

use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};
use subtle::ConstantTimeEq;

/// Why a stored hash cannot be checked (the import reports it; a login just fails).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HashError {
    #[error("not a password hash format Keystone writes: {0}")]
    Unsupported(String),
    #[error("malformed {0} hash")]
    Malformed(&'static str),
    #[error("{0} work factor out of bounds")]
    TooCostly(&'static str),
}

/// The highest bcrypt cost accepted (Keystone's default is 12; each step doubles the work).
const MAX_BCRYPT_COST: u32 = 16;
/// The highest scrypt `ln` accepted, and the memory bound on `r` with it (Keystone's default
/// is ln=16, r=8: 64 MiB; this admits up to 256 MiB).
const MAX_SCRYPT_LN: u8 = 18;
const MAX_SCRYPT_MEMORY: u64 = 256 << 20;
const MAX_SCRYPT_P: u32 = 16;
/// The most PBKDF2 rounds accepted (Keystone's default is 25,000).
const MAX_PBKDF2_ROUNDS: u32 = 2_000_000;
/// The longest digest a stored hash may carry (passlib writes 32 or 64 bytes).
const MAX_DIGEST: usize = 128;

/// passlib's base64: standard alphabet, no padding, `.` for `+`.
const AB64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

fn ab64(s: &str, kind: &'static str) -> Result<Vec<u8>, HashError> {
    AB64.decode(s.replace('.', "+")).map_err(|_| HashError::Malformed(kind))
}

/// Whether `hashed` is one of the formats this module checks (by its prefix only).
pub fn is_keystone_hash(hashed: &str) -> bool {
    ["$2a$", "$2b$", "$2x$", "$2y$", "$bcrypt-sha256$", "$scrypt$", "$pbkdf2-sha512$"]
        .iter()
        .any(|p| hashed.starts_with(p))
}

/// Checks `password` against a Keystone hash; `Ok(false)` for a wrong password.
pub fn verify(password: &[u8], hashed: &str) -> Result<bool, HashError> {
    if hashed.starts_with("$bcrypt-sha256$") {
        bcrypt_sha256(password, hashed)
    } else if hashed.starts_with("$scrypt$") {
        scrypt(password, hashed)
    } else if hashed.starts_with("$pbkdf2-sha512$") {
        pbkdf2_sha512(password, hashed)
    } else if ["$2a$", "$2b$", "$2x$", "$2y$"].iter().any(|p| hashed.starts_with(p)) {
        bcrypt(password, hashed)
    } else {
        let ident = hashed.get(..hashed.get(1..).and_then(|s| s.find('$')).map_or(0, |i| i + 2)).unwrap_or("");
        Err(HashError::Unsupported(if ident.is_empty() { "no $ident$ prefix".into() } else { ident.into() }))
    }
}

/// `$2b$<cost>$<53 characters>`.
fn bcrypt(password: &[u8], hashed: &str) -> Result<bool, HashError> {
    let cost: u32 = hashed.get(4..6).and_then(|c| c.parse().ok()).ok_or(HashError::Malformed("bcrypt"))?;
    if cost > MAX_BCRYPT_COST {
        return Err(HashError::TooCostly("bcrypt"));
    }
    // Like Python's bcrypt (which Keystone calls), only the first 72 bytes count.
    let password = &password[..password.len().min(72)];
    ::bcrypt::verify(password, hashed).map_err(|_| HashError::Malformed("bcrypt"))
}

fn bcrypt_sha256(password: &[u8], hashed: &str) -> Result<bool, HashError> {
    const KIND: &str = "bcrypt_sha256";
    let rest = hashed.strip_prefix("$bcrypt-sha256$").ok_or(HashError::Malformed(KIND))?;
    let mut parts = rest.split('$');
    let (Some(params), Some(salt), Some(digest), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HashError::Malformed(KIND));
    };
    let (mut version, mut ident, mut rounds) = (None, None, None);
    if let Some((t, r)) = params.split_once(',').filter(|_| !params.contains('=')) {
        // passlib's first version: `$bcrypt-sha256$2b,12$...`.
        (version, ident, rounds) = (Some("1"), Some(t), r.parse::<u32>().ok());
    } else {
        for p in params.split(',') {
            match p.split_once('=') {
                Some(("v", v)) => version = Some(v),
                Some(("t", t)) => ident = Some(t),
                Some(("r", r)) => rounds = r.parse::<u32>().ok(),
                _ => return Err(HashError::Malformed(KIND)),
            }
        }
    }
    let (Some(ident), Some(rounds)) = (ident, rounds) else { return Err(HashError::Malformed(KIND)) };
    if !matches!(ident, "2a" | "2b") || salt.len() != 22 || digest.len() != 31 {
        return Err(HashError::Malformed(KIND));
    }
    let key = match version.unwrap_or("2") {
        "2" => {
            let mut mac = Hmac::<Sha256>::new_from_slice(salt.as_bytes()).map_err(|_| HashError::Malformed(KIND))?;
            mac.update(password);
            mac.finalize().into_bytes().to_vec()
        }
        "1" => Sha256::digest(password).to_vec(),
        _ => return Err(HashError::Unsupported(format!("bcrypt_sha256 version {}", version.unwrap_or("")))),
    };
    let key = base64::engine::general_purpose::STANDARD.encode(key);
    bcrypt(key.as_bytes(), &format!("${ident}${rounds:02}${salt}{digest}"))
}

/// The `$`-separated salt and digest after `prefix` and its parameter field.
fn fields<'a>(hashed: &'a str, prefix: &str, kind: &'static str) -> Result<(&'a str, Vec<u8>, Vec<u8>), HashError> {
    let rest = hashed.strip_prefix(prefix).ok_or(HashError::Malformed(kind))?;
    let mut parts = rest.split('$');
    let (Some(params), Some(salt), Some(digest), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HashError::Malformed(kind));
    };
    let (salt, digest) = (ab64(salt, kind)?, ab64(digest, kind)?);
    if digest.is_empty() || digest.len() > MAX_DIGEST {
        return Err(HashError::Malformed(kind));
    }
    Ok((params, salt, digest))
}

fn scrypt(password: &[u8], hashed: &str) -> Result<bool, HashError> {
    const KIND: &str = "scrypt";
    let (params, salt, digest) = fields(hashed, "$scrypt$", KIND)?;
    let (mut ln, mut r, mut p) = (None, None, None);
    for kv in params.split(',') {
        match kv.split_once('=') {
            Some(("ln", v)) => ln = v.parse::<u8>().ok(),
            Some(("r", v)) => r = v.parse::<u32>().ok(),
            Some(("p", v)) => p = v.parse::<u32>().ok(),
            _ => return Err(HashError::Malformed(KIND)),
        }
    }
    let (Some(ln), Some(r), Some(p)) = (ln, r, p) else { return Err(HashError::Malformed(KIND)) };
    let memory = 128u64.saturating_mul(u64::from(r)).saturating_mul(1u64 << ln.min(63));
    if ln > MAX_SCRYPT_LN || memory > MAX_SCRYPT_MEMORY || p > MAX_SCRYPT_P {
        return Err(HashError::TooCostly(KIND));
    }
    let params = ::scrypt::Params::new(ln, r, p, digest.len()).map_err(|_| HashError::Malformed(KIND))?;
    let mut out = vec![0u8; digest.len()];
    ::scrypt::scrypt(password, &salt, &params, &mut out).map_err(|_| HashError::Malformed(KIND))?;
    Ok(bool::from(out.ct_eq(&digest)))
}

fn pbkdf2_sha512(password: &[u8], hashed: &str) -> Result<bool, HashError> {
    const KIND: &str = "pbkdf2_sha512";
    let (rounds, salt, digest) = fields(hashed, "$pbkdf2-sha512$", KIND)?;
    let rounds: u32 = rounds.parse().map_err(|_| HashError::Malformed(KIND))?;
    if rounds == 0 {
        return Err(HashError::Malformed(KIND));
    }
    if rounds > MAX_PBKDF2_ROUNDS {
        return Err(HashError::TooCostly(KIND));
    }
    let mut out = vec![0u8; digest.len()];
    ::pbkdf2::pbkdf2_hmac::<Sha512>(password, &salt, rounds, &mut out);
    Ok(bool::from(out.ct_eq(&digest)))
}

#[cfg(test)]
#[path = "keystone_hash_tests.rs"]
mod tests;
