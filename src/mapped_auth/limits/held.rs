//! The tokens a member holds of one cluster-wide figure (for one provider): leased from the
//! leader, spent one per event, lapsing after [`LAPSE`] so tokens taken long ago cannot all be
//! spent at once later. Also remembers a refusal (no token at the leader until a time) and a
//! failed lease (count the member's own share for a moment), so that while either lasts the
//! member does not ask the leader again for every event. Time is passed in (tested without
//! sleeping).

use std::time::{Duration, Instant};

/// How long leased tokens stay spendable. Short, because tokens spent in a minute were taken
/// from the leader's bucket within that minute or this long before it (the overshoot bound in
/// docs/operations.md); long enough that a member with little traffic does not lose most of a
/// batch.
pub const LAPSE: Duration = Duration::from_secs(30);
/// After a failed lease, how long the member counts its own share before asking again: one
/// failed call (up to its timeout) a second, not one per event.
pub const RETRY_LEADER_AFTER: Duration = Duration::from_secs(1);

/// What to do with one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// Admit it (a held token was spent).
    Admit,
    /// Refuse it: the leader's bucket has no token for this long.
    Refuse(Duration),
    /// Count it against this member's own share (the leader cannot be asked now).
    Share,
    /// Ask the leader for a lease, then report with [`Held::granted`], [`Held::refused`] or
    /// [`Held::failed`].
    Ask,
}

#[derive(Debug, Default)]
pub struct Held {
    tokens: u32,
    lapse: Option<Instant>,
    refused_until: Option<Instant>,
    share_until: Option<Instant>,
}

impl Held {
    /// Spends a held token, or says why not.
    pub fn take(&mut self, now: Instant) -> Take {
        if self.tokens > 0 && self.lapse.is_some_and(|l| now < l) {
            self.tokens -= 1;
            return Take::Admit;
        }
        self.tokens = 0;
        if let Some(until) = self.refused_until.filter(|u| now < *u) {
            return Take::Refuse(until - now);
        }
        if self.share_until.is_some_and(|u| now < u) {
            return Take::Share;
        }
        Take::Ask
    }

    /// The leader granted `n` tokens to a lease asked at `asked`; the event that asked spends
    /// one. The lapse counts from the asking, before the leader drew them.
    pub fn granted(&mut self, n: u32, asked: Instant) -> Take {
        self.refused_until = None;
        self.share_until = None;
        match n.checked_sub(1) {
            Some(rest) => {
                self.tokens = rest;
                self.lapse = Some(asked + LAPSE);
                Take::Admit
            }
            None => self.refused(Duration::from_secs(1), asked),
        }
    }

    /// The leader had no token for `retry_after`.
    pub fn refused(&mut self, retry_after: Duration, now: Instant) -> Take {
        self.refused_until = Some(now + retry_after);
        self.share_until = None;
        Take::Refuse(retry_after)
    }

    /// The lease failed: the member counts its share for [`RETRY_LEADER_AFTER`].
    pub fn failed(&mut self, now: Instant) -> Take {
        self.share_until = Some(now + RETRY_LEADER_AFTER);
        self.refused_until = None;
        Take::Share
    }

    /// Nothing held or remembered any more: the entry can be forgotten.
    pub fn idle(&self, now: Instant) -> bool {
        let past = |t: Option<Instant>| t.is_none_or(|t| now >= t);
        (self.tokens == 0 || past(self.lapse)) && past(self.refused_until) && past(self.share_until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_tokens_are_spent_then_lapse_and_refusals_and_failures_are_remembered() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut h = Held::default();
        assert_eq!(h.take(t0), Take::Ask);
        assert_eq!(h.granted(3, t0), Take::Admit, "the asking event spends one");
        assert_eq!([h.take(t0), h.take(t0), h.take(t0)], [Take::Admit, Take::Admit, Take::Ask]);
        h.granted(5, t0);
        assert_eq!(h.take(t0 + LAPSE - s(1)), Take::Admit);
        assert_eq!(h.take(t0 + LAPSE), Take::Ask, "the other three lapsed");
        assert!(h.idle(t0 + LAPSE));

        assert_eq!(h.refused(s(4), t0), Take::Refuse(s(4)));
        assert_eq!(h.take(t0 + s(1)), Take::Refuse(s(3)), "no call while the leader has none");
        assert!(!h.idle(t0 + s(1)));
        assert_eq!(h.take(t0 + s(4)), Take::Ask);

        assert_eq!(h.failed(t0), Take::Share);
        assert_eq!(h.take(t0), Take::Share, "no call while the leader cannot be asked");
        assert_eq!(h.take(t0 + RETRY_LEADER_AFTER), Take::Ask);
        assert_eq!(h.granted(0, t0), Take::Refuse(s(1)), "an empty grant is a refusal");
    }
}
