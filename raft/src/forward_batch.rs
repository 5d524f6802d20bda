//! Group forwarding on a follower: proposals that arrive while earlier ones are on their way
//! to the leader go together in one `ProposeMany` call, so a follower under concurrent writes
//! makes one peer round trip (one request signed, sent, verified and decoded) for a group
//! rather than one per command; the leader then writes them as one batch (`batcher`).

use std::sync::{Arc, Weak};

use futures::future::join_all;
use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio::time::Instant;
use tracing::Instrument;

use crate::batcher::gather;
use crate::request_tag;
use crate::types::{Proposal, BATCH_VERSION};
use crate::wire::{LeaderReply, LeaderRequest};
use crate::{ProposeError, RaftNode};

/// Groups on their way at once (as in `batcher`: one travels while the next gathers).
const IN_FLIGHT: usize = 2;
/// Proposals in one group at most, and their payload bytes (well inside the peer body limit).
const MAX_GROUP: usize = 128;
const MAX_GROUP_BYTES: usize = 1 << 20;

pub(crate) struct Waiting {
    proposal: Proposal,
    /// The API request it serves (`request_tag`), named to the leader.
    tag: Option<Arc<str>>,
    /// The proposal's span, so the group's `raft.forward` span hangs under a request's trace.
    span: tracing::Span,
    deadline: Instant,
    reply: oneshot::Sender<Result<LeaderReply, ProposeError>>,
}

/// The sending half, kept by the node.
pub(crate) struct ForwardQueue {
    tx: mpsc::UnboundedSender<Waiting>,
}

impl ForwardQueue {
    pub(crate) fn new() -> (Self, mpsc::UnboundedReceiver<Waiting>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (ForwardQueue { tx }, rx)
    }
}

impl RaftNode {
    /// Runs a proposal on the leader, gathered with others when this node is not leading.
    pub(crate) async fn propose_on_leader(&self, p: Proposal, deadline: Instant) -> Result<LeaderReply, ProposeError> {
        if self.is_leader() {
            return self.leader_call(LeaderRequest::Propose(p), deadline).await;
        }
        let (reply, rx) = oneshot::channel();
        let tag = request_tag::current();
        let span = tracing::Span::current();
        if let Err(mpsc::error::SendError(w)) =
            self.forwards.tx.send(Waiting { proposal: p, tag, span, deadline, reply })
        {
            return self.leader_call(LeaderRequest::Propose(w.proposal), deadline).await;
        }
        rx.await.unwrap_or(Err(ProposeError::Timeout))
    }

    /// The gathering loop; ends when the node is dropped.
    pub(crate) fn spawn_forward_groups(self: &Arc<Self>, mut rx: mpsc::UnboundedReceiver<Waiting>) {
        let weak: Weak<RaftNode> = Arc::downgrade(self);
        tokio::spawn(async move {
            let slots = Arc::new(Semaphore::new(IN_FLIGHT));
            loop {
                let Ok(slot) = slots.clone().acquire_owned().await else { return };
                let weight = |w: &Waiting| w.proposal.payload.len();
                let Some(group) = gather(&mut rx, MAX_GROUP, MAX_GROUP_BYTES, weight).await else { return };
                let Some(node) = weak.upgrade() else { return };
                tokio::spawn(async move {
                    node.forward_group(group).await;
                    drop(slot);
                });
            }
        });
    }

    async fn forward_group(&self, group: Vec<Waiting>) {
        if group.len() == 1 || self.cluster_version() < BATCH_VERSION {
            join_all(group.into_iter().map(|w| async move {
                let span = forward_span(&w.span, &[]);
                let call = self.leader_call(LeaderRequest::Propose(w.proposal), w.deadline).instrument(span);
                let _ = w.reply.send(request_tag::within(w.tag, call).await);
            }))
            .await;
            return;
        }
        let deadline = group.iter().map(|w| w.deadline).min().unwrap_or_else(Instant::now);
        let tag = request_tag::joined(group.iter().map(|w| &w.tag));
        let spans: Vec<tracing::Span> = group.iter().map(|w| w.span.clone()).collect();
        let span = spans.split_first().map_or_else(tracing::Span::none, |(first, rest)| forward_span(first, rest));
        let (proposals, replies): (Vec<Proposal>, Vec<_>) = group.into_iter().map(|w| (w.proposal, w.reply)).unzip();
        let count = proposals.len();
        let call = self.leader_call(LeaderRequest::ProposeMany(proposals), deadline).instrument(span);
        match request_tag::within(tag, call).await {
            Ok(LeaderReply::WrittenMany(outcomes)) if outcomes.len() == count => {
                for (tx, outcome) in replies.into_iter().zip(outcomes) {
                    let _ = tx.send(match outcome {
                        Ok((index, reply)) => Ok(LeaderReply::Written { index, reply }),
                        Err(why) => Err(ProposeError::Rejected(why)),
                    });
                }
            }
            Ok(other) => {
                let e = ProposeError::Rejected(format!("unexpected leader reply to {count} proposals: {other:?}"));
                for tx in replies {
                    let _ = tx.send(Err(e.clone()));
                }
            }
            Err(e) => {
                for tx in replies {
                    let _ = tx.send(Err(e.clone()));
                }
            }
        }
    }
}

/// The span of one call to the leader: a child of the first proposal's span, linked to the
/// others of its group (one call serves several requests' traces).
fn forward_span(first: &tracing::Span, others: &[tracing::Span]) -> tracing::Span {
    let span = crate::traced_span!(parent: first, "raft.forward", raft.proposals = others.len() + 1);
    for o in others {
        span.follows_from(o);
    }
    span
}
