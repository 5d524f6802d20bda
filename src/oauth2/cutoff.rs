//! The user's `tokens_valid_after` applied to the provider's tokens, as Keystone token
//! validation applies it: a password change, or a disable (re-enabled or not), ends every
//! access token and refresh family issued before it. The comparison reads the replicated user
//! record, so it holds on every node once the change is applied there.
//!
//! `tokens_valid_after` is in microseconds and JWT times are seconds, so the provider's tokens
//! carry their issue time in microseconds too (claim [`ISSUED_US`]), and a refresh family's id
//! begins with it (stored families have no field for it). Tokens and families from before this
//! fall back to their issue second, which only errs on the side of refusing.
//!
//! Newer tokens also carry the cut-off their issuer read with the user (claim [`SEEN_US`]; a
//! family's id holds it after the time), which decides without trusting the members' clocks
//! ([`crate::state::cutoff`]).

use serde_json::Value;

use crate::state::model::User;
use crate::state::oauth2::RefreshFamily;

/// The access-token claim holding its issue time in microseconds.
pub const ISSUED_US: &str = "iat_us";

/// The access-token claim holding the user's cut-off as the issuer read it, in microseconds.
pub const SEEN_US: &str = "cutoff_us";

/// Hex digits of the issue time at the start of a family id, and of the seen cut-off after it.
const FAMILY_TIME_DIGITS: usize = 16;
/// A family id with a seen cut-off: time, cut-off, random part.
const FAMILY_ID_WITH_SEEN: usize = 2 * FAMILY_TIME_DIGITS + 32;

/// When an access token was issued, in microseconds.
pub fn token_issued_us(claims: &Value) -> i64 {
    match claims.get(ISSUED_US).and_then(Value::as_i64) {
        Some(us) => us,
        None => claims.get("iat").and_then(Value::as_i64).unwrap_or(0).saturating_mul(1_000_000),
    }
}

/// A new refresh family's id: its issue time and the user's cut-off the issuer read
/// (microseconds, hex), and a random part.
pub fn new_family_id(now_us: i64, seen_us: i64) -> String {
    format!(
        "{:0width$x}{:0width$x}{}",
        now_us.max(0),
        seen_us.max(0),
        uuid::Uuid::new_v4().simple(),
        width = FAMILY_TIME_DIGITS
    )
}

/// When a refresh family was issued, in microseconds.
pub fn family_issued_us(f: &RefreshFamily) -> i64 {
    let from_id = matches!(f.id.len(), FAMILY_ID_WITH_SEEN | 48)
        .then(|| f.id.get(..FAMILY_TIME_DIGITS))
        .flatten()
        .and_then(|hex| i64::from_str_radix(hex, 16).ok())
        // The id's time is the proposer's clock, taken with `created_at`: never trust it
        // further than the same second.
        .filter(|us| us / 1_000_000 == f.created_at);
    from_id.unwrap_or_else(|| f.created_at.saturating_mul(1_000_000))
}

/// The user's cut-off a family's issuer read, for families whose id holds it.
fn family_seen_us(f: &RefreshFamily) -> Option<i64> {
    (f.id.len() == FAMILY_ID_WITH_SEEN)
        .then(|| f.id.get(FAMILY_TIME_DIGITS..2 * FAMILY_TIME_DIGITS))
        .flatten()
        .and_then(|hex| i64::from_str_radix(hex, 16).ok())
}

/// Whether the user's cut-off ends this access token.
pub fn token_cut_off(user: &User, claims: &Value, cluster_version: u32) -> bool {
    let seen = claims.get(SEEN_US).and_then(Value::as_i64);
    crate::state::cut_off(user, token_issued_us(claims), seen, cluster_version)
}

/// Whether the user's cut-off ends this refresh family.
pub fn family_cut_off(user: &User, f: &RefreshFamily, cluster_version: u32) -> bool {
    crate::state::cut_off(user, family_issued_us(f), family_seen_us(f), cluster_version)
}

/// Hex digits of the user's cut-off at the start of an authorization code.
const CODE_SEEN_DIGITS: usize = FAMILY_TIME_DIGITS;
/// Length of the random part of an authorization code (`secrets::new_secret`: 32 bytes, base64url).
const CODE_SECRET_LEN: usize = 43;

