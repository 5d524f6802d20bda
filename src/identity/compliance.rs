//! `[security_compliance]`: Keystone's PCI-DSS password rules, with its option names and
//! messages: lockout after failed attempts, password history, minimum age, expiry, change on
//! first use, and a required pattern. Everything is off unless configured.

use serde_json::Value;

use crate::config::settings::Settings;
use crate::http::error::{ApiError, ApiResult};
use crate::state::model::{PasswordState, User};
use crate::state::Command;

const DAY_MICROS: i64 = 86_400_000_000;

#[derive(Debug, Clone, Default)]
pub struct Compliance {
    /// Failed attempts that lock an account; 0 never locks.
    pub lockout_failure_attempts: u32,
    /// How long a lock lasts, in seconds.
    pub lockout_duration_s: i64,
    /// How many of the latest passwords (the current one included) a self-service change
    /// may not reuse; 0 turns the check off.
    pub unique_last_password_count: u32,
    /// Days a self-service password must be kept before the user may change it again.
    pub minimum_password_age_days: u32,
    /// Days a new password stays valid; 0 for ever.
    pub password_expires_days: u32,
    /// Passwords must match this (anchored at the start, as Python's `re.match`).
    pub password_regex: Option<regex::Regex>,
    pub password_regex_description: Option<String>,
    /// Passwords set by an administrator (create, reset) must be changed before use.
    pub change_password_upon_first_use: bool,
}

/// A user option (`options` of the user API) that is set to true.
pub fn user_option(u: &User, name: &str) -> bool {
    serde_json::from_str::<Value>(&u.options).ok().and_then(|o| o.get(name).and_then(Value::as_bool)).unwrap_or(false)
}

impl Compliance {
    pub fn from_settings(s: &Settings) -> anyhow::Result<Self> {
        let sec = "security_compliance";
        let num = |key: &str, default: i64| -> anyhow::Result<i64> {
            match s.get(sec, key).map(str::trim).filter(|v| !v.is_empty()) {
                None => Ok(default),
                Some(v) => v.parse::<i64>().ok().filter(|n| *n >= 0).ok_or_else(|| {
                    anyhow::anyhow!("[security_compliance] {key} = {v:?} is not a non-negative integer")
                }),
            }
        };
        let password_regex = match s.get(sec, "password_regex").map(str::trim).filter(|v| !v.is_empty()) {
            None => None,
            Some(p) => Some(
                regex::Regex::new(&format!("^(?:{p})"))
                    .map_err(|e| anyhow::anyhow!("[security_compliance] password_regex: {e}"))?,
            ),
        };
        let first_use = match s.get(sec, "change_password_upon_first_use").map(|v| v.trim().to_lowercase()) {
            None => false,
            Some(v) if ["1", "true", "yes", "on"].contains(&v.as_str()) => true,
            Some(v) if ["0", "false", "no", "off", ""].contains(&v.as_str()) => false,
            Some(v) => anyhow::bail!("[security_compliance] change_password_upon_first_use = {v:?} is not a boolean"),
        };
        Ok(Compliance {
            lockout_failure_attempts: num("lockout_failure_attempts", 0)?.min(u32::MAX as i64) as u32,
            lockout_duration_s: num("lockout_duration", 1800)?,
            unique_last_password_count: num("unique_last_password_count", 0)?.min(1000) as u32,
            minimum_password_age_days: num("minimum_password_age", 0)?.min(36500) as u32,
            password_expires_days: num("password_expires_days", 0)?.min(36500) as u32,
            password_regex,
            password_regex_description: s.get(sec, "password_regex_description").map(str::to_string),
            change_password_upon_first_use: first_use,
        })
    }

    pub fn lockout_micros(&self) -> i64 {
        self.lockout_duration_s.saturating_mul(1_000_000)
    }

    /// Whether failed attempts have locked the account at `now`.
    pub fn locked(&self, u: &User, st: Option<&PasswordState>, now: i64) -> bool {
        let Some(st) = st else { return false };
        self.lockout_failure_attempts > 0
            && !user_option(u, "ignore_lockout_failure_attempts")
            && st.failures >= self.lockout_failure_attempts
            && st.last_failure_at.saturating_add(self.lockout_micros()) > now
    }

    /// Whether the user's password has expired (a user may be exempt).
    pub fn expired(&self, u: &User, now: i64) -> bool {
        u.password_expires_at.is_some_and(|t| now >= t) && !user_option(u, "ignore_password_expiry")
    }

    /// `password_regex`, with Keystone's message (one final period, also when the
    /// description ends with one).
    pub fn check_pattern(&self, password: &str) -> ApiResult<()> {
        match &self.password_regex {
            Some(re) if !re.is_match(password) => Err(ApiError::bad_request(format!(
                "The password does not match the requirements: {}.",
                self.password_regex_description.as_deref().map_or("None", |d| d.trim_end().trim_end_matches('.'))
            ))),
            _ => Ok(()),
        }
    }

