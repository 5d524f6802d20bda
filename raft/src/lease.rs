//! The leader's count of cluster-wide figures: one token bucket per opaque key (the
//! application names a limit and what it counts, e.g. a provider), holding the cluster's whole
//! figure. Members take leases of a few tokens from it (`lease_call`), so a figure is the
//! cluster's whichever members the traffic reaches. Time is passed in, so the arithmetic is
//! tested without sleeping.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One token, in the buckets' unit (nano-tokens: refill stays exact at any figure).
const TOKEN: u128 = 1_000_000_000;
/// Keys the leader counts at once. A full table is swept first; still full, a lease is
/// refused as unavailable (the member then counts its own share, as without a leader).
const MAX_KEYS: usize = 100_000;
/// The longest key accepted: keys name a limit and a provider id.
pub(crate) const MAX_KEY_LEN: usize = 512;
/// How often buckets full again (idle keys) are forgotten.
const SWEEP_EVERY: Duration = Duration::from_secs(60);

/// What the leader grants: `granted` tokens (possibly 0), and when it has none, how long until
/// its bucket holds one again (the `Retry-After` of the refusal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseGrant {
    pub granted: u32,
    pub retry_after: Duration,
}

/// A figure per minute, refilled continuously, holding at most a minute's figure (the burst a
/// fixed window would allow, as the members' own buckets do).
struct Bucket {
    per_minute: u32,
    level: u128,
    at: Instant,
}

impl Bucket {
    fn full(per_minute: u32, now: Instant) -> Bucket {
        Bucket { per_minute, level: cap(per_minute), at: now }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_nanos();
        self.level = (self.level + elapsed * u128::from(self.per_minute) / 60).min(cap(self.per_minute));
        self.at = self.at.max(now);
    }
}

fn cap(per_minute: u32) -> u128 {
    u128::from(per_minute) * TOKEN
}

/// The buckets, by key.
pub(crate) struct LeaseBuckets {
    inner: Mutex<Table>,
}

struct Table {
    buckets: HashMap<String, Bucket>,
    swept: Option<Instant>,
}

impl Default for LeaseBuckets {
    fn default() -> Self {
        LeaseBuckets { inner: Mutex::new(Table { buckets: HashMap::new(), swept: None }) }
    }
}

impl LeaseBuckets {
    /// Takes up to `want` tokens (at least 1, at most the figure) from `key`'s bucket of
    /// `per_minute`. A figure that changed (a member configured differently) resizes the
    /// bucket, keeping what it holds up to the new figure. `None`: too many keys to count.
    pub(crate) fn grant(&self, key: &str, per_minute: u32, want: u32, now: Instant) -> Option<LeaseGrant> {
        if per_minute == 0 {
            return Some(LeaseGrant { granted: want, retry_after: Duration::ZERO });
        }
        let mut t = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if t.swept.is_none_or(|s| now.saturating_duration_since(s) >= SWEEP_EVERY) || t.buckets.len() >= MAX_KEYS {
            t.sweep(now);
        }
        if !t.buckets.contains_key(key) && t.buckets.len() >= MAX_KEYS {
            return None;
        }
        let b = t.buckets.entry(key.to_string()).or_insert_with(|| Bucket::full(per_minute, now));
        b.refill(now);
        if b.per_minute != per_minute {
            b.per_minute = per_minute;
            b.level = b.level.min(cap(per_minute));
        }
        let want = want.clamp(1, per_minute);
        let granted = u32::try_from((b.level / TOKEN).min(u128::from(want))).unwrap_or(0);
        b.level -= u128::from(granted) * TOKEN;
        let retry_after = if granted > 0 {
            Duration::ZERO
        } else {
            // The time until the bucket holds one token, rounded up to the nanosecond.
            let nanos = ((TOKEN - b.level) * 60).div_ceil(u128::from(per_minute));
            Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
        };
        Some(LeaseGrant { granted, retry_after })
    }
}

impl Table {
    /// Forgets buckets that are full again: a fresh bucket is full too.
    fn sweep(&mut self, now: Instant) {
        self.buckets.retain(|_, b| {
            b.refill(now);
            b.level < cap(b.per_minute)
        });
        self.swept = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn got(b: &LeaseBuckets, key: &str, per_minute: u32, want: u32, now: Instant) -> (u32, Duration) {
        let g = b.grant(key, per_minute, want, now).unwrap();
        (g.granted, g.retry_after)
    }

    #[test]
    fn a_bucket_grants_the_figure_then_refills_at_the_figure_per_minute() {
        let b = LeaseBuckets::default();
        let t0 = Instant::now();
        assert_eq!(got(&b, "k", 12, 5, t0), (5, Duration::ZERO));
        assert_eq!(got(&b, "k", 12, 5, t0), (5, Duration::ZERO));
        assert_eq!(got(&b, "k", 12, 5, t0), (2, Duration::ZERO), "what is left of the figure");
        assert_eq!(got(&b, "k", 12, 5, t0), (0, Duration::from_secs(5)), "one token every 5 s");
        let t1 = t0 + Duration::from_secs(3);
        assert_eq!(got(&b, "k", 12, 5, t1), (0, Duration::from_secs(2)));
        let t2 = t0 + Duration::from_secs(11);
        assert_eq!(got(&b, "k", 12, 5, t2), (2, Duration::ZERO), "two tokens refilled in 11 s");
        let t3 = t0 + Duration::from_secs(3600);
        assert_eq!(got(&b, "k", 12, 100, t3), (12, Duration::ZERO), "never more than the figure at once");
        assert_eq!(got(&b, "other", 12, 3, t3), (3, Duration::ZERO), "keys have their own bucket");
    }

    #[test]
    fn want_is_bounded_a_changed_figure_resizes_and_full_buckets_are_forgotten() {
        let b = LeaseBuckets::default();
        let t0 = Instant::now();
        assert_eq!(got(&b, "k", 60, 0, t0), (1, Duration::ZERO), "at least one token");
        assert_eq!(got(&b, "k", 10, 100, t0), (10, Duration::ZERO), "59 left, capped at the new figure");
        assert_eq!(got(&b, "k", 10, 1, t0), (0, Duration::from_secs(6)));
        assert_eq!(b.grant("k", 0, 7, t0), Some(LeaseGrant { granted: 7, retry_after: Duration::ZERO }));
        // A minute later the bucket is full again, and the sweep forgets it.
        b.inner.lock().unwrap().sweep(t0 + Duration::from_secs(60));
        assert!(b.inner.lock().unwrap().buckets.is_empty());
    }
}
