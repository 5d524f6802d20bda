//! The digests this node took at consistency checkpoints. The apply loop, right after it wrote
//! a checkpoint entry, reads the engine's running digest (or, in a cluster that may still hold
//! an older release, takes a RocksDB snapshot and hands the long walk to a blocking thread), so
//! the digest covers exactly the state as of that entry; applies go on meanwhile. Each
//! checkpoint also keeps every column family's own digest, so a check that finds this node
//! different can tell which families differ (see `consistency.rs`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use idnode_storage::{digest_view, Engine, StateDigest};
use serde::{Deserialize, Serialize};
use tokio::sync::{oneshot, Notify};
use tokio::time::Instant;

/// The cluster version from which checkpoints compare running digests
/// (`idnode_storage::sum_digest_view` defines them) instead of whole-state walks.
pub const RUNNING_DIGEST_VERSION: u32 = 13;

/// Checkpoints remembered per node (older ones are forgotten).
const KEEP: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DigestOutcome {
    Pending,
    Done { digest: String, records: u64 },
    Failed(String),
}

/// One column family's digest at a checkpoint. Its own type, beside `DigestOutcome` rather
/// than in it: that one's wire shape is fixed (postcard is not self-describing, and members
/// of different versions exchange it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CfDigest {
    pub cf: String,
    pub digest: String,
    pub records: u64,
}

/// What this node holds for one checkpoint.
struct Taken {
    outcome: DigestOutcome,
    /// Every family's digest, when the digest was done.
    families: Option<Vec<CfDigest>>,
}

#[derive(Default)]
pub struct Digests {
    taken: Mutex<BTreeMap<u64, Taken>>,
    changed: Notify,
}

impl Digests {
    fn set(&self, index: u64, outcome: DigestOutcome, families: Option<Vec<CfDigest>>) {
        let mut taken = self.taken.lock().unwrap_or_else(|p| p.into_inner());
        taken.insert(index, Taken { outcome, families });
        while taken.len() > KEEP {
            taken.pop_first();
        }
        drop(taken);
        self.changed.notify_waiters();
    }

    pub fn get(&self, index: u64) -> Option<DigestOutcome> {
        self.taken.lock().unwrap_or_else(|p| p.into_inner()).get(&index).map(|t| t.outcome.clone())
    }

    /// Every family's digest at `index`, if this node completed the digest there.
    pub fn families(&self, index: u64) -> Option<Vec<CfDigest>> {
        self.taken.lock().unwrap_or_else(|p| p.into_inner()).get(&index).and_then(|t| t.families.clone())
    }

    /// Starts the digest of `cfs` as of now (the apply loop calls it right after writing the
    /// checkpoint entry `index`, holding the apply lock); returns once the state it covers is
    /// fixed. From [`RUNNING_DIGEST_VERSION`] on that is the engine's running digest, which
    /// costs the same at any size; before, every member of a cluster that may still hold an
    /// older release walks the whole state (the two digests differ, and every member must
    /// compute the same kind at the same checkpoint).
    pub(crate) async fn capture(
        self: &Arc<Self>,
        index: u64,
        engine: Arc<Engine>,
        cfs: Vec<&'static str>,
        cluster_version: u32,
    ) {
        self.set(index, DigestOutcome::Pending, None);
        let digests = self.clone();
        if cluster_version >= RUNNING_DIGEST_VERSION {
            let pending = engine.running_digest(&cfs);
            tokio::task::spawn_blocking(move || digests.finish(index, pending.and_then(|p| p.resolve())));
            return;
        }
        let (taken, view_taken) = oneshot::channel::<()>();
        tokio::task::spawn_blocking(move || {
            let view = engine.snapshot();
            let _ = taken.send(());
            let digest = digest_view(&view, &cfs);
            drop(view);
            digests.finish(index, digest);
        });
        let _ = view_taken.await;
    }

    fn finish(&self, index: u64, digest: idnode_storage::Result<StateDigest>) {
        let (outcome, families) = match digest {
            Ok(d) => {
                let families = d
                    .families
                    .iter()
                    .map(|f| CfDigest { cf: f.cf.clone(), digest: f.hex(), records: f.records })
                    .collect();
                (DigestOutcome::Done { digest: d.hex(), records: d.records }, Some(families))
            }
            Err(e) => (DigestOutcome::Failed(e.to_string()), None),
        };
        self.set(index, outcome, families);
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
