//! A member's own share of a cluster-wide figure: the figure divided by the members (rounded
//! up), counted locally with GCRA buckets. What a member counts when the leader cannot lease
//! it tokens, so a login never waits on the leader.

use std::num::NonZeroU32;
use std::sync::RwLock;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};

/// A member's share of `per_minute` among `members` (at least 1 a minute).
pub fn share_of(per_minute: u32, members: usize) -> u32 {
    let members = u32::try_from(members.max(1)).unwrap_or(u32::MAX);
    per_minute.div_ceil(members).max(1)
}

/// One bucket per provider, sized for the member count it was made for.
pub struct Shares {
    per_minute: u32,
    sized: RwLock<Sizing>,
}

struct Sizing {
    members: usize,
    limiter: Option<DefaultKeyedRateLimiter<String>>,
}

impl Shares {
    /// The burst is the whole minute's share, as a fixed window would allow.
    pub fn new(per_minute: u32) -> Self {
        Shares { per_minute, sized: RwLock::new(Sizing { members: 0, limiter: None }) }
    }

    /// Counts one event of `provider` on a cluster of `members`; Err: how long until the share
    /// admits one. A change of membership resizes the share (and starts it afresh).
    pub fn check(&self, provider: &str, members: usize) -> Result<(), Duration> {
        let sized = self.sized.read().map(|s| s.members == members).unwrap_or(false);
        if !sized {
            let mut s = self.sized.write().unwrap_or_else(|p| p.into_inner());
            if s.members != members {
                let quota = NonZeroU32::new(share_of(self.per_minute, members)).map(Quota::per_minute);
                *s = Sizing { members, limiter: quota.map(DefaultKeyedRateLimiter::keyed) };
            }
        }
        let s = self.sized.read().unwrap_or_else(|p| p.into_inner());
        let Some(l) = &s.limiter else { return Ok(()) };
        l.check_key(&provider.to_string()).map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }

    /// Forgets providers whose share is full again.
    pub fn housekeep(&self) {
        let s = self.sized.read().unwrap_or_else(|p| p.into_inner());
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
        let s = Shares::new(6);
        let admitted = |members| (0..10).filter(|_| s.check("p", members).is_ok()).count();
        assert_eq!(admitted(3), 2, "a third of 6 on a three-member cluster");
        assert_eq!(admitted(1), 6, "alone, the whole figure");
        assert!(s.check("p", 1).unwrap_err() > Duration::ZERO);
    }
}
