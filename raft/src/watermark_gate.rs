//! The node's side of the watermark (`watermark`): answering a check without a read index,
//! holding an answer until the watermark covers what it may show, and acknowledging an entry
//! that refuses credentials only once the watermark passed it.

use std::sync::atomic::Ordering;
use std::time::Duration;

use openraft::ServerState;
use tokio::time::Instant;

use crate::{ProposeError, RaftNode};

/// How often a waiter looks again when no watermark move woke it (a missed wake-up costs this).
const RECHECK: Duration = Duration::from_millis(20);

impl RaftNode {
    /// Like [`RaftNode::ensure_fresh`], for a check whose refusals confirm themselves with a
    /// read index (`TokenError::Lagging`): a follower in contact with a leader that publishes
    /// a watermark answers from its own state once it applied what it heard was committed,
    /// with no round trip. Otherwise, as `ensure_fresh`. Call [`RaftNode::settle`] before
    /// sending the answer.
    pub async fn ensure_fresh_local(&self, limit: Duration) -> Result<(), ProposeError> {
        if let Some(needed) = self.local_standing() {
            let deadline = Instant::now() + limit;
            self.watermark.local_answers.fetch_add(1, Ordering::Relaxed);
            return self.wait_applied_while_heard(needed, deadline).await;
        }
        self.ensure_fresh(limit).await
    }

    /// The index to have applied before answering from local state, when this follower may:
    /// its leader's latest append echoed a recent stamp of its own and carried a watermark of
    /// the current term.
    fn local_standing(&self) -> Option<u64> {
        let (term, follower) =
            self.with_metrics(|m| (m.current_term, m.state != ServerState::Leader && m.current_leader.is_some()));
        if !follower {
            return None;
        }
        self.watermark.follower_watermark(term, self.freshness.stamp().micros)?;
        let (_, heard) = self.freshness.follower_silence();
        Some(heard.max(self.committed.load(Ordering::Acquire)))
    }

    /// The watermark this member may answer by: the one it publishes while leading, else the
    /// one its leader sent in the current term. `None`: nobody answers by a watermark here (a
    /// cluster below `WATERMARK_VERSION`) or none is known yet.
    fn current_watermark(&self) -> Option<u64> {
        let (term, leading) = self
            .with_metrics(|m| (m.current_term, m.state == ServerState::Leader && m.current_leader == Some(self.id)));
        if leading {
            if !self.watermark.enabled() {
                return None;
            }
            return self.watermark.publish(term, self.committed.load(Ordering::Acquire));
        }
        self.watermark.known_in(term)
    }

    /// Holds an answer until the watermark covers the last entry this member applied that may
    /// refuse a credential: then every member that may be answering holds it too, and nothing
    /// it changed can be missing from a later answer elsewhere. Costs nothing while no such
    /// entry is on its way. Err (503) when the watermark does not get there within `limit`.
    pub async fn settle(&self, limit: Duration) -> Result<(), ProposeError> {
        if !self.watermark.enabled() && self.watermark.known_in(self.current_term()).is_none() {
            return Ok(());
        }
        let covered = || self.current_watermark().is_some_and(|w| w >= self.watermark.last_revoking());
        if covered() {
            return Ok(());
        }
        let deadline = Instant::now() + limit;
        // A member cut off from the leader gives up as its checks do (503 within the election
        // timeout, not at the end of `limit`): the watermark may never reach it there.
        self.while_heard(async {
            loop {
                let moved = self.watermark.moved();
                if covered() {
                    return Ok(());
                }
                if Instant::now() >= deadline {
                    return Err(ProposeError::Timeout);
                }
                let _ = tokio::time::timeout_at(deadline.min(Instant::now() + RECHECK), moved).await;
            }
        })
        .await
    }

    /// Leader: waits until the watermark reached `index` (an entry that refuses credentials
    /// was written there), then has the followers told at once rather than at the next
    /// heartbeat. Err when it does not within `deadline` (the write's outcome is then unknown
    /// to the caller, as for a timeout).
    pub(crate) async fn wait_watermark(&self, index: u64, deadline: Instant) -> Result<(), ProposeError> {
        loop {
            let moved = self.watermark.moved();
            if self.current_watermark().is_some_and(|w| w >= index) {
                let _ = self.raft.trigger().heartbeat().await;
                return Ok(());
            }
            if !self.is_leader() {
                return Err(ProposeError::NoLeader);
            }
            if Instant::now() >= deadline {
                return Err(ProposeError::Timeout);
            }
            let _ = tokio::time::timeout_at(deadline.min(Instant::now() + RECHECK), moved).await;
        }
    }

    fn current_term(&self) -> u64 {
        self.with_metrics(|m| m.current_term)
    }

    /// The watermark this member publishes or knows, for the metrics.
    pub fn watermark_index(&self) -> u64 {
        self.current_watermark().unwrap_or(0)
    }

    /// Checks answered from local state without a read index, for the metrics.
    pub fn local_answers(&self) -> u64 {
        self.watermark.local_answers.load(Ordering::Relaxed)
    }
}
