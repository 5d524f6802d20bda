//! The all-heard watermark: how a member answers a credential check from its own state with
//! no read index and still never contradicts what another member already showed.
//!
//! A follower in contact with the leader (`freshness`) answers only after applying every
//! commit index the leader named to it. So once every member that may be answering has
//! acknowledged an append naming commit index `w`, each of them answers from a state that
//! holds every entry up to `w`. The leader keeps that `w` (the watermark) and sends it with
//! every append; a member then:
//! - answers a check from its own state, with no round trip, while it is in contact with the
//!   leader that sent the watermark (its echo is recent) and that leader has published one;
//! - before sending an answer, waits until the watermark covers the last entry it applied that
//!   could refuse a credential (`last_revoking`: a revocation, a password change, a disable,
//!   a deleted grant). Nothing such an entry changed is shown before every answering member
//!   holds it, so a refusal seen on one member is seen on all of them afterwards;
//! - and the leader acknowledges such an entry only once the watermark passed it, so a check
//!   that starts after the caller heard "done" sees it wherever it runs.
//!
//! An entry that can only make a check succeed (a new project, a grant) needs neither: a
//! refusal it would turn into an acceptance is confirmed with a read index first
//! (`TokenError::Lagging` for tokens).
//!
//! Who "may be answering": a member whose latest append reply (carrying the stamp the leader
//! echoes, `freshness`) the leader received within twice the freshness window. The follower's
//! own lease runs from that stamp, which it took before the leader received it, for one
//! window; the factor two leaves room for clocks that run at different rates. A member that
//! stops replying (cut off, paused) leaves the set when that runs out, and the watermark
//! moves on without it: by then it answers only after a read index or not at all.
//!
//! A new leader publishes nothing until a watermark reaches the first entry of its own term:
//! before that, the commit index it names may lie behind what its predecessor committed (and
//! some member may have shown), so its members keep taking read indexes until then. A member
//! uses the watermark of the term it is in, taken from the same append as its echo.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::freshness::Stamp;

/// What a follower took from its leader's latest append with an echo and a watermark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Known {
    term: u64,
    watermark: u64,
    /// The latest echoed stamp's micros (this process's clock, `Freshness::stamp`), if any.
    echo_micros: Option<u64>,
}

/// The leader's view of one member.
#[derive(Debug, Clone, Copy)]
struct Member {
    /// When its latest reply arrived (it may be answering until twice the window after).
    replied_at: Instant,
    /// The commit index named in the latest append it accepted.
    heard: u64,
}

#[derive(Debug, Default)]
struct LeaderSide {
    term: u64,
    /// Set once this leader applied an entry of its own term: the applied index then.
    term_start: Option<u64>,
    published: Option<u64>,
    members: HashMap<u64, Member>,
}

