//! Whether this node may answer from its own state without first asking the leader: the gate
//! in front of every token validation and password check. A node that was cut off (paused,
//! partitioned, just restarted) may have missed a revocation; it must catch up through a
//! read barrier before it answers, or say it cannot (503).
//!
//! A node is fresh when the leader has certainly spoken to it recently and it has applied
//! everything the leader said was committed:
//! - A follower stamps every append reply with its own clock; the leader echoes the latest
//!   stamp it received in its next append. An append carrying echo `t` was sent after `t` (on
//!   the follower's clock, so no clocks are compared across machines). A request that sat in a
//!   socket buffer while the process was stopped carries an echo from before the pause, so it
//!   cannot make the node look fresh after it.
//! - A leader vouches only for as long as it is fresh itself: it moves the echo back by its
//!   own quorum silence and sends none once that reaches the window. A leader cut off from
//!   its quorum together with some followers (five members split 2/3) would otherwise keep
//!   them fresh while the other side elects a leader and revokes.
//! - A leader counts the appends a quorum accepted, by the instant it sent them: followers
//!   refuse to vote for anyone else for the leader lease after accepting one, so no other
//!   leader can have committed anything since.
//!
//! Either way "recently" is within the minimum election timeout, and the applied index must
//! have reached the highest commit index heard of. A read index raises that index but is no
//! contact (`barrier_passed`). Being fresh decides whether a node may ask at all, not what it
//! answers from: a follower's check still takes a read index (`read_index`), so it sees every
//! change another member already showed. A node out of contact answers 503 rather than wait
//! out a leader it cannot reach; one that still reaches a quorum of voters waits for the
//! leader they elect (`reach`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

/// A reading of one process's clock: `epoch` tells processes (and restarts) apart, so an echo
/// from a previous life of the node is never taken for a recent one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    pub epoch: u64,
    pub micros: u64,
}

/// What a follower last heard from a leader it accepted.
#[derive(Debug, Default)]
struct Heard {
    /// The latest echoed stamp of this process (or barrier start), in micros since `origin`.
    at_micros: Option<u64>,
    /// The highest commit index a leader named.
    commit: u64,
}

