//! The replicated state machine: each entry's application writes, its dedup record and the new
//! last-applied position land in ONE RocksDB batch, so a crash never separates them. Writes
//! are not synced: the synced log replays anything lost, and the shared WAL keeps the order.

use std::io::Cursor;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use idnode_storage::Engine;
use openraft::storage::RaftStateMachine;
use openraft::{EntryPayload, RaftLogId, Snapshot, StorageIOError, StoredMembership};
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

use crate::dedup;
use crate::digests::Digests;
use crate::error::any;
use crate::schema::{CF_DEDUP, CF_META, KEY_APPLIED, KEY_MEMBERSHIP, KEY_SNAPSHOT};
use crate::snapshot::{import_extras, unix_now, SnapshotBuilder, SnapshotKey, StoredSnapshot};
use crate::types::{Entry, LogId, Membership, Proposal, Reply, Request, SnapshotMeta, StorageError, TypeConfig};
use crate::StateApp;

/// Observations the metrics collector reads at scrape time.
pub struct SmStats {
    /// Seconds spent applying one run of entries.
    pub apply_seconds: Histogram,
    pub snapshot_size: AtomicU64,
    pub snapshot_created_at: AtomicU64,
    /// Snapshots received from a leader and installed since this process started.
    pub snapshot_installs: AtomicU64,
}

impl Default for SmStats {
    fn default() -> Self {
        SmStats {
            apply_seconds: Histogram::new(exponential_buckets(0.0001, 4.0, 10)),
            snapshot_size: AtomicU64::new(0),
            snapshot_created_at: AtomicU64::new(0),
            snapshot_installs: AtomicU64::new(0),
        }
    }
}

/// What the state machine shares with the node around it.
#[derive(Clone)]
pub struct SmLinks {
    pub stats: Arc<SmStats>,
    /// Digests taken at consistency checkpoints.
    pub digests: Arc<Digests>,
    /// Seals snapshots that leave for a peer.
    pub snapshot_key: Arc<SnapshotKey>,
}

impl SmLinks {
    /// Links for a member of the cluster with `cluster_secret` (`None`: a lone node).
    pub fn new(cluster_secret: Option<&str>) -> Self {
        SmLinks {
            stats: Arc::new(SmStats::default()),
            digests: Arc::new(Digests::default()),
            snapshot_key: Arc::new(SnapshotKey::from_secret(cluster_secret)),
        }
    }
}

/// State shared by the state machine and its snapshot builders.
pub struct SmShared {
    pub(crate) engine: Arc<Engine>,
    pub(crate) app: Arc<dyn StateApp>,
    /// The app's column families plus the dedup table: what a snapshot carries.
    pub(crate) snapshot_cfs: Vec<&'static str>,
    /// Serialises applies, snapshot exports and installs (an export must match its position).
    pub(crate) apply_lock: Arc<tokio::sync::Mutex<()>>,
    current: Mutex<Option<StoredSnapshot>>,
    /// The current snapshot as last sealed for peers: (snapshot id, sealed bytes).
    sealed: Mutex<Option<(String, Arc<Vec<u8>>)>>,
    pub(crate) stats: Arc<SmStats>,
    digests: Arc<Digests>,
    snapshot_key: Arc<SnapshotKey>,
}

impl SmShared {
    /// Makes `snap` the current snapshot (persisted) unless a newer one already is.
    pub(crate) fn offer_snapshot(&self, snap: StoredSnapshot) -> Result<(), StorageError> {
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        if current.as_ref().is_some_and(|c| c.meta.last_log_id > snap.meta.last_log_id) {
            return Ok(());
        }
        let mut batch = self.engine.batch();
        batch.put_t(CF_META, KEY_SNAPSHOT, &snap).map_err(|e| StorageIOError::write_snapshot(None, any(e)))?;
        self.engine.write(batch, false).map_err(|e| StorageIOError::write_snapshot(None, any(e)))?;
        self.note_snapshot(&snap);
        *current = Some(snap);
        Ok(())
    }