pub struct Watermark {
    /// Freshness window (the minimum election timeout).
    window: Duration,
    /// Whether the cluster runs a version whose members all take the watermark path.
    enabled: AtomicBool,
    /// The highest index this member applied (or took from a snapshot) that may refuse a
    /// credential. Raised before the entry's writes land, so a reader that saw them sees it.
    last_revoking: AtomicU64,
    /// The (term, index) of the last entry this member applied.
    applied: Mutex<(u64, u64)>,
    leader: Mutex<LeaderSide>,
    known: Mutex<Option<Known>>,
    /// Woken whenever a watermark moves (published here or learned from the leader).
    moved: Notify,
    /// Checks answered from local state without a read index, for the metrics.
    pub(crate) local_answers: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Watermark {
    pub fn new(window: Duration) -> Watermark {
        Watermark {
            window,
            enabled: AtomicBool::new(false),
            last_revoking: AtomicU64::new(0),
            applied: Mutex::new((0, 0)),
            leader: Mutex::new(LeaderSide::default()),
            known: Mutex::new(None),
            moved: Notify::new(),
            local_answers: AtomicU64::new(0),
        }
    }

    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Release);
    }

    pub fn enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// Apply: an entry at `index` that may refuse a credential is about to land (or a
    /// snapshot up to `index` replaces the state).
    pub fn revoking(&self, index: u64) {
        self.last_revoking.fetch_max(index, Ordering::SeqCst);
    }

    pub fn last_revoking(&self) -> u64 {
        self.last_revoking.load(Ordering::SeqCst)
    }

    /// Apply: entries up to `index`, the last of `term`, are in the state.
    pub fn applied(&self, term: u64, index: u64) {
        *lock(&self.applied) = (term, index);
    }

    // ---- leader side ----

    /// Leader: `target` replied to an append naming commit index `commit` (`accepted` when it
    /// took this node as its leader). Every reply counts, whatever it said: the stamp it
    /// carries is what the next append echoes, and from that echo on the member may answer.
    pub fn replied(&self, term: u64, target: u64, commit: u64, accepted: bool) {
        let mut l = lock(&self.leader);
        l.reset_for(term);
        let now = Instant::now();
        let e = l.members.entry(target).or_insert(Member { replied_at: now, heard: 0 });
        e.replied_at = now;
        if accepted {
            e.heard = e.heard.max(commit);
        }
        drop(l);
        // A leader waiting to acknowledge a revoking entry recomputes (`publish`).
        self.moved.notify_waiters();
    }

    /// Leader: the watermark to send (and to answer by) in `term`, given this leader's own
    /// commit index. `None` until it applied an entry of its own term and every member that
    /// may be answering heard past that entry.
    pub fn publish(&self, term: u64, committed: u64) -> Option<u64> {
        let (applied_term, applied) = *lock(&self.applied);
        let mut l = lock(&self.leader);
        l.reset_for(term);
        if l.term_start.is_none() && applied_term == term {
            l.term_start = Some(applied);
        }
        let start = l.term_start?;
        let horizon = 2 * self.window;
        let now = Instant::now();
        let low = l
            .members
            .values()
            .filter(|m| now.saturating_duration_since(m.replied_at) < horizon)
            .map(|m| m.heard)
            .fold(committed, u64::min);
        if low < start {
            return l.published;
        }
        let before = l.published;
        let w = before.map_or(low, |p| p.max(low));
        l.published = Some(w);
        drop(l);
        if before != Some(w) {
            self.moved.notify_waiters();
        }
        Some(w)
    }

    // ---- follower side ----

    /// Follower: an accepted append of `term` echoed `echo` and carried `watermark`. The
    /// watermark counts whatever the echo: it says what the members heard. Only an echo of
    /// this process's clock makes the record one to answer by (`follower_watermark`).
    pub fn heard(&self, term: u64, echo: Option<Stamp>, own_epoch: u64, watermark: Option<u64>) {
        let Some(w) = watermark else { return };
        let echo = echo.filter(|e| e.epoch == own_epoch).map(|e| e.micros);
        let mut k = lock(&self.known);
        let next = match *k {
            Some(old) if old.term == term => {
                Known { term, watermark: old.watermark.max(w), echo_micros: old.echo_micros.max(echo) }
            }
            Some(old) if old.term > term => return,
            _ => Known { term, watermark: w, echo_micros: echo },
        };
        let moved = *k != Some(next);
        *k = Some(next);
        drop(k);
        if moved {
            self.moved.notify_waiters();
        }
    }

    /// Follower: the watermark of `term` when the append that carried it echoed a stamp less
    /// than the window old (`now_micros` on the same clock); else `None`.
    pub fn follower_watermark(&self, term: u64, now_micros: u64) -> Option<u64> {
        let k = (*lock(&self.known))?;
        let recent = k.echo_micros.is_some_and(|e| now_micros.saturating_sub(e) < self.window.as_micros() as u64);
        (k.term == term && recent).then_some(k.watermark)
    }

    /// Follower: the watermark its leader of `term` sent, however long ago (what it may
    /// settle by: every member that may be answering heard that far).
    pub fn known_in(&self, term: u64) -> Option<u64> {
        lock(&self.known).filter(|k| k.term == term).map(|k| k.watermark)
    }

    /// A future that completes at the next move of any watermark (register before checking).
    pub fn moved(&self) -> tokio::sync::futures::Notified<'_> {
        self.moved.notified()
    }
}