    /// When a password set at `now` expires: at once when an administrator set it and users
    /// must change such passwords first, else after `password_expires_days`.
    pub fn expires_at(&self, u: &User, now: i64, by_admin: bool) -> Option<i64> {
        if by_admin && self.change_password_upon_first_use && !user_option(u, "ignore_change_password_upon_first_use") {
            return Some(now);
        }
        if self.password_expires_days == 0 || user_option(u, "ignore_password_expiry") {
            return None;
        }
        // Keystone drops the microseconds of a computed expiry.
        let at = now + self.password_expires_days as i64 * DAY_MICROS;
        Some(at - at.rem_euclid(1_000_000))
    }

    /// The history entries a self-service change may not reuse (the current one included).
    pub fn recent<'a>(&self, st: &'a PasswordState) -> &'a [String] {
        let n = self.unique_last_password_count as usize;
        &st.history[st.history.len().saturating_sub(n)..]
    }

    /// The minimum-age rule of a self-service change, with Keystone's message.
    pub fn check_age(&self, st: &PasswordState, now: i64) -> ApiResult<()> {
        let min = self.minimum_password_age_days as i64;
        if min == 0 || !st.self_service {
            return Ok(());
        }
        let until = st.set_at + min * DAY_MICROS;
        if now >= until {
            return Ok(());
        }
        Err(ApiError::bad_request(format!(
            "You cannot change your password at this time due to the minimum password age. Once you change your \
             password, it must be used for {min} day(s) before it can be changed. Please try again in {} day(s) or \
             contact your administrator to reset your password.",
            (until - now) / DAY_MICROS
        )))
    }

    /// The command noting a password the user now has.
    pub fn record(&self, u: &User, hash: String, now: i64, self_service: bool) -> Command {
        Command::RecordPassword {
            user_id: u.id.clone(),
            hash,
            at: now,
            self_service,
            keep: self.unique_last_password_count.max(1),
            expires_at: self.expires_at(u, now, !self_service),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(options: &str) -> User {
        User {
            id: "u".into(),
            name: "n".into(),
            domain_id: "default".into(),
            enabled: true,
            password_hash: None,
            default_project_id: None,
            password_expires_at: None,
            extra: "{}".into(),
            options: options.into(),
            created_at: 0,
            tokens_valid_after: 0,
            federated: vec![],
        }
    }

    #[test]
    fn locks_after_the_limit_until_the_duration_passes() {
        let c = Compliance { lockout_failure_attempts: 2, lockout_duration_s: 10, ..Default::default() };
        let st = PasswordState { failures: 2, last_failure_at: 1_000_000, ..Default::default() };
        let u = user("{}");
        assert!(c.locked(&u, Some(&st), 1_000_000 + 9_999_999));
        assert!(!c.locked(&u, Some(&st), 1_000_000 + 10_000_000));
        assert!(!c.locked(&user(r#"{"ignore_lockout_failure_attempts": true}"#), Some(&st), 1_000_001));
        let one = PasswordState { failures: 1, ..st };
        assert!(!c.locked(&u, Some(&one), 1_000_001));
    }

    #[test]
    fn expiry_first_use_history_age_and_pattern() {
        let mut c = Compliance { change_password_upon_first_use: true, password_expires_days: 1, ..Default::default() };
        let u = user("{}");
        assert_eq!(c.expires_at(&u, 5, true), Some(5));
        assert_eq!(c.expires_at(&u, 5_500_000, false), Some(5_000_000 + DAY_MICROS));
        assert_eq!(c.expires_at(&user(r#"{"ignore_password_expiry": true}"#), 5, false), None);
        c.unique_last_password_count = 2;
        let st = PasswordState { history: vec!["a".into(), "b".into(), "c".into()], ..Default::default() };
        assert_eq!(c.recent(&st), ["b", "c"]);
        c.minimum_password_age_days = 1;
        let fresh = PasswordState { self_service: true, set_at: 0, ..Default::default() };
        assert!(c.check_age(&fresh, DAY_MICROS - 1).is_err());
        assert!(c.check_age(&fresh, DAY_MICROS).is_ok());
        assert!(c.check_age(&PasswordState { self_service: false, ..fresh }, 1).is_ok());
        c.password_regex = Some(regex::Regex::new("^(?:.{8,})").unwrap());
        c.password_regex_description = Some("at least 8 characters".into());
        let e = c.check_pattern("short").unwrap_err();
        assert_eq!(e.message, "The password does not match the requirements: at least 8 characters.");
        assert!(c.check_pattern("long enough").is_ok());
        c.password_regex_description = Some("Passwords need at least 8 characters.".into());
        let e = c.check_pattern("short").unwrap_err();
        assert_eq!(e.message, "The password does not match the requirements: Passwords need at least 8 characters.");
    }
}
