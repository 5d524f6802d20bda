//! The per-provider rate limits (spec, "Limits"): authentications through a provider
//! (`shadow_registry_auth_rate_limit`, 500 per minute), principals it creates
//! (`shadow_registry_creation_rate_limit`, 50 per minute) and its SCIM writes
//! (`scim_realm_write_rate_limit`, 500 per minute). Each figure is the cluster's: every member
//! enforces its share, the figure divided by the members the cluster has (rounded up), so a
//! provider whose requests spread over all members stops at the figure, and no request waits
//! on another node to be counted (`docs/decisions.md`, "Cluster-wide rate limits").

use std::num::NonZeroU32;
use std::sync::RwLock;

use axum::http::StatusCode;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};

use crate::http::error::ApiError;

/// One quota per provider id: this member's share of the cluster's figure.
pub struct PerProvider {
    per_minute: u32,
    what: &'static str,
    share: RwLock<Share>,
}

/// The limiter for the member count it was sized for.
struct Share {
    members: usize,
    limiter: Option<DefaultKeyedRateLimiter<String>>,
}

/// A member's share of `per_minute` among `members` (at least 1 a minute).
pub fn share_of(per_minute: u32, members: usize) -> u32 {
    let members = u32::try_from(members.max(1)).unwrap_or(u32::MAX);
    per_minute.div_ceil(members).max(1)
}

impl PerProvider {
    /// `per_minute` 0: no limit. The burst is the whole minute's share, as a fixed window
    /// would allow.
    pub fn new(per_minute: u32, what: &'static str) -> Self {
        PerProvider { per_minute, what, share: RwLock::new(Share { members: 0, limiter: None }) }
    }

    /// Counts one event of `provider` on a cluster of `members`: 429 with `Retry-After` over
    /// this member's share. A change of membership resizes the share (and starts it afresh).
    pub fn check(&self, provider: &str, members: usize) -> Result<(), ApiError> {
        if self.per_minute == 0 {
            return Ok(());
        }
        let sized = self.share.read().map(|s| s.members == members).unwrap_or(false);
        if !sized {
            let mut s = self.share.write().unwrap_or_else(|p| p.into_inner());
            if s.members != members {
                let quota = NonZeroU32::new(share_of(self.per_minute, members)).map(Quota::per_minute);
                *s = Share { members, limiter: quota.map(DefaultKeyedRateLimiter::keyed) };
            }
        }
        let s = self.share.read().unwrap_or_else(|p| p.into_inner());
        let Some(l) = &s.limiter else { return Ok(()) };
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
        let s = self.share.read().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = &s.limiter {
            l.retain_recent();
            l.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_member_admits_its_share_and_a_new_membership_resizes_it() {
        assert_eq!([share_of(500, 1), share_of(500, 3), share_of(500, 5), share_of(2, 5)], [500, 167, 100, 1]);
        let l = PerProvider::new(6, "events");
        let admitted = |members| (0..10).filter(|_| l.check("p", members).is_ok()).count();
        assert_eq!(admitted(3), 2, "a third of 6 on a three-member cluster");
        assert_eq!(admitted(1), 6, "alone, the whole figure");
        let r = l.check("p", 1).unwrap_err();
        assert_eq!((r.status, r.retry_after.is_some()), (StatusCode::TOO_MANY_REQUESTS, true));
        assert!(PerProvider::new(0, "events").check("p", 3).is_ok(), "0: no limit");
    }
}
