//! Whether this member can reach a quorum of voters now. Both a follower waiting out an
//! election (the leader froze or left; the rest elect a new one within a few hundred
//! milliseconds of the lease) and a member cut off with a minority stop hearing a leader; only
//! the second should answer a credential check 503 at the election timeout. The first should
//! keep the check waiting for the next leader's read index, as a write through it waits for
//! the next leader (`RaftNode::ensure_fresh`).
//!
//! A member that has gone the freshness window without word from a leader asks every voter
//! for its version about every [`PROBE_EVERY`]; an answer is a round trip both ways. Appends
//! and votes this member sent and had answered count too. Only round trips count: a member
//! whose own packets are dropped (a one-way cut) still receives requests, but it cannot get a
//! leader's answer either.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::future::join_all;
use tokio::time::Instant;

use crate::RaftNode;

/// How often a member out of contact asks the voters.
const PROBE_EVERY: Duration = Duration::from_millis(100);
/// How long one ask may take (a peer slower than this counts as out of reach).
const PROBE_TIMEOUT: Duration = Duration::from_millis(300);

/// When each peer last answered this member (any of its calls).
#[derive(Default)]
pub(crate) struct Reach {
    answered: Mutex<HashMap<u64, Instant>>,
}

impl Reach {
    /// `peer` answered a call just now.
    pub(crate) fn answered(&self, peer: u64) {
        self.answered.lock().unwrap_or_else(|p| p.into_inner()).insert(peer, Instant::now());
    }

    /// Whether `me` and the voters that answered within `within` make a majority of `voters`.
    pub(crate) fn quorum(&self, me: u64, voters: &[u64], within: Duration) -> bool {
        let now = Instant::now();
        let answered = self.answered.lock().unwrap_or_else(|p| p.into_inner());
        let reached = voters
            .iter()
            .filter(|v| **v == me || answered.get(v).is_some_and(|at| now.saturating_duration_since(*at) < within))
            .count();
        reached * 2 > voters.len()
    }
}

impl RaftNode {
    /// A majority of the voters, this member included, answered it within the freshness
    /// window.
    pub(crate) fn quorum_in_reach(&self) -> bool {
        let voters: Vec<u64> = self.with_metrics(|m| m.membership_config.membership().voter_ids().collect());
        self.reach.quorum(self.id, &voters, self.freshness.window())
    }

    /// Asks the voters while this member hears no leader; ends when the node is dropped.
    pub(crate) fn spawn_reach_probes(self: &Arc<Self>) {
        let weak: Weak<RaftNode> = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(PROBE_EVERY).await;
                let Some(node) = weak.upgrade() else { return };
                if node.standing_now().0.is_some_and(|s| s < node.freshness.window()) {
                    continue;
                }
                let peers: Vec<(u64, String)> = node.with_metrics(|m| {
                    let membership = m.membership_config.membership();
                    membership
                        .voter_ids()
                        .filter(|v| *v != node.id)
                        .filter_map(|v| membership.get_node(&v).map(|n| (v, n.addr.clone())))
                        .collect()
                });
                let asks = peers.into_iter().map(|(id, addr)| {
                    let node = node.clone();
                    async move {
                        let answer: Result<crate::version::NodeVersion, _> =
                            node.client.call(id, &addr, crate::version::PATH_VERSION, &(), PROBE_TIMEOUT).await;
                        if answer.is_ok() {
                            node.reach.answered(id);
                        }
                    }
                });
                join_all(asks).await;
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quorum_counts_this_member_and_the_peers_that_answered_lately() {
        let r = Reach::default();
        let voters = [1, 2, 3, 4, 5];
        assert!(!r.quorum(1, &voters, Duration::from_secs(1)), "alone is no quorum of five");
        r.answered(2);
        assert!(!r.quorum(1, &voters, Duration::from_secs(1)), "two of five");
        r.answered(4);
        assert!(r.quorum(1, &voters, Duration::from_secs(1)), "three of five");
        assert!(!r.quorum(1, &voters, Duration::ZERO), "answers older than the window do not count");
        r.answered(9);
        assert!(!r.quorum(3, &[3, 9, 8, 7], Duration::from_secs(1)), "two of four is no majority");
    }
}