/// An authorization code: the user's cut-off its sign-in read (hex), then the secret. The code
/// is found by the keyed hash of all of it, so the cut-off in it cannot be altered.
pub fn new_code(seen_us: i64, secret: &str) -> String {
    format!("{:0width$x}{secret}", seen_us.max(0), width = CODE_SEEN_DIGITS)
}

/// The user's cut-off an authorization code's sign-in read, for codes that carry it.
pub fn code_seen_us(code: &str) -> Option<i64> {
    (code.len() == CODE_SEEN_DIGITS + CODE_SECRET_LEN)
        .then(|| code.get(..CODE_SEEN_DIGITS))
        .flatten()
        .and_then(|hex| i64::from_str_radix(hex, 16).ok())
}

/// Whether the user's cut-off ends what a sign-in on the pages led to (a consent, an
/// authorization code, a device approval): a password change or a disable after the sign-in
/// must not let it mint tokens. `seen` is the cut-off the sign-in read; without it (a device
/// approval keeps only the sign-in's second) the clocks of the member that signed the user in
/// and of the one that moved the cut-off decide, and a sign-in in the same second as a change
/// counts as before it: the user signs in again rather than a stale approval standing. Unlike
/// tokens, the seen cut-off decides at any cluster version: below the strict one a change may
/// leave the cut-off where it was, and then the sign-in stands, as it did before codes carried it.
pub fn sign_in_cut_off(user: &User, auth_time: i64, seen: Option<i64>) -> bool {
    match seen {
        Some(seen) => seen < user.tokens_valid_after,
        None => auth_time.saturating_mul(1_000_000) < user.tokens_valid_after,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn family(id: String, created_at: i64) -> RefreshFamily {
        RefreshFamily {
            id,
            domain_id: "d".into(),
            client_id: "c".into(),
            user_id: "u".into(),
            scopes: vec![],
            auth_time: created_at,
            created_at,
            expires_at: created_at + 10,
            current: String::new(),
            spent: vec![],
            revoked_at: None,
        }
    }

    #[test]
    fn family_ids_carry_their_issue_time_and_old_ones_fall_back_to_the_second() {
        let us = 1_700_000_000_123_456;
        let id = new_family_id(us, 42);
        assert!(id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!(family_issued_us(&family(id.clone(), us / 1_000_000)), us);
        assert_eq!(family_seen_us(&family(id.clone(), us / 1_000_000)), Some(42));
        // An id whose time disagrees with the record's second is not believed.
        assert_eq!(family_issued_us(&family(id, 5)), 5_000_000);
        let old = uuid::Uuid::new_v4().simple().to_string();
        assert_eq!(family_issued_us(&family(old.clone(), 7)), 7_000_000);
        assert_eq!(family_seen_us(&family(old, 7)), None);
        // The first ids with a time and no seen cut-off.
        let timed = format!("{:016x}{}", us, uuid::Uuid::new_v4().simple());
        assert_eq!(family_issued_us(&family(timed.clone(), us / 1_000_000)), us);
        assert_eq!(family_seen_us(&family(timed, us / 1_000_000)), None);
    }

    #[test]
    fn token_times_prefer_microseconds() {
        assert_eq!(token_issued_us(&serde_json::json!({"iat": 3, ISSUED_US: 3_500_000})), 3_500_000);
        assert_eq!(token_issued_us(&serde_json::json!({"iat": 3})), 3_000_000);
    }

    #[test]
    fn codes_carry_the_cut_off_their_sign_in_read() {
        let secret = crate::oauth2::secrets::new_secret();
        assert_eq!(secret.len(), CODE_SECRET_LEN);
        let code = new_code(1_700_000_000_123_456, &secret);
        assert_eq!(code_seen_us(&code), Some(1_700_000_000_123_456));
        assert_eq!(code_seen_us(&secret), None);
        assert_eq!(code_seen_us(&format!("zz{}", &code[2..])), None);
    }

    #[test]
    fn a_sign_in_is_ended_by_a_later_cut_off_only() {
        let mut u = crate::testkit::fixtures::user("u", "u", "d");
        u.tokens_valid_after = 10_500_000;
        // The cut-off it read is older than the user's: a change came after the sign-in.
        assert!(sign_in_cut_off(&u, 20, Some(10_499_999)));
        assert!(!sign_in_cut_off(&u, 5, Some(10_500_000)));
        // Only the second: a sign-in in the change's second falls with it, a later one stands.
        assert!(sign_in_cut_off(&u, 10, None));
        assert!(!sign_in_cut_off(&u, 11, None));
    }
}
