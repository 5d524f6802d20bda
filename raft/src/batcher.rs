//! Group commit on the leader. openraft 0.9 appends (and fsyncs) each `client_write` on its own,
//! inside its core task, so under concurrent writes every command paid a whole fsync on every
//! member before the next could start. Proposals that arrive while earlier ones are being
//! written wait here and go into the log together as one `Request::Batch` entry: one append and
//! one fsync per member for all of them, and the same outcomes as consecutive entries
//! (`state_machine` applies them in order, each with its own dedup record).

use std::sync::Arc;

use futures::future::join_all;
use idnode_storage::Engine;
use tokio::sync::{mpsc, oneshot, Semaphore};
use tracing::Instrument;

use crate::leader::write_error;
use crate::types::{Proposal, Raft, Request, BATCH_VERSION};
use crate::wire::{LeaderError, LeaderReply, LeaderResult};

/// Entries being written at once. Two: while one batch is replicated and applied, the next
/// is appended, so neither the log nor the network waits idle; more only splits the waiting
/// proposals into smaller batches.
const IN_FLIGHT: usize = 2;
/// Commands in one entry at most (entries stay well under a replication message's size).
const MAX_BATCH: usize = 128;

type Pending = (Proposal, oneshot::Sender<LeaderResult>);

/// The leader's queue of checked proposals waiting for the log.
pub(crate) struct Batcher {
    tx: mpsc::UnboundedSender<Pending>,
}

impl Batcher {
    /// Starts the writer task; it ends when the batcher is dropped.
    pub(crate) fn start(raft: Raft, engine: Arc<Engine>) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<Pending>();
        tokio::spawn(async move {
            let slots = Arc::new(Semaphore::new(IN_FLIGHT));
            loop {
                let Ok(slot) = slots.clone().acquire_owned().await else { return };
                let Some(items) = gather(&mut rx, MAX_BATCH, usize::MAX, |_| 0).await else { return };
                let (raft, engine) = (raft.clone(), engine.clone());
                tokio::spawn(async move {
                    write(&raft, &engine, items).await;
                    drop(slot);
                });
            }
        });
        Batcher { tx }
    }

    /// Writes `p` (with whatever else is waiting) and answers as a lone `client_write` would.
    pub(crate) async fn propose(&self, p: Proposal) -> LeaderResult {
        let (tx, rx) = oneshot::channel();
        // From the hand-over to the writer to the leader's apply: append, replication, commit.
        let span = crate::traced_span!("raft.commit", raft.index = tracing::field::Empty);
        let _filed = crate::trace_context::file_commit(p.request_id, &span);
        if self.tx.send((p, tx)).is_err() {
            return Err(LeaderError::Fatal("the proposal writer stopped".into()));
        }
        let answer = rx.instrument(span.clone()).await;
        if let Ok(Ok(LeaderReply::Written { index, .. })) = &answer {
            span.record("raft.index", crate::trace_context::attr_index(*index));
        }
        answer.unwrap_or_else(|_| Err(LeaderError::Unavailable("the proposal writer dropped the proposal".into())))
    }
}

/// The next item of `rx` (None once it is closed) with whatever else is already waiting, up to
/// `max` items or until their `weight` reaches `max_weight`: group commit's batches and a
/// follower's forwarded groups.
pub(crate) async fn gather<T>(
    rx: &mut mpsc::UnboundedReceiver<T>,
    max: usize,
    max_weight: usize,
    weight: impl Fn(&T) -> usize,
) -> Option<Vec<T>> {
    let first = rx.recv().await?;
    let mut total = weight(&first);
    let mut items = vec![first];
    while items.len() < max && total < max_weight {
        match rx.try_recv() {
            Ok(item) => {
                total += weight(&item);
                items.push(item);
            }
            Err(_) => break,
        }
    }
    Some(items)
}

async fn write(raft: &Raft, engine: &Engine, items: Vec<Pending>) {
    let batched = items.len() > 1 && crate::version::stored(engine, None).is_ok_and(|v| v >= BATCH_VERSION);
    if !batched {
        // One entry each (a lone proposal, or a cluster some voter of which predates batches).
        join_all(items.into_iter().map(|(p, tx)| async move {
            let _ = tx.send(single(raft, p).await);
        }))
        .await;
        return;
    }
    let (proposals, senders): (Vec<Proposal>, Vec<_>) = items.into_iter().unzip();
    let count = proposals.len();
    let outcome = match raft.client_write(Request::Batch(proposals)).await {
        Ok(resp) => match postcard::from_bytes::<Vec<Vec<u8>>>(&resp.data.0) {
            Ok(replies) if replies.len() == count => Ok((resp.log_id.index, replies)),
            Ok(replies) => {
                Err(LeaderError::Fatal(format!("a batch of {count} commands gave {} replies", replies.len())))
            }
            Err(e) => Err(LeaderError::Fatal(format!("a batch's replies do not decode: {e}"))),
        },
        Err(e) => Err(write_error(e)),
    };
    match outcome {
        Ok((index, replies)) => {
            for (tx, reply) in senders.into_iter().zip(replies) {
                let _ = tx.send(Ok(LeaderReply::Written { index, reply }));
            }
        }
        Err(e) => {
            for tx in senders {
                let _ = tx.send(Err(e.clone()));
            }
        }
    }
}

async fn single(raft: &Raft, p: Proposal) -> LeaderResult {
    match raft.client_write(Request::App(p)).await {
        Ok(resp) => Ok(LeaderReply::Written { index: resp.log_id.index, reply: resp.data.0 }),
        Err(e) => Err(write_error(e)),
    }
}