pub struct Freshness {
    epoch: u64,
    origin: Instant,
    /// Staleness allowed: the minimum election timeout.
    window: Duration,
    heard: Mutex<Heard>,
    /// Leader side, per member: the send instant of its latest accepted append.
    acks: Mutex<HashMap<u64, Instant>>,
    /// Leader side, per member: the latest stamp it replied with (echoed in the next append).
    echoes: Mutex<HashMap<u64, Stamp>>,
    /// This node's id and the voters of the membership it last saw (`set_membership`).
    membership: Mutex<(u64, Vec<u64>)>,
    /// Read barriers this gate ran, for the metrics.
    pub(crate) barriers: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Freshness {
    pub fn new(window: Duration) -> Freshness {
        Freshness {
            epoch: u64::from_le_bytes(idnode_keys::random_bytes::<8>()),
            origin: Instant::now(),
            window,
            heard: Mutex::new(Heard::default()),
            acks: Mutex::new(HashMap::new()),
            echoes: Mutex::new(HashMap::new()),
            membership: Mutex::new((0, Vec::new())),
            barriers: AtomicU64::new(0),
        }
    }

    fn micros(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.origin).as_micros()).unwrap_or(u64::MAX)
    }

    /// This process's clock now, for an append reply.
    pub fn stamp(&self) -> Stamp {
        Stamp { epoch: self.epoch, micros: self.micros(Instant::now()) }
    }

    /// This process's clock epoch (what its own stamps carry).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Follower: an append a leader sent was accepted; it named `commit` as committed and
    /// echoed `echo`.
    pub fn heard(&self, echo: Option<Stamp>, commit: u64) {
        let mut h = lock(&self.heard);
        h.commit = h.commit.max(commit);
        if let Some(e) = echo.filter(|e| e.epoch == self.epoch) {
            h.at_micros = Some(h.at_micros.map_or(e.micros, |a| a.max(e.micros)));
        }
    }

    /// A read index named the leader's commit point `commit`. That is no word from a leader in
    /// the lease's sense: the leader may have answered from its own lease, which vouches for no
    /// instant later than its quorum's last acknowledgement. Counting the barrier's start as
    /// contact kept a follower cut off together with the old leader answering for half a
    /// second longer than the election timeout (the campaign's five-member 2/3 split).
    pub fn barrier_passed(&self, commit: u64) {
        self.heard(None, commit);
    }

    /// The staleness allowed: the minimum election timeout.
    pub fn window(&self) -> Duration {
        self.window
    }

    /// Follower: (how long since it last certainly heard a leader, `None` if it never did; the
    /// highest commit index heard of). A former leader counts its own quorum's last
    /// acknowledgement as word from a leader: one that stepped down never heard an echo, and
    /// would otherwise be taken for a node that just started (and wait out a whole barrier
    /// instead of answering 503 once cut off).
    pub fn follower_silence(&self) -> (Option<Duration>, u64) {
        let (heard, commit) = {
            let h = lock(&self.heard);
            let now = self.micros(Instant::now());
            (h.at_micros.map(|at| Duration::from_micros(now.saturating_sub(at))), h.commit)
        };
        let silence = match (heard, self.own_quorum_silence()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        (silence, commit)
    }

    /// Follower: (heard a leader within the window, the highest commit index heard of).
    #[cfg(test)]
    pub fn follower_contact(&self) -> (bool, u64) {
        let (silence, commit) = self.follower_silence();
        (silence.is_some_and(|s| s < self.window), commit)
    }

    /// Follower: heard a leader within the window and applied all it said was committed.
    #[cfg(test)]
    pub fn follower_fresh(&self, applied: u64) -> bool {
        let (contact, commit) = self.follower_contact();
        contact && applied >= commit
    }

    /// [`Self::leader_silence`] for this node in the membership it last saw.
    fn own_quorum_silence(&self) -> Option<Duration> {
        let m = lock(&self.membership);
        self.leader_silence(m.0, &m.1)
    }

    /// The membership the leader side judges its quorum by: this node `me` and the `voters`.
    pub fn set_membership(&self, me: u64, voters: Vec<u64>) {
        *lock(&self.membership) = (me, voters);
    }

    /// Leader side: the stamp to echo to `target` in the next append, moved back by how long
    /// this leader has gone without a quorum's acknowledgement, so the follower's lease ends
    /// no later than the leader's own; none once that silence reached the window.
    pub fn echo_for(&self, target: u64) -> Option<Stamp> {
        let silence = self.own_quorum_silence().filter(|s| *s < self.window)?;
        let back = u64::try_from(silence.as_micros()).unwrap_or(u64::MAX);
        lock(&self.echoes).get(&target).map(|s| Stamp { epoch: s.epoch, micros: s.micros.saturating_sub(back) })
    }

    /// Leader side: `target` replied to an append sent at `sent` with `stamp`; `accepted`
    /// when it acknowledged this node as its leader.
    pub fn replied(&self, target: u64, sent: Instant, stamp: Stamp, accepted: bool) {
        lock(&self.echoes).insert(target, stamp);
        if accepted {
            let mut acks = lock(&self.acks);
            let e = acks.entry(target).or_insert(sent);
            *e = (*e).max(sent);
        }
    }

    /// Leader: how long since a quorum of `voters`, itself included, last accepted an append
    /// (the age of the quorum's oldest latest acknowledgement); `None` if no quorum ever did or
    /// it is no voter.
    pub fn leader_silence(&self, me: u64, voters: &[u64]) -> Option<Duration> {
        if !voters.contains(&me) {
            return None;
        }
        let now = Instant::now();
        let acks = lock(&self.acks);
        let mut ages: Vec<Option<Duration>> = voters
            .iter()
            .map(|v| match v {
                v if *v == me => Some(Duration::ZERO),
                v => acks.get(v).map(|sent| now.saturating_duration_since(*sent)),
            })
            .collect();
        // `None` (never) sorts first: put it last.
        ages.sort_by_key(|a| a.map_or((1, Duration::ZERO), |d| (0, d)));
        ages.get(voters.len() / 2).copied().flatten()
    }

    /// Leader: together with itself, a quorum of `voters` accepted an append sent within the
    /// window.
    #[cfg(test)]
    pub fn leader_fresh(&self, me: u64, voters: &[u64]) -> bool {
        self.leader_silence(me, voters).is_some_and(|s| s < self.window)
    }

    pub fn barriers_run(&self) -> u64 {
        self.barriers.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: Duration = Duration::from_millis(150);

    #[test]
    fn a_follower_is_fresh_only_while_echoes_are_recent_and_applied_caught_up() {
        let f = Freshness::new(WINDOW);
        assert!(!f.follower_fresh(10), "a node that never heard a leader is not fresh");
        let s = f.stamp();
        f.heard(Some(s), 7);
        assert!(f.follower_fresh(7));
        assert!(!f.follower_fresh(6), "behind the commit index it heard of");
        std::thread::sleep(WINDOW + Duration::from_millis(20));
        assert!(!f.follower_fresh(7), "no recent echo");
        // A request that waited out a pause in a socket buffer echoes an old stamp.
        f.heard(Some(s), 7);
        assert!(!f.follower_fresh(7));
        let other_life = Stamp { epoch: s.epoch.wrapping_add(1), micros: u64::MAX };
        f.heard(Some(other_life), 7);
        assert!(!f.follower_fresh(7), "an echo from a previous process is ignored");
        f.barrier_passed(9);
        assert!(!f.follower_fresh(9), "a read index is no contact with the leader");
        f.heard(Some(f.stamp()), 0);
        assert!(!f.follower_fresh(8), "the commit point the read index named still counts");
        assert!(f.follower_fresh(9));
        assert!(f.follower_silence().0.is_some_and(|s| s < WINDOW));
    }

    #[test]
    fn a_leader_is_fresh_while_a_quorum_accepted_recent_appends() {
        let f = Freshness::new(WINDOW);
        assert!(f.leader_fresh(1, &[1]), "a single voter is its own quorum");
        assert!(!f.leader_fresh(1, &[1, 2, 3]));
        let sent = Instant::now();
        f.replied(2, sent, f.stamp(), false);
        assert!(!f.leader_fresh(1, &[1, 2, 3]), "a refusal is no acknowledgement");
        f.replied(2, sent, f.stamp(), true);
        assert!(f.leader_fresh(1, &[1, 2, 3]));
        assert!(!f.leader_fresh(1, &[1, 2, 3, 4, 5]));
        assert!(f.leader_silence(1, &[1, 2, 3]).is_some_and(|s| s < WINDOW));
        assert_eq!(f.leader_silence(4, &[1, 2, 3]), None, "no voter has no quorum");
        assert_eq!(f.leader_silence(1, &[1, 2, 3, 4, 5]), None, "a quorum never acknowledged");
        std::thread::sleep(WINDOW + Duration::from_millis(20));
        assert!(!f.leader_fresh(1, &[1, 2, 3]));
        assert!(f.leader_silence(1, &[1, 2, 3]).is_some_and(|s| s > WINDOW));
    }

    #[test]
    fn a_leader_vouches_only_while_a_quorum_hears_it() {
        let leader = Freshness::new(WINDOW);
        let follower = Freshness::new(WINDOW);
        leader.set_membership(1, vec![1, 2, 3, 4, 5]);
        // Member 2 replied, but only it: no quorum of five, so nothing to vouch with.
        leader.replied(2, Instant::now(), follower.stamp(), true);
        assert_eq!(leader.echo_for(2), None);
        let sent = Instant::now();
        leader.replied(3, sent, Freshness::new(WINDOW).stamp(), true);
        let echo = leader.echo_for(2).expect("a quorum acknowledged");
        follower.heard(Some(echo), 1);
        assert!(follower.follower_fresh(1));
        // Cut off from 3, 4 and 5 with member 2 alone: 2 still hears it, but the echo is moved
        // back by the leader's quorum silence, so 2's lease ends with the leader's.
        std::thread::sleep(WINDOW / 2);
        leader.replied(2, Instant::now(), follower.stamp(), true);
        let moved = leader.echo_for(2).expect("still within the window");
        follower.heard(Some(moved), 1);
        let (silence, _) = follower.follower_silence();
        assert!(silence.is_some_and(|s| s >= WINDOW / 2), "{silence:?}");
        std::thread::sleep(WINDOW / 2 + Duration::from_millis(20));
        leader.replied(2, Instant::now(), follower.stamp(), true);
        assert_eq!(leader.echo_for(2), None, "the leader's own lease lapsed");
        assert!(!follower.follower_fresh(1));
        assert!(!leader.leader_fresh(1, &[1, 2, 3, 4, 5]));
    }

    #[test]
    fn a_leader_that_stepped_down_counts_its_quorum_contact_as_word_from_a_leader() {
        let f = Freshness::new(WINDOW);
        assert_eq!(f.follower_silence().0, None, "a node that just started heard nobody");
        f.set_membership(1, vec![1, 2, 3]);
        f.replied(2, Instant::now(), Freshness::new(WINDOW).stamp(), true);
        // Now a follower (a higher term arrived) that never heard an echo.
        let (silence, _) = f.follower_silence();
        assert!(silence.is_some_and(|s| s < WINDOW), "{silence:?}");
        std::thread::sleep(WINDOW + Duration::from_millis(20));
        assert!(f.follower_silence().0.is_some_and(|s| s > WINDOW), "the silence grows from there");
        f.heard(Some(f.stamp()), 3);
        assert!(f.follower_fresh(3), "a new leader's echo counts as before");
    }
}
