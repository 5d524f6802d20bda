//! Read indexes for a follower's credential checks, gathered. A follower in contact with the
//! leader still learns of a commit up to a heartbeat late, so answering from what it has heard
//! let a password change another member already showed be missing here for a moment (the
//! partition campaign's one non-linearizable key, docs/reliability.md). A check therefore asks
//! the leader for its commit point when it starts and answers once this node applied that far,
//! as etcd's linearizable reads do.
//!
//! Checks that arrive while requests are on their way wait for the next one, which then serves
//! them all: a follower under load makes one round trip per group, not per check, and no check
//! shares a request sent before it arrived (that would name a commit point from before it
//! started, which is the staleness this removes). The leader answers from its lease
//! (`RaftNode::leased_commit`), so a group costs one peer round trip.

use std::sync::{Arc, Weak};

use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio::time::Instant;

use crate::wire::{LeaderReply, LeaderRequest};
use crate::{ProposeError, RaftNode};

/// Requests on their way at once. More did not help: with four, a 3-member cluster on two
/// cores validated 3652 tokens/s on a follower against 4889 with one (the peer calls cost CPU
/// the checks need; docs/benchmarks.md).
const IN_FLIGHT: usize = 1;
/// A request out this long is taken for stuck (sent to a leader that froze, or across a cut
/// that has since healed): the next group goes out anyway, without a slot, rather than wait
/// out the stuck one's deadline (seconds) behind it. A loaded leader answers well within this.
const STUCK_AFTER: std::time::Duration = std::time::Duration::from_millis(200);

/// See [`RaftNode::read_index`].
const WAITER_GRACE: std::time::Duration = std::time::Duration::from_millis(50);

/// A check waiting for the next read index.
pub(crate) struct Waiter {
    deadline: Instant,
    reply: oneshot::Sender<Result<u64, ProposeError>>,
}

/// The sending half, kept by the node.
pub(crate) struct ReadIndexQueue {
    tx: mpsc::UnboundedSender<Waiter>,
}

impl ReadIndexQueue {
    pub(crate) fn new() -> (Self, mpsc::UnboundedReceiver<Waiter>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (ReadIndexQueue { tx }, rx)
    }
}

impl RaftNode {
    /// The leader's commit point, asked for after this call began (gathered with other checks).
    pub(crate) async fn read_index(&self, deadline: Instant) -> Result<u64, ProposeError> {
        let (reply, rx) = oneshot::channel();
        if let Err(mpsc::error::SendError(w)) = self.read_indexes.tx.send(Waiter { deadline, reply }) {
            return self.ask_read_index(w.deadline).await;
        }
        // The group's own call ends by the latest deadline in it; a check that joined a group
        // with a later one stops waiting at its own (the grace lets the call's own answer,
        // such as "no leader", win the race at the common deadline).
        match tokio::time::timeout_at(deadline + WAITER_GRACE, rx).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) | Err(_) => Err(ProposeError::Timeout),
        }
    }

    /// Gathers whoever is waiting into the next request once a slot is free; ends when the node
    /// is dropped.
    pub(crate) fn spawn_read_index_rounds(self: &Arc<Self>, mut rx: mpsc::UnboundedReceiver<Waiter>) {
        let weak: Weak<RaftNode> = Arc::downgrade(self);
        tokio::spawn(async move {
            let slots = Arc::new(Semaphore::new(IN_FLIGHT));
            loop {
                let Some(first) = rx.recv().await else { return };
                let slot = match tokio::time::timeout(STUCK_AFTER, slots.clone().acquire_owned()).await {
                    Ok(Ok(slot)) => Some(slot),
                    Ok(Err(_)) => return,
                    Err(_) => None,
                };
                let mut group = vec![first];
                while let Ok(w) = rx.try_recv() {
                    group.push(w);
                }
                // Checks that gave up (503 for a cut-off node) need no answer.
                group.retain(|w| !w.reply.is_closed());
                let Some(deadline) = group.iter().map(|w| w.deadline).max() else { continue };
                let Some(node) = weak.upgrade() else { return };
                tokio::spawn(async move {
                    let outcome = node.ask_read_index(deadline).await;
                    for w in group {
                        let _ = w.reply.send(outcome.clone());
                    }
                    drop(slot);
                });
            }
        });
    }

    async fn ask_read_index(&self, deadline: Instant) -> Result<u64, ProposeError> {
        match self.leader_call(LeaderRequest::ReadIndex, deadline).await? {
            LeaderReply::ReadIndex(index) => Ok(index),
            other => Err(ProposeError::Rejected(format!("unexpected leader reply {other:?}"))),
        }
    }
}
