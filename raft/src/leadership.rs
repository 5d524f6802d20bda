//! Moving leadership to a chosen voter (`idnode cluster move-leader`).
//!
//! openraft 0.9 has no leadership transfer, so the target campaigns itself. A leader that has
//! led for a lease no longer holds its own lease and grants a higher term's vote from an
//! up-to-date member, stepping down: with three voters that vote and the target's own win at
//! once. So the target waits until the term has stood for a lease (a campaign against a newer
//! leader is refused, yet unseats it, and another member may win the next round). Otherwise (the leader is new, or five voters need more votes) the campaign still
//! unseats the leader, and the target campaigns again as soon as it has heard no leader for a
//! lease: the other followers heard the same last heartbeat, so their leases lapse then too,
//! and the target asks before their own election watchers (`election`) wait out their
//! shortest delay. The target keeps trying until it leads or its time is up.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::{ClusterStatus, RaftNode};

/// The peer route the member that should lead is asked on.
pub const PATH_TAKE_LEADERSHIP: &str = "/cluster/take-leadership";
/// Longest a move may take (the ops listener answers within its request timeout).
pub const MOVE_MAX: Duration = Duration::from_secs(30);
/// How often the target looks whether it won.
const POLL: Duration = Duration::from_millis(10);
/// How soon it campaigns again while no leader is heard: well inside the shortest delay the
/// other members' watchers wait after their leases lapse, yet longer than a vote round trip.
const LEADERLESS_RETRY: Duration = Duration::from_millis(30);
/// Beyond a lease, how long a term must have stood before the target campaigns against its
/// leader.
const TERM_MARGIN: Duration = Duration::from_millis(100);

/// "Become the leader within `wait_ms`", sent to the target member.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TakeLeadership {
    pub wait_ms: u64,
}

impl RaftNode {
    /// Moves leadership to voter `to` (this member or another, asked over the peer listener),
    /// and answers the cluster's status as the new leader sees it.
    pub async fn move_leader(&self, to: u64, timeout: Duration) -> Result<ClusterStatus, String> {
        let timeout = timeout.min(MOVE_MAX);
        let status = self.status();
        let Some(target) = status.voters.iter().find(|m| m.id == to) else {
            let voters: Vec<u64> = status.voters.iter().map(|m| m.id).collect();
            return Err(format!("member {to} is not a voter (the voters are {voters:?})"));
        };
        if to == self.id {
            return self.take_leadership(timeout).await;
        }
        let req = TakeLeadership { wait_ms: timeout.as_millis() as u64 };
        let answer: Result<ClusterStatus, String> = self
            .client
            .call(to, &target.addr, PATH_TAKE_LEADERSHIP, &req, timeout + Duration::from_secs(2))
            .await
            .map_err(|e| format!("member {to}: {e}"))?;
        answer
    }

    /// Campaigns until this member leads or `timeout` passed (see the module documentation).
    pub(crate) async fn take_leadership(&self, timeout: Duration) -> Result<ClusterStatus, String> {
        let deadline = Instant::now() + timeout.min(MOVE_MAX);
        let lease = Duration::from_millis(self.opts.election_timeout_max_ms);
        let mut last_campaign: Option<Instant> = None;
        let mut campaigns = 0u32;
        // The term in force and since when this member has seen it.
        let mut term_seen: Option<(u64, Instant)> = None;
        loop {
            if self.is_leader() {
                tracing::info!(campaigns, "leadership moved here");
                return Ok(self.status());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(format!(
                    "member {} did not win an election within {timeout:?} ({campaigns} campaigns; leader now: {:?})",
                    self.id,
                    self.leader_id()
                ));
            }
            let (voter, term) = self
                .with_metrics(|m| (m.membership_config.membership().voter_ids().any(|v| v == self.id), m.current_term));
            if !voter {
                return Err(format!("member {} is not a voter", self.id));
            }
            let since = match term_seen {
                Some((t, at)) if t == term => at,
                _ => term_seen.insert((term, now)).1,
            };
            // No leader heard for a lease: the others' leases lapsed, ask again soon. A leader
            // in office grants its vote only once it has led for its lease, and a campaign
            // before that only unseats it for another member to win: wait until the term has
            // stood that long here (it reached here after the leader's election).
            let leaderless = self.contact.silence().is_none_or(|s| s >= lease);
            let due = if leaderless {
                last_campaign.is_none_or(|at| now.saturating_duration_since(at) >= LEADERLESS_RETRY)
            } else {
                now.saturating_duration_since(since) >= lease + TERM_MARGIN
            };
            if due && !self.contact.knows_itself_behind() {
                campaigns += 1;
                last_campaign = Some(now);
                if let Err(e) = self.raft.trigger().elect().await {
                    return Err(format!("member {} could not campaign: {e}", self.id));
                }
            }
            tokio::time::sleep(POLL).await;
        }
    }
}