impl LeaderSide {
    /// A new term publishes afresh. What the members heard is kept: a stamp from an earlier
    /// leadership of this node may still be echoed, and what they heard then is lower, so it
    /// only holds the watermark back.
    fn reset_for(&mut self, term: u64) {
        if term != self.term {
            self.term = term;
            self.term_start = None;
            self.published = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: Duration = Duration::from_millis(100);

    #[test]
    fn nothing_is_published_before_an_entry_of_the_leaders_term_and_every_member_heard_past_it() {
        let w = Watermark::new(WINDOW);
        w.applied(2, 10);
        assert_eq!(w.publish(3, 10), None, "no entry of its own term applied yet");
        w.applied(3, 11);
        w.replied(3, 2, 8, true);
        w.replied(3, 3, 11, true);
        assert_eq!(w.publish(3, 12), None, "member 2 heard only up to 8");
        w.replied(3, 2, 12, true);
        assert_eq!(w.publish(3, 12), Some(11), "the lowest any member heard");
        w.replied(3, 3, 12, true);
        w.applied(3, 12);
        assert_eq!(w.publish(3, 12), Some(12));
        w.replied(3, 2, 9, false);
        assert_eq!(w.publish(3, 14), Some(12), "a refusal says nothing; it never goes back");
        w.replied(3, 4, 14, false);
        assert_eq!(w.publish(3, 14), Some(12), "a member that refused holds it back (its stamp may be echoed)");
    }

    #[test]
    fn a_member_that_stops_replying_leaves_after_twice_the_window() {
        let w = Watermark::new(WINDOW);
        w.applied(5, 20);
        w.replied(5, 2, 20, true);
        w.replied(5, 3, 20, true);
        assert_eq!(w.publish(5, 20), Some(20));
        w.replied(5, 2, 30, true);
        assert_eq!(w.publish(5, 30), Some(20), "member 3 may still be answering from 20");
        std::thread::sleep(2 * WINDOW + Duration::from_millis(20));
        w.replied(5, 2, 30, true);
        assert_eq!(w.publish(5, 30), Some(30), "member 3 fell silent: it no longer holds it back");
    }

    #[test]
    fn a_new_term_starts_over() {
        let w = Watermark::new(WINDOW);
        w.applied(5, 40);
        w.replied(5, 2, 40, true);
        assert_eq!(w.publish(5, 40), Some(40));
        w.replied(6, 3, 35, true);
        assert_eq!(w.publish(6, 45), None, "the new leadership has not applied an entry of its term");
        w.applied(6, 44);
        assert_eq!(w.publish(6, 45), None, "member 3 heard 35");
        w.replied(6, 3, 45, true);
        assert_eq!(w.publish(6, 45), None, "member 2 heard 40, under the earlier term");
        w.replied(6, 2, 45, true);
        assert_eq!(w.publish(6, 45), Some(45));
    }

    #[test]
    fn a_follower_uses_a_watermark_only_with_a_recent_echo_of_its_term() {
        let w = Watermark::new(WINDOW);
        let epoch = 7;
        let stamp = |micros| Some(Stamp { epoch, micros });
        w.heard(4, stamp(1_000), epoch, None);
        assert_eq!(w.follower_watermark(4, 1_000), None, "no watermark published");
        w.heard(4, stamp(1_000), epoch + 1, Some(9));
        assert_eq!(w.follower_watermark(4, 1_000), None, "an echo from another life of this process");
        assert_eq!(w.known_in(4), Some(9), "what the members heard counts all the same");
        w.heard(4, None, epoch, Some(9));
        assert_eq!(w.follower_watermark(4, 1_000), None, "no echo yet");
        w.heard(4, stamp(1_000), epoch, Some(9));
        assert_eq!(w.follower_watermark(4, 50_000), Some(9));
        assert_eq!(w.follower_watermark(4, 1_000 + 100_000), None, "the echo is a window old");
        assert_eq!(w.follower_watermark(5, 50_000), None, "another term");
        w.heard(4, stamp(2_000), epoch, Some(7));
        assert_eq!(w.follower_watermark(4, 50_000), Some(9), "never goes back within a term");
        w.heard(3, stamp(90_000), epoch, Some(50));
        assert_eq!(w.follower_watermark(4, 90_000), Some(9), "an older term's append changes nothing");
        w.heard(5, stamp(3_000), epoch, Some(4));
        assert_eq!(w.follower_watermark(5, 50_000), Some(4), "a new term's watermark replaces the old one");
    }
}
