//! Failover without waiting out openraft's fixed election timers.
//!
//! openraft 0.9 draws each member's election timeout once, when the process starts, and a
//! follower campaigns only after the leader lease (`election_timeout_max`) plus that timeout.
//! Two followers whose timeouts are close collide, and keep colliding; a follower that is a
//! few entries behind may campaign first: it is refused, and the up-to-date follower, which
//! refused it without taking its term, then loses its own first try to the same term. Such
//! kills took 4-6 s to the next write, where etcd takes 1-2 s.
//!
//! So each voter watches how long it has heard nothing from a leader. Once the lease has
//! passed (no voter grants a vote before that anyway, so a leader that is alive is never
//! disturbed by this), it starts an election itself after a short random delay, and tries
//! again after another random delay while no leader appears: every try takes a higher term,
//! so the up-to-date member wins the round after a lagging member's refused try. A member that
//! learned from a refusal that its log is behind steps back for two lease lengths (as openraft
//! does) so it does not keep outbidding the members that can win. A process that stood still
//! (its own timer fired half a lease late) stays out of elections for a lease: its silence
//! spans its own stall. openraft's own election timer is off; this watcher is the only one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use openraft::ServerState;
use tokio::time::Instant;

use crate::RaftNode;

/// First try: this long after the lease at least (the voters' leases end at about the same
/// instant as ours: they heard the same last heartbeat)…
const FIRST_DELAY_MIN: Duration = Duration::from_millis(20);
/// …plus a random part up to this, so two members rarely start in the same round trip.
const FIRST_DELAY_SPREAD: Duration = Duration::from_millis(150);
/// Later tries: a vote round trip at least, plus a random part.
const RETRY_MIN: Duration = Duration::from_millis(100);
const RETRY_SPREAD: Duration = Duration::from_millis(200);

/// What the follower side heard: when a leader's append was last accepted, and until when this
/// member knows itself behind (micros since `origin`; 0 = never).
pub struct Contact {
    origin: Instant,
    last_append: AtomicU64,
    behind_until: AtomicU64,
    /// Snapshot chunks being handled (an install can outlast the lease).
    receiving: AtomicU64,
}

impl Default for Contact {
    fn default() -> Self {
        Contact {
            origin: Instant::now(),
            last_append: AtomicU64::new(0),
            behind_until: AtomicU64::new(0),
            receiving: AtomicU64::new(0),
        }
    }
}

/// Held while a snapshot chunk from a leader is handled.
pub struct Receiving<'a>(&'a Contact);

impl Drop for Receiving<'_> {
    fn drop(&mut self) {
        self.0.receiving.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Contact {
    fn now(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX).max(1)
    }

    /// A leader's append was accepted just now.
    pub fn appended(&self) {
        self.last_append.store(self.now(), Ordering::Release);
    }

    pub fn receiving(&self) -> Receiving<'_> {
        self.receiving.fetch_add(1, Ordering::AcqRel);
        Receiving(self)
    }

    /// A vote refusal said another member's log is longer: stay out of elections for `pause`.
    pub fn behind(&self, pause: Duration) {
        let until = self.now().saturating_add(u64::try_from(pause.as_micros()).unwrap_or(u64::MAX));
        self.behind_until.fetch_max(until, Ordering::AcqRel);
    }

    /// How long no leader was heard (`None`: never since this process started).
    pub(crate) fn silence(&self) -> Option<Duration> {
        match self.last_append.load(Ordering::Acquire) {
            0 => None,
            at => Some(Duration::from_micros(self.now().saturating_sub(at))),
        }
    }

    /// Behind by a refusal's word, or still taking in a leader's snapshot.
    pub(crate) fn knows_itself_behind(&self) -> bool {
        self.now() < self.behind_until.load(Ordering::Acquire) || self.receiving.load(Ordering::Acquire) > 0
    }
}

fn random(min: Duration, spread: Duration) -> Duration {
    min + spread.mul_f64(rand::random::<f64>())
}

