//! The shadow registry's per-provider rate limits (spec, "Limits"): authentications through a
//! provider (`shadow_registry_auth_rate_limit`, 500 per minute) and principals it creates
//! (`shadow_registry_creation_rate_limit`, 50 per minute). Per node, like the other rate
//! limits: a cluster of N nodes admits up to N times the figure, and no request waits on
//! another node to be counted.

use std::num::NonZeroU32;

use axum::http::StatusCode;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};

use crate::http::error::ApiError;

/// One quota per provider id.
pub struct PerProvider {
    limiter: Option<DefaultKeyedRateLimiter<String>>,
    what: &'static str,
}

impl PerProvider {
    /// `per_minute` 0: no limit. The burst is the whole minute's quota, as a fixed window
    /// would allow.
    pub fn new(per_minute: u32, what: &'static str) -> Self {
        let limiter = NonZeroU32::new(per_minute).map(|n| DefaultKeyedRateLimiter::keyed(Quota::per_minute(n)));
        PerProvider { limiter, what }
    }

    /// Counts one event of `provider`: 429 with `Retry-After` over the quota.
    pub fn check(&self, provider: &str) -> Result<(), ApiError> {
        let Some(l) = &self.limiter else { return Ok(()) };
        l.check_key(&provider.to_string()).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            let secs = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
            ApiError {
                retry_after: Some(secs),
                ..ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!("Too many {} through this provider; retry later.", self.what),
                )
            }
        })
    }

    /// Forgets providers whose quota is full again.
    pub fn housekeep(&self) {
        if let Some(l) = &self.limiter {
            l.retain_recent();
            l.shrink_to_fit();
        }
    }
}
