//! `[token] rotate_every` and `[oauth2] rotate_every`: how often the leader rotates the
//! token key ring and each domain's OIDC signing keys (`rotation::schedule`,
//! `oauth2::schedule`), and the arithmetic that keeps every live token verifiable, checked at
//! startup (docs/operations.md, "Key rotation"). Off unless set.

use std::time::Duration;

use anyhow::{anyhow, bail};

use super::settings::Settings;

/// The schedules; None: that rotation stays manual.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeySchedule {
    pub token: Option<Duration>,
    pub oidc: Option<Duration>,
}

/// A duration setting (`30s`, `24h`, `7d`, `1w 2d`: humantime's syntax) in whole seconds,
/// at least one; unset or empty is None.
fn every(s: &Settings, section: &str) -> anyhow::Result<Option<Duration>> {
    let Some(text) = s.get(section, "rotate_every").map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let d = humantime::parse_duration(text)
        .map_err(|e| anyhow!("[{section}] rotate_every = {text:?} is not a duration such as 24h or 7d: {e}"))?;
    if d.as_secs() == 0 || d.subsec_nanos() != 0 {
        bail!("[{section}] rotate_every = {text:?} must be a whole number of seconds, at least 1s");
    }
    Ok(Some(d))
}

/// How often the leader looks whether a schedule is due: a tenth of it, from 1 s to a minute,
/// so a rotation lands at most that late and a daily schedule costs one read a minute.
pub fn poll_interval(every: Duration) -> Duration {
    (every / 10).clamp(Duration::from_secs(1), Duration::from_secs(60))
}

/// Token keys a ring must keep (Keystone's fernet rule, `max_active_keys`): a key stops signing
/// at the rotation after it became primary and must then survive the `ceil((expiration +
/// allow_expired_window) / rotate_every)` rotations its last tokens live through, beside the
/// staged and the primary key.
pub fn min_token_keys(expiration_s: i64, allow_expired_window_s: i64, every_s: u64) -> u64 {
    let lifetime = expiration_s.max(0) as u64 + allow_expired_window_s.max(0) as u64;
    lifetime.div_ceil(every_s.max(1)) + 2
}

/// The shortest schedule `max_active_keys` keys allow: `ceil(lifetime / (max_active_keys - 2))`.
/// None when no schedule does (fewer than three keys: the primary's tokens die with each rotation).
pub fn min_token_every_s(expiration_s: i64, allow_expired_window_s: i64, max_active_keys: u32) -> Option<u64> {
    let lifetime = expiration_s.max(0) as u64 + allow_expired_window_s.max(0) as u64;
    let secondaries = u64::from(max_active_keys).checked_sub(2).filter(|n| *n > 0)?;
    Some(lifetime.div_ceil(secondaries).max(1))
}

impl KeySchedule {
    pub fn from_settings(s: &Settings) -> anyhow::Result<Self> {
        Ok(KeySchedule { token: every(s, "token")?, oidc: every(s, "oauth2")? })
    }

    /// Refuses a token schedule that would drop keys whose tokens still live.
    pub fn check_token(
        &self,
        expiration_s: i64,
        allow_expired_window_s: i64,
        max_active_keys: u32,
    ) -> anyhow::Result<()> {
        let Some(every) = self.token else { return Ok(()) };
        let need = min_token_keys(expiration_s, allow_expired_window_s, every.as_secs());
        if u64::from(max_active_keys) >= need {
            return Ok(());
        }
        let slower = match min_token_every_s(expiration_s, allow_expired_window_s, max_active_keys) {
            Some(s) => format!(", or set [token] rotate_every to at least {s}s"),
            None => String::new(),
        };
        bail!(
            "[token] max_active_keys = {max_active_keys} is too few for [token] rotate_every = {}: tokens live [token] \
             expiration ({expiration_s} s) plus [token] allow_expired_window ({allow_expired_window_s} s), so each \
             key must outlive ceil(({expiration_s} + {allow_expired_window_s}) / {}) rotations beside the staged and \
             primary keys; set [token] max_active_keys to at least {need}{slower}",
            humantime::format_duration(every),
            every.as_secs(),
        )
    }

