//! The bearer format of an API key: `kscim_<secret>_<checksum>` (api-shapes §8.4), the secret
//! 43 base62 characters (256 bits), the checksum the CRC32 of the secret in 6 base62
//! characters. The checksum lets a malformed or mistyped key be refused without touching
//! the state; it is no security measure (the secret is). Only the secret's keyed hash is
//! stored (`state::api_keys`).

use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::state::Reader;

pub const PREFIX: &str = "kscim_";
pub const SECRET_LEN: usize = 43;
const CHECK_LEN: usize = 6;
const ALPHABET: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
/// Keyed-hash purpose of API key secrets.
const PURPOSE: &[u8] = b"api-key";

fn base62(mut n: u64, width: usize) -> String {
    let mut out = vec![b'0'; width];
    for slot in out.iter_mut().rev() {
        *slot = ALPHABET[(n % 62) as usize];
        n /= 62;
    }
    String::from_utf8(out).unwrap_or_default()
}

fn checksum(secret: &str) -> String {
    base62(u64::from(crc32fast::hash(secret.as_bytes())), CHECK_LEN)
}

/// A fresh secret: uniform base62 characters (bytes of 248 and above are redrawn, so none is
/// more likely than another).
pub fn new_secret() -> String {
    let mut out = String::with_capacity(SECRET_LEN);
    while out.len() < SECRET_LEN {
        for b in idnode_keys::random_bytes::<64>() {
            if b < 248 && out.len() < SECRET_LEN {
                out.push(ALPHABET[(b % 62) as usize] as char);
            }
        }
    }
    out
}

/// The bearer token of a secret.
pub fn bearer(secret: &str) -> String {
    format!("{PREFIX}{secret}_{}", checksum(secret))
}

/// The secret of a well-formed bearer token with a matching checksum.
pub fn parse(token: &str) -> Option<&str> {
    let rest = token.strip_prefix(PREFIX)?;
    let (secret, check) = rest.split_once('_')?;
    let well_formed = secret.len() == SECRET_LEN && secret.bytes().all(|b| b.is_ascii_alphanumeric());
    (well_formed && check.len() == CHECK_LEN && checksum(secret) == check).then_some(secret)
}

/// Hex of the secret's keyed hash under the cluster index key: the same on every node.
pub fn hash(node: &Core, secret: &str) -> ApiResult<String> {
    let hasher = node
        .engine
        .read()
        .index_hasher()?
        .ok_or_else(|| ApiError::unavailable("The cluster is not bootstrapped yet."))?;
    Ok(hex::encode(hasher.hash(PURPOSE, secret.as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_round_trip_and_a_changed_character_fails_the_checksum() {
        let s = new_secret();
        assert_eq!(s.len(), SECRET_LEN);
        assert_ne!(s, new_secret());
        let t = bearer(&s);
        assert!(t.starts_with("kscim_") && t.len() == 6 + 43 + 1 + 6, "{t}");
        assert_eq!(parse(&t), Some(s.as_str()));
        let mut typo = t.clone().into_bytes();
        typo[10] = if typo[10] == b'a' { b'b' } else { b'a' };
        assert_eq!(parse(std::str::from_utf8(&typo).unwrap()), None);
        for bad in ["", "kscim_", "kscim_abc_def", &t[1..], &format!("{t}x"), &t.replace("kscim_", "kscix_")] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
