//! RFC 6238 time-based one-time passwords as Keystone's `totp` method checks them: HMAC-SHA1,
//! 30-second steps, 6 digits, the secret a base32 string.

use std::sync::LazyLock;

use data_encoding::{Encoding, Specification};
use hmac::{Hmac, Mac};
use sha1::Sha1;
use subtle::ConstantTimeEq;

/// Seconds per step (Keystone's `PASSCODE_TIME_PERIOD`).
pub const STEP_S: u64 = 30;
/// Digits of a passcode (Keystone's `PASSCODE_LENGTH`).
pub const DIGITS: u32 = 6;

/// Base32 (RFC 4648) as Keystone decodes a secret: padding optional, leftover bits ignored
/// (Python's `b32decode`), and lower case accepted as authenticator apps print it.
static BASE32: LazyLock<Option<Encoding>> = LazyLock::new(|| {
    let mut spec = Specification::new();
    spec.symbols.push_str("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567");
    spec.translate.from.push_str("abcdefghijklmnopqrstuvwxyz");
    spec.translate.to.push_str("ABCDEFGHIJKLMNOPQRSTUVWXYZ");
    spec.check_trailing_bits = false;
    spec.encoding().ok()
});

/// The key of a `totp` credential's blob; `None` when it is not base32 (such a credential
/// matches no passcode, as in Keystone).
pub fn secret(blob: &str) -> Option<Vec<u8>> {
    let key = BASE32.as_ref()?.decode(blob.trim_end_matches('=').as_bytes()).ok()?;
    (!key.is_empty()).then_some(key)
}

/// The `digits`-digit passcode of `key` for time step `counter` (RFC 4226 truncation).
pub fn passcode(key: &[u8], counter: u64, digits: u32) -> Option<u32> {
    let mut mac = <Hmac<Sha1> as Mac>::new_from_slice(key).ok()?;
    mac.update(&counter.to_be_bytes());
    let h = mac.finalize().into_bytes();
    let offset = usize::from(h.get(19)? & 0x0f);
    let word = h.get(offset..offset + 4)?;
    let bin = u32::from_be_bytes([word[0] & 0x7f, word[1], word[2], word[3]]);
    Some(bin % 10u32.checked_pow(digits)?)
}

/// The newest step, among the one `now_s` falls in and the `previous` before it, of which
/// `given` is the passcode under one of `keys`. Every candidate is computed and compared in
/// constant time, so the time taken says nothing about which (if any) matched.
pub fn matching_step(keys: &[Vec<u8>], given: &str, now_s: u64, previous: u32) -> Option<u64> {
    let well_formed = given.len() == DIGITS as usize && given.bytes().all(|b| b.is_ascii_digit());
    let current = now_s / STEP_S;
    let mut found = None;
    for back in 0..=u64::from(previous) {
        let Some(step) = current.checked_sub(back) else { break };
        for key in keys {
            let Some(code) = passcode(key, step, DIGITS) else { continue };
            let expected = format!("{code:0width$}", width = DIGITS as usize);
            let same: bool = expected.as_bytes().ct_eq(given.as_bytes()).into();
            if same && well_formed && found.is_none() {
                found = Some(step);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238 Appendix B, SHA-1 rows: (time, 8-digit TOTP) for the ASCII secret
    /// "12345678901234567890".
    const RFC6238_SHA1: [(u64, u32); 6] = [
        (59, 94287082),
        (1111111109, 7081804),
        (1111111111, 14050471),
        (1234567890, 89005924),
        (2000000000, 69279037),
        (20000000000, 65353130),
    ];

    #[test]
    fn rfc6238_sha1_test_vectors() {
        let key = b"12345678901234567890";
        for (t, want) in RFC6238_SHA1 {
            assert_eq!(passcode(key, t / STEP_S, 8), Some(want), "T = {t}");
            assert_eq!(passcode(key, t / STEP_S, 6), Some(want % 1_000_000), "T = {t}, 6 digits");
        }
    }

    #[test]
    fn the_rfc_secret_in_base32_is_the_same_key() {
        // base32("12345678901234567890"), as a Keystone credential blob would hold it.
        let blob = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ";
        assert_eq!(secret(blob).as_deref(), Some(&b"12345678901234567890"[..]));
        assert_eq!(secret(&blob.to_lowercase()).as_deref(), Some(&b"12345678901234567890"[..]));
        assert_eq!(secret("GEZDGNBVGY======").as_deref(), Some(&b"1234567890"[..6]), "padding is optional");
        assert_eq!(secret("not base32!"), None);
        assert_eq!(secret(""), None);
    }

    #[test]
    fn the_current_and_previous_windows_match_and_nothing_older() {
        let keys = vec![b"12345678901234567890".to_vec()];
        let at = |t: u64| format!("{:06}", passcode(&keys[0], t / STEP_S, 6).unwrap_or_default());
        let now = 1_111_111_111;
        let step = now / STEP_S;
        assert_eq!(matching_step(&keys, &at(now), now, 1), Some(step));
        assert_eq!(matching_step(&keys, &at(now - 30), now, 1), Some(step - 1));
        assert_eq!(matching_step(&keys, &at(now - 60), now, 1), None, "two steps old");
        assert_eq!(matching_step(&keys, &at(now - 30), now, 0), None, "no previous window");
        assert_eq!(matching_step(&keys, &at(now - 90), now, 3), Some(step - 3));
        assert_eq!(matching_step(&keys, "14050471", now, 1), None, "8 digits");
        assert_eq!(matching_step(&keys, "", now, 1), None);
    }

    #[test]
    fn any_of_the_keys_may_match() {
        let keys = vec![b"another key".to_vec(), b"12345678901234567890".to_vec()];
        assert_eq!(matching_step(&keys, "050471", 1_111_111_111, 1), Some(1_111_111_111 / STEP_S));
        assert_eq!(matching_step(&[], "050471", 1_111_111_111, 1), None);
    }
}