    /// Refuses an OIDC schedule faster than `[oauth2] key_publish_delay`: the staged key must
    /// have been in `/jwks` that long before it signs (relying parties cache the set), so each
    /// scheduled rotation would be refused. Retired keys stay published until every token they
    /// signed has expired (`access_token_lifetime` plus a minute) whatever the schedule.
    pub fn check_oidc(&self, key_publish_delay_s: i64) -> anyhow::Result<()> {
        let Some(every) = self.oidc else { return Ok(()) };
        if every.as_secs() as i64 >= key_publish_delay_s {
            return Ok(());
        }
        bail!(
            "[oauth2] rotate_every = {} is shorter than [oauth2] key_publish_delay ({key_publish_delay_s} s), the time a \
             staged key must be published before it signs: set [oauth2] rotate_every to at least {key_publish_delay_s}s",
            humantime::format_duration(every)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(token: &str, oidc: &str) -> anyhow::Result<KeySchedule> {
        let mut s = Settings::default();
        s.set("token", "rotate_every", token);
        s.set("oauth2", "rotate_every", oidc);
        KeySchedule::from_settings(&s)
    }

    #[test]
    fn durations_read_as_operators_write_them() {
        let k = schedule("24h", "7d").unwrap();
        assert_eq!(k.token, Some(Duration::from_secs(86_400)));
        assert_eq!(k.oidc, Some(Duration::from_secs(7 * 86_400)));
        assert_eq!(schedule("2s", " ").unwrap().oidc, None, "empty is unset");
        assert_eq!(KeySchedule::from_settings(&Settings::default()).unwrap(), KeySchedule::default(), "off by default");
        for bad in ["daily", "24", "0s", "1500ms", "-1h"] {
            let err = schedule(bad, "1h").unwrap_err().to_string();
            assert!(err.contains("[token] rotate_every"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_token_arithmetic_is_keystones_fernet_rule() {
        // Keystone's documented example: 24 h tokens, rotation every 6 h, no window: 4 + 2.
        assert_eq!(min_token_keys(86_400, 0, 6 * 3600), 6);
        // idnode's defaults (1 h tokens, 48 h window) rotated daily: ceil(49 / 24) + 2.
        assert_eq!(min_token_keys(3600, 172_800, 86_400), 5);
        assert_eq!(min_token_keys(60, 0, 7), 11, "ceil(60 / 7) = 9");
        assert_eq!(min_token_every_s(3600, 172_800, 5), Some(58_800));
        assert_eq!(min_token_keys(3600, 172_800, 58_800), 5, "the shortest schedule suggested is enough");
        assert_eq!(min_token_keys(3600, 172_800, 58_799), 6, "and it is the shortest");
        assert_eq!(min_token_every_s(3600, 0, 2), None, "two keys never suffice");
    }

    #[test]
    fn a_schedule_that_would_strand_live_tokens_is_refused_naming_the_settings_and_the_fix() {
        let k = schedule("24h", "1h").unwrap();
        assert!(k.check_token(3600, 172_800, 5).is_ok());
        let err = k.check_token(3600, 172_800, 3).unwrap_err().to_string();
        for needle in
            ["[token] max_active_keys = 3", "[token] rotate_every", "[token] expiration", "allow_expired_window"]
        {
            assert!(err.contains(needle), "{needle}: {err}");
        }
        assert!(err.contains("at least 5") && err.contains("at least 176400s"), "{err}");
        assert!(KeySchedule::default().check_token(3600, 172_800, 2).is_ok(), "no schedule, no rule");

        assert!(k.check_oidc(300).is_ok());
        let fast = schedule("1h", "2m").unwrap();
        let err = fast.check_oidc(300).unwrap_err().to_string();
        assert!(
            err.contains("[oauth2] rotate_every") && err.contains("key_publish_delay") && err.contains("300s"),
            "{err}"
        );
    }
}
