//! Getting leader-only work done from any node: run it locally when leading, else send it to
//! the leader over the peer listener, refreshing the leader and retrying until a deadline.

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::node::Metrics;
use crate::wire::{LeaderError, LeaderReply, LeaderRequest, LeaderResult, PATH_LEADER};
use crate::{ProposeError, RaftNode};

const MAX_BACKOFF: Duration = Duration::from_millis(400);

impl RaftNode {
    /// Runs `req` on the leader: locally when this node leads, else over the peer listener.
    /// Retries (refreshing the leader) on not-leader, transient and connection errors until
    /// `deadline`; the same request is resent, so proposals rely on request-id dedup.
    pub(crate) async fn leader_call(&self, req: LeaderRequest, deadline: Instant) -> Result<LeaderReply, ProposeError> {
        let mut rx = self.raft.metrics();
        let mut saw_leader = false;
        let mut backoff = Duration::from_millis(10);
        loop {
            let (fatal, leader, addr) = {
                let m = rx.borrow_and_update();
                let addr = m
                    .current_leader
                    .and_then(|l| m.membership_config.membership().get_node(&l).map(|n| n.addr.clone()));
                (m.running_state.as_ref().err().map(|e| e.to_string()), m.current_leader, addr)
            };
            if let Some(e) = fatal {
                return Err(ProposeError::Fatal(e));
            }
            if let Some(leader) = leader {
                saw_leader = true;
                let outcome = if leader == self.id {
                    // A leader cut off from its quorum would wait forever: bound it.
                    let remaining = deadline.saturating_duration_since(Instant::now());
                    match tokio::time::timeout(remaining, self.execute(req.clone())).await {
                        Ok(r) => r,
                        Err(_) => return Err(ProposeError::Timeout),
                    }
                } else if let Some(addr) = addr {
                    self.forwarded.inc();
                    let remaining = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
                    let call = self.client.call::<_, LeaderResult>(leader, &addr, PATH_LEADER, &req, remaining);
                    // A leader that died or froze mid-call does not answer until the deadline;
                    // once this node learns of another leader (or of an election), the call is
                    // abandoned and resent at once (the request id makes that safe).
                    let mut watch = rx.clone();
                    tokio::select! {
                        r = call => match r {
                            Ok(r) => r,
                            Err(e) => Err(LeaderError::Unavailable(e.to_string())),
                        },
                        () = leader_moved(&mut watch, leader) => {
                            Err(LeaderError::Unavailable(format!("leader {leader} was replaced during the call")))
                        }
                    }
                } else {
                    Err(LeaderError::Unavailable(format!("no address for leader {leader}")))
                };
                match outcome {
                    Ok(reply) => return Ok(reply),
                    Err(LeaderError::Rejected(e)) => return Err(ProposeError::Rejected(e)),
                    Err(LeaderError::Fatal(e)) if leader == self.id => return Err(ProposeError::Fatal(e)),
                    Err(e) => tracing::debug!(leader, error = ?e, "leader call failed, retrying"),
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(if saw_leader { ProposeError::Timeout } else { ProposeError::NoLeader });
            }
            wait_leader_change(&mut rx, leader, backoff.min(deadline - now)).await;
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }
}

/// Returns once this node's known leader is no longer `leader` (never, if raft stopped).
async fn leader_moved(rx: &mut watch::Receiver<Metrics>, leader: u64) {
    loop {
        if rx.borrow_and_update().current_leader != Some(leader) {
            return;
        }
        if rx.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// Sleeps up to `wait`, returning early when the known leader differs from `attempted`.
async fn wait_leader_change(rx: &mut watch::Receiver<Metrics>, attempted: Option<u64>, wait: Duration) {
    let changed = async {
        loop {
            if rx.changed().await.is_err() {
                // Raft stopped: nothing will change; the caller sees the fatal state next round.
                std::future::pending::<()>().await;
            }
            if rx.borrow().current_leader != attempted {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(wait, changed).await;
}