impl RaftNode {
    /// Starts the watcher described in the module documentation, and turns openraft's own
    /// election timer off: that timer measured silence across a stall of this process too, and
    /// on a resume it raced the watcher's stall check (a third of the rounds of
    /// `failover::a_follower_resumed_after_a_pause_does_not_unseat_the_leader` still lost the
    /// leader's term with it on). The watcher elects in every case that timer did.
    pub(crate) fn spawn_fast_elections(self: &Arc<Self>) {
        self.raft.runtime_config().elect(false);
        let weak: Weak<RaftNode> = Arc::downgrade(self);
        let lease = Duration::from_millis(self.opts.election_timeout_max_ms);
        let tick = Duration::from_millis((self.opts.heartbeat_ms / 2).clamp(10, 50));
        tokio::spawn(async move {
            let started = Instant::now();
            let mut next_try: Option<Instant> = None;
            let mut last_tick = started;
            let mut quiet_until: Option<Instant> = None;
            loop {
                tokio::time::sleep(tick).await;
                let now = Instant::now();
                let late = now.saturating_duration_since(last_tick).saturating_sub(tick);
                last_tick = now;
                let Some(node) = weak.upgrade() else { return };
                if late >= lease / 2 {
                    // This process stood still (SIGSTOP, a paused VM): the silence it sees spans
                    // its own stall, not the leader's. Campaigning at once took a new term, and
                    // the healthy leader stepped down at its next append here, costing the
                    // cluster an election (five-member SIGSTOP cycles, docs/reliability.md).
                    // A lease gives the leader's next append time to arrive.
                    tracing::info!(stalled_ms = late.as_millis(), "this process stood still: no election for a lease");
                    quiet_until = Some(now + lease);
                    next_try = None;
                }
                if quiet_until.is_some_and(|until| now < until) {
                    continue;
                }
                quiet_until = None;
                let (voter, leading, voters) = node.with_metrics(|m| {
                    let voters = m.membership_config.membership().voter_ids().count();
                    let voter = m.membership_config.membership().voter_ids().any(|v| v == m.id);
                    (voter, m.state == ServerState::Leader, voters)
                });
                // Never heard a leader since this process started: silent since the start.
                let silence = node.contact.silence().unwrap_or_else(|| now.saturating_duration_since(started));
                // A sole voter has no one to wait for (openraft elected it on every tick).
                if !voter || leading || (voters > 1 && silence < lease) {
                    next_try = None;
                    continue;
                }
                let first_delay =
                    if voters == 1 { Duration::ZERO } else { random(FIRST_DELAY_MIN, FIRST_DELAY_SPREAD) };
                let due = *next_try.get_or_insert_with(|| now + first_delay);
                if now < due || node.contact.knows_itself_behind() {
                    continue;
                }
                next_try = Some(now + random(RETRY_MIN, RETRY_SPREAD));
                tracing::info!(silence_ms = silence.as_millis(), "no leader heard: starting an election");
                if let Err(e) = node.raft.trigger().elect().await {
                    tracing::warn!(error = %e, "could not start an election");
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silence_counts_from_the_last_accepted_append_and_behind_expires() {
        let c = Contact::default();
        assert_eq!(c.silence(), None, "never heard: openraft's own timers apply");
        c.appended();
        std::thread::sleep(Duration::from_millis(60));
        let s = c.silence().unwrap();
        assert!(s >= Duration::from_millis(60), "{s:?}");
        // Bounds read off the clock around each step, so a descheduled thread cannot fail them.
        let since = Instant::now();
        c.appended();
        // (Both ends are whole microseconds: one may be added.)
        assert!(c.silence().unwrap() <= since.elapsed() + Duration::from_micros(1), "counted from the new append");
        assert!(!c.knows_itself_behind());
        let since = Instant::now();
        c.behind(Duration::from_millis(50));
        assert!(c.knows_itself_behind() || since.elapsed() >= Duration::from_millis(50));
        std::thread::sleep(Duration::from_millis(60));
        assert!(!c.knows_itself_behind());
        let chunk = c.receiving();
        assert!(c.knows_itself_behind(), "no election while a snapshot comes in");
        drop(chunk);
        assert!(!c.knows_itself_behind());
    }
}
