//! The digests this node took at consistency checkpoints. The apply loop, right after it wrote
//! a checkpoint entry, takes a RocksDB snapshot (so the digest covers exactly the state as of
//! that entry) and hands the long hash to a blocking thread; applies go on meanwhile.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use idnode_storage::{digest_view, Engine};
use serde::{Deserialize, Serialize};
use tokio::sync::{oneshot, Notify};
use tokio::time::Instant;

/// Checkpoints remembered per node (older ones are forgotten).
const KEEP: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DigestOutcome {
    Pending,
    Done { digest: String, records: u64 },
    Failed(String),
}

#[derive(Default)]
pub struct Digests {
    taken: Mutex<BTreeMap<u64, DigestOutcome>>,
    changed: Notify,
}

impl Digests {
    fn set(&self, index: u64, outcome: DigestOutcome) {
        let mut taken = self.taken.lock().unwrap_or_else(|p| p.into_inner());
        taken.insert(index, outcome);
        while taken.len() > KEEP {
            taken.pop_first();
        }
        drop(taken);
        self.changed.notify_waiters();
    }

    pub fn get(&self, index: u64) -> Option<DigestOutcome> {
        self.taken.lock().unwrap_or_else(|p| p.into_inner()).get(&index).cloned()
    }

    /// Starts the digest of `cfs` as of now (the apply loop calls it right after writing the
    /// checkpoint entry `index`, holding the apply lock); returns once the view is taken.
    pub(crate) async fn capture(self: &Arc<Self>, index: u64, engine: Arc<Engine>, cfs: Vec<&'static str>) {
        self.set(index, DigestOutcome::Pending);
        let (taken, view_taken) = oneshot::channel::<()>();
        let digests = self.clone();
        tokio::task::spawn_blocking(move || {
            let view = engine.snapshot();
            let _ = taken.send(());
            let outcome = match digest_view(&view, &cfs) {
                Ok(d) => DigestOutcome::Done { digest: d.hex(), records: d.records },
                Err(e) => DigestOutcome::Failed(e.to_string()),
            };
            drop(view);
            digests.set(index, outcome);
        });
        let _ = view_taken.await;
    }

    /// The outcome at `index` once it is no longer pending, or what is known at `deadline`.
    pub async fn wait(&self, index: u64, deadline: Instant) -> Option<DigestOutcome> {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let now = self.get(index);
            if !matches!(now, Some(DigestOutcome::Pending)) || Instant::now() >= deadline {
                return now;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return self.get(index);
            }
        }
    }
}