    fn note_snapshot(&self, snap: &StoredSnapshot) {
        self.stats.snapshot_size.store(snap.data.len() as u64, Ordering::Relaxed);
        self.stats.snapshot_created_at.store(snap.created_at, Ordering::Relaxed);
    }

    fn apply_proposal(
        &self,
        log_id: &LogId,
        p: Proposal,
        batch: &mut idnode_storage::Batch,
    ) -> Result<Reply, StorageError> {
        let fail = |e: String| -> StorageError { StorageIOError::apply(*log_id, any(e)).into() };
        if let Some(done) = dedup::lookup(&self.engine, batch, &p.request_id).map_err(|e| fail(e.to_string()))? {
            return Ok(Reply(done.reply));
        }
        // An Err here is a command this node cannot apply: stopping is the only safe answer,
        // skipping it would let replicas diverge.
        let out = self.app.apply(&self.engine, batch, log_id.index, &p.payload).map_err(fail)?;
        dedup::record(&self.engine, batch, &p.request_id, log_id.index, &out).map_err(|e| fail(e.to_string()))?;
        Ok(Reply(out))
    }
}

/// What a snapshot (and a backup) carries: the app's column families plus the dedup table.
pub(crate) fn snapshot_cfs(app_cfs: &[&'static str]) -> Vec<&'static str> {
    let mut cfs = app_cfs.to_vec();
    cfs.push(CF_DEDUP);
    cfs
}

pub struct StateMachine {
    shared: Arc<SmShared>,
}

impl StateMachine {
    pub fn new(engine: Arc<Engine>, app: Arc<dyn StateApp>, links: SmLinks) -> Result<Self, StorageError> {
        let snapshot_cfs = snapshot_cfs(app.column_families());
        let current: Option<StoredSnapshot> =
            engine.read().get_t(CF_META, KEY_SNAPSHOT).map_err(|e| StorageIOError::read_snapshot(None, any(e)))?;
        let shared = SmShared {
            engine,
            app,
            snapshot_cfs,
            apply_lock: Arc::new(tokio::sync::Mutex::new(())),
            current: Mutex::new(None),
            sealed: Mutex::new(None),
            stats: links.stats,
            digests: links.digests,
            snapshot_key: links.snapshot_key,
        };
        if let Some(snap) = current {
            shared.note_snapshot(&snap);
            *shared.current.lock().unwrap_or_else(|p| p.into_inner()) = Some(snap);
        }
        Ok(StateMachine { shared: Arc::new(shared) })
    }

    /// What the node keeps of the state machine after handing it to openraft (backups take
    /// the apply lock and export the same column families as snapshots).
    pub(crate) fn shared(&self) -> Arc<SmShared> {
        self.shared.clone()
    }
}

impl RaftStateMachine<TypeConfig> for StateMachine {
    type SnapshotBuilder = SnapshotBuilder;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, Membership), StorageError> {
        let view = self.shared.engine.read();
        let applied: Option<LogId> = view
            .get_t::<Option<LogId>>(CF_META, KEY_APPLIED)
            .map_err(|e| StorageIOError::read_state_machine(any(e)))?
            .flatten();
        let membership: Membership = view
            .get_t(CF_META, KEY_MEMBERSHIP)
            .map_err(|e| StorageIOError::read_state_machine(any(e)))?
            .unwrap_or_default();
        Ok((applied, membership))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<Reply>, StorageError>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let started = Instant::now();
        let shared = &self.shared;
        let _guard = shared.apply_lock.lock().await;
        let mut replies = Vec::new();
        let mut last = None;
        for entry in entries {
            let log_id = *entry.get_log_id();
            let mut batch = shared.engine.batch();
            let checkpoint = matches!(entry.payload, EntryPayload::Normal(Request::Checkpoint));
            let reply = match entry.payload {
                EntryPayload::Blank | EntryPayload::Normal(Request::Checkpoint) => Reply::default(),
                EntryPayload::Normal(Request::App(p)) => shared.apply_proposal(&log_id, p, &mut batch)?,
                EntryPayload::Normal(Request::ClusterVersion(v)) => {
                    // A version this binary cannot apply stops the node, loudly, like an
                    // undecodable command: skipping it would let replicas diverge later.
                    crate::version::apply(&shared.engine, &mut batch, v, shared.app.command_version())
                        .map_err(|e| StorageIOError::apply(log_id, any(e)))?;
                    Reply::default()
                }
                EntryPayload::Membership(m) => {
                    let stored = StoredMembership::new(Some(log_id), m);
                    batch.put_t(CF_META, KEY_MEMBERSHIP, &stored).map_err(|e| StorageIOError::apply(log_id, any(e)))?;
                    Reply::default()
                }
            };
            batch.put_t(CF_META, KEY_APPLIED, &Some(log_id)).map_err(|e| StorageIOError::apply(log_id, any(e)))?;
            shared.engine.write(batch, false).map_err(|e| StorageIOError::apply(log_id, any(e)))?;
            if checkpoint {
                shared.digests.capture(log_id.index, shared.engine.clone(), shared.snapshot_cfs.clone()).await;
            }
            replies.push(reply);
            last = Some(log_id.index);
        }
        drop(_guard);
        if let Some(index) = last {
            shared.app.applied(index);
            shared.stats.apply_seconds.observe(started.elapsed().as_secs_f64());
        }
        Ok(replies)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        SnapshotBuilder { shared: self.shared.clone() }
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        // Peers send snapshots sealed under the cluster's snapshot key; a stream that does not
        // open is refused before anything is written.
        let data = self
            .shared
            .snapshot_key
            .open(meta, &snapshot.into_inner())
            .map_err(|e| StorageIOError::write_snapshot(Some(meta.signature()), any(e)))?;
        let snap = StoredSnapshot { meta: meta.clone(), data, created_at: unix_now() };
        let guard = self.shared.apply_lock.clone().lock_owned().await;
        let shared = self.shared.clone();
        let installed = snap.clone();
        tokio::task::spawn_blocking(move || -> Result<(), StorageError> {
            let _guard = guard;
            let sig = Some(installed.meta.signature());
            let extras = import_extras(&installed).map_err(|e| StorageIOError::write_snapshot(sig.clone(), any(e)))?;
            // State, position, membership and the snapshot itself change in one atomic write.
            shared
                .engine
                .import(&shared.snapshot_cfs, &mut Cursor::new(&installed.data), extras)
                .map_err(|e| StorageIOError::write_snapshot(sig, any(e)))?;
            Ok(())
        })
        .await
        .map_err(|e| StorageIOError::write_snapshot(None, any(e)))??;
        self.shared.note_snapshot(&snap);
        self.shared.stats.snapshot_installs.fetch_add(1, Ordering::Relaxed);
        tracing::info!(snapshot = %meta.snapshot_id, "installed a snapshot from the leader");
        *self.shared.current.lock().unwrap_or_else(|p| p.into_inner()) = Some(snap);
        self.shared.app.installed_snapshot(&self.shared.engine);
        Ok(())
    }

    /// The current snapshot, sealed for a peer (openraft asks for it to send it, and once at
    /// startup); the sealed form is kept until the snapshot changes.
    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        let current = self.shared.current.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let Some(snap) = current else { return Ok(None) };
        let mut sealed = self.shared.sealed.lock().unwrap_or_else(|p| p.into_inner());
        let bytes = match sealed.as_ref() {
            Some((id, bytes)) if *id == snap.meta.snapshot_id => bytes.clone(),
            _ => {
                let bytes = Arc::new(self.shared.snapshot_key.seal(&snap.meta, &snap.data));
                *sealed = Some((snap.meta.snapshot_id.clone(), bytes.clone()));
                bytes
            }
        };
        Ok(Some(Snapshot { meta: snap.meta, snapshot: Box::new(Cursor::new(bytes.to_vec())) }))
    }
}
