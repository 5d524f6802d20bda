//! The replicated state machine: each entry's application writes, its dedup record and the new
//! last-applied position land in ONE RocksDB batch, so a crash never separates them. Writes
//! are not synced: the synced log replays anything lost, and the shared WAL keeps the order.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use idnode_storage::Engine;
use openraft::storage::RaftStateMachine;
use openraft::{EntryPayload, RaftLogId, Snapshot, StorageIOError, StoredMembership};
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

use crate::dedup;
use crate::digests::Digests;
use crate::error::any;
use crate::schema::{
    CF_DEDUP, CF_LOG, CF_META, KEY_APPLIED, KEY_INSTALLING, KEY_LEGACY_SNAPSHOT, KEY_MEMBERSHIP, KEY_PURGED,
    KEY_SNAPSHOT,
};
use crate::snapshot::{snapshot_dir, unix_now, SnapshotBuilder, SnapshotKey, SnapshotRecord};
use crate::types::{Entry, LogId, Membership, Proposal, Reply, Request, SnapshotMeta, StorageError, TypeConfig};
use crate::watermark::Watermark;
use crate::StateApp;

/// Observations the metrics collector reads at scrape time.
pub struct SmStats {
    /// Seconds spent applying one run of entries.
    pub apply_seconds: Histogram,
    pub snapshot_size: AtomicU64,
    pub snapshot_created_at: AtomicU64,
    /// Snapshots received from a leader and installed since this process started.
    pub snapshot_installs: AtomicU64,
    /// True while a received snapshot replaces the state (the node is not ready meanwhile).
    pub installing: AtomicBool,
}

impl Default for SmStats {
    fn default() -> Self {
        SmStats {
            apply_seconds: Histogram::new(exponential_buckets(0.0001, 4.0, 10)),
            snapshot_size: AtomicU64::new(0),
            snapshot_created_at: AtomicU64::new(0),
            snapshot_installs: AtomicU64::new(0),
            installing: AtomicBool::new(false),
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
    /// Told of every applied entry that may refuse a credential (`watermark`).
    pub watermark: Arc<Watermark>,
}

impl SmLinks {
    /// Links for a member of the cluster with `cluster_secret` (`None`: a lone node).
    pub fn new(cluster_secret: Option<&str>) -> Self {
        SmLinks {
            stats: Arc::new(SmStats::default()),
            digests: Arc::new(Digests::default()),
            snapshot_key: Arc::new(SnapshotKey::from_secret(cluster_secret)),
            watermark: Arc::new(Watermark::new(Duration::ZERO)),
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
    /// The snapshot openraft sends; replaced only with what is persisted, under this lock.
    pub(crate) current: Mutex<Option<SnapshotRecord>>,
    /// The file a snapshot from the leader is being written to.
    receiving: Mutex<Option<PathBuf>>,
    pub(crate) stats: Arc<SmStats>,
    digests: Arc<Digests>,
    pub(crate) snapshot_key: Arc<SnapshotKey>,
    pub(crate) watermark: Arc<Watermark>,
    /// Where the dedup table's pruning starts scanning (see `dedup::PruneFloor`).
    pub(crate) dedup_floor: dedup::PruneFloor,
}

impl SmShared {
    /// Makes `record` the current snapshot (persisted) unless a newer one already is; the file
    /// that loses is removed.
    pub(crate) fn offer_snapshot(&self, record: SnapshotRecord) -> Result<(), StorageError> {
        let mut current = self.current.lock().unwrap_or_else(|p| p.into_inner());
        if current.as_ref().is_some_and(|c| c.meta.last_log_id > record.meta.last_log_id) {
            self.remove_file(&record);
            return Ok(());
        }
        let mut batch = self.engine.batch();
        batch.put_t(CF_META, KEY_SNAPSHOT, &record).map_err(|e| StorageIOError::write_snapshot(None, any(e)))?;
        self.engine.write(batch, true).map_err(|e| StorageIOError::write_snapshot(None, any(e)))?;
        self.note_snapshot(&record);
        if let Some(old) = current.replace(record) {
            self.remove_file(&old);
        }
        Ok(())
    }

    /// Removes a snapshot's file unless it is the current one (a reader that opened it keeps
    /// reading: the file lives until it is closed).
    pub(crate) fn remove_file(&self, record: &SnapshotRecord) {
        let _ = std::fs::remove_file(snapshot_dir(&self.engine).join(&record.file));
    }

    pub(crate) async fn open_snapshot(&self, record: &SnapshotRecord) -> Result<tokio::fs::File, StorageError> {
        let path = snapshot_dir(&self.engine).join(&record.file);
        tokio::fs::File::open(&path).await.map_err(|e| {
            StorageIOError::read_snapshot(Some(record.meta.signature()), any(format!("{}: {e}", path.display()))).into()
        })
    }

    fn note_snapshot(&self, record: &SnapshotRecord) {
        self.stats.snapshot_size.store(record.size, Ordering::Relaxed);
        self.stats.snapshot_created_at.store(record.created_at, Ordering::Relaxed);
    }

    /// The oldest position a snapshot may have at startup: openraft refuses to start with the
    /// log purged beyond its snapshot. That is the last purged entry, or the applied position
    /// when the log ends before it (a received snapshot installed, the log behind it not yet
    /// dropped: openraft drops it at startup). A snapshot older than that is rebuilt at the
    /// applied position.
    ///
    /// openraft 0.9 purges the log behind a received snapshot without waiting for the state
    /// machine to install it; a member killed in between holds a log purged beyond what it
    /// applied (and no snapshot that covers it). What it applied it holds, so the purge mark
    /// comes back to the applied position: the leader then sends the rest, or the snapshot.
    fn snapshot_floor(&self, purged: Option<LogId>) -> Result<Option<LogId>, StorageError> {
        let read = self.engine.read();
        let applied: Option<LogId> =
            read.get_t::<Option<LogId>>(CF_META, KEY_APPLIED).map_err(|e| StorageIOError::read(any(e)))?.flatten();
        let last_log = match read.last(CF_LOG).map_err(|e| StorageIOError::read_logs(any(e)))? {
            Some((_, v)) => {
                Some(*idnode_storage::decode::<Entry>(&v).map_err(|e| StorageIOError::read_logs(any(e)))?.get_log_id())
            }
            None => None,
        };
        let mut purged = purged;
        if purged > applied && last_log <= purged {
            tracing::warn!(
                purged = ?purged,
                applied = ?applied,
                "the log was purged beyond the applied state by a snapshot install cut short; \
                 the leader sends this member what it lacks"
            );
            let mut batch = self.engine.batch();
            match &applied {
                Some(a) => batch.put_t(CF_META, KEY_PURGED, a).map_err(|e| StorageIOError::write_logs(any(e)))?,
                None => batch.delete(CF_META, KEY_PURGED),
            }
            self.engine.write(batch, true).map_err(|e| StorageIOError::write_logs(any(e)))?;
            purged = applied;
        }
        let hole = if last_log.max(purged) < applied { applied } else { None };
        Ok(purged.max(hole))
    }

    /// Startup: finishes a snapshot install that was cut short, makes sure a usable snapshot
    /// exists wherever the log was purged behind one, and removes files nothing names.
    fn recover_snapshots(&self) -> Result<(), StorageError> {
        let dir = snapshot_dir(&self.engine);
        std::fs::create_dir_all(&dir).map_err(|e| StorageIOError::write_snapshot(None, any(e)))?;
        let read = |key: &[u8]| -> Result<Option<SnapshotRecord>, StorageError> {
            self.engine.read().get_t(CF_META, key).map_err(|e| StorageIOError::read_snapshot(None, any(e)).into())
        };
        if let Some(record) = read(KEY_INSTALLING)? {
            tracing::warn!(snapshot = %record.meta.snapshot_id, "finishing a snapshot install that was interrupted");
            crate::snapshot::install_file(self, &record).map_err(|e| {
                StorageIOError::write_snapshot(
                    Some(record.meta.signature()),
                    any(format!(
                        "an interrupted snapshot install cannot be finished ({e}); this member's state is partial: \
                         remove its data directory and add it to the cluster again"
                    )),
                )
            })?;
        }
        let purged: Option<LogId> =
            self.engine.read().get_t(CF_META, KEY_PURGED).map_err(|e| StorageIOError::read_logs(any(e)))?;
        // Where openraft will find the log to begin; the snapshot must reach it.
        let floor = self.snapshot_floor(purged)?;
        let usable = read(KEY_SNAPSHOT)?.filter(|r| {
            let on_disk = std::fs::metadata(dir.join(&r.file)).map(|m| m.len()).ok();
            r.key_check == self.snapshot_key.check() && on_disk == Some(r.size) && r.meta.last_log_id >= floor
        });
        let record = match usable {
            Some(r) => Some(r),
            // openraft sends the current snapshot to a peer that needs purged entries: one
            // must exist (a changed cluster secret, a restored backup, an older binary's).
            None if floor.is_some() => Some(crate::snapshot::build(self, ())?),
            None => None,
        };
        if let Some(r) = &record {
            let mut batch = self.engine.batch();
            batch.put_t(CF_META, KEY_SNAPSHOT, r).map_err(|e| StorageIOError::write_snapshot(None, any(e)))?;
            batch.delete(CF_META, KEY_LEGACY_SNAPSHOT);
            self.engine.write(batch, true).map_err(|e| StorageIOError::write_snapshot(None, any(e)))?;
            self.note_snapshot(r);
        }
        let keep = record.as_ref().map(|r| r.file.clone());
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                if Some(e.file_name().to_string_lossy().into_owned()) != keep {
                    let p = e.path();
                    let _ = if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
                }
            }
        }
        *self.current.lock().unwrap_or_else(|p| p.into_inner()) = record;
        Ok(())
    }

    fn apply_proposal(
        &self,
        log_id: &LogId,
        p: Proposal,
        batch: &mut idnode_storage::Batch,
    ) -> Result<Reply, StorageError> {
        let fail = |e: String| -> StorageError { StorageIOError::apply(*log_id, any(e)).into() };
        let span = crate::trace_context::apply_span(&p.request_id, log_id.index);
        let _in = span.enter();
        if let Some(done) = dedup::lookup(&self.engine, batch, &p.request_id).map_err(|e| fail(e.to_string()))? {
            return Ok(Reply(done.reply));
        }
        // Before any of its writes land: a reader that sees them sees this too.
        if self.app.revokes(&p.payload) {
            self.watermark.revoking(log_id.index);
        }
        // An Err here is a command this node cannot apply: stopping is the only safe answer,
        // skipping it would let replicas diverge.
        let out = self.app.apply(&self.engine, batch, log_id.index, &p.payload).map_err(fail)?;
        dedup::record(&self.engine, batch, &self.dedup_floor, &p.request_id, log_id.index, &out)
            .map_err(|e| fail(e.to_string()))?;
        Ok(Reply(out))
    }

    /// A batch entry: each command applied and written as if it were an entry of its own,
    /// in order; the last one's writes stay in `batch`, to land with the applied position.
    /// A crash part-way leaves the position before the entry: applying it again finds the
    /// commands already written in the dedup table and answers them as they were answered.
    fn apply_batch(
        &self,
        log_id: &LogId,
        proposals: Vec<Proposal>,
        batch: &mut idnode_storage::Batch,
    ) -> Result<Reply, StorageError> {
        let fail = |e: String| -> StorageError { StorageIOError::apply(*log_id, any(e)).into() };
        let count = proposals.len();
        let mut replies = Vec::with_capacity(count);
        for (i, p) in proposals.into_iter().enumerate() {
            replies.push(self.apply_proposal(log_id, p, batch)?.0);
            if i + 1 < count {
                let done = std::mem::replace(batch, self.engine.batch());
                self.engine.write(done, false).map_err(|e| fail(e.to_string()))?;
            }
        }
        postcard::to_allocvec(&replies).map(Reply).map_err(|e| fail(e.to_string()))
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
        let shared = SmShared {
            engine,
            app,
            snapshot_cfs,
            apply_lock: Arc::new(tokio::sync::Mutex::new(())),
            current: Mutex::new(None),
            receiving: Mutex::new(None),
            stats: links.stats,
            digests: links.digests,
            snapshot_key: links.snapshot_key,
            watermark: links.watermark,
            dedup_floor: dedup::PruneFloor::default(),
        };
        shared.recover_snapshots()?;
        shared.engine.track_digests(&shared.snapshot_cfs);
        // What this member applied before it started is unknown to the watermark: count all of
        // it as possibly refusing, so nothing is shown before the leader's watermark covers it.
        let applied: Option<LogId> = shared
            .engine
            .read()
            .get_t::<Option<LogId>>(CF_META, KEY_APPLIED)
            .map_err(|e| StorageIOError::read_state_machine(any(e)))?
            .flatten();
        if let Some(a) = applied {
            shared.watermark.revoking(a.index);
            shared.watermark.applied(a.leader_id.term, a.index);
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
                EntryPayload::Normal(Request::Batch(ps)) => shared.apply_batch(&log_id, ps, &mut batch)?,
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
                let version = crate::version::stored(&shared.engine, None).unwrap_or(crate::version::BASE_VERSION);
                shared.digests.capture(log_id.index, shared.engine.clone(), shared.snapshot_cfs.clone(), version).await;
            }
            replies.push(reply);
            last = Some(log_id);
        }
        drop(_guard);
        if let Some(log_id) = last {
            let index = log_id.index;
            shared.watermark.applied(log_id.leader_id.term, index);
            shared.app.applied(index);
            shared.stats.apply_seconds.observe(started.elapsed().as_secs_f64());
        }
        Ok(replies)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        SnapshotBuilder { shared: self.shared.clone() }
    }

    /// A new file for a snapshot the leader streams to this node (openraft writes its chunks).
    async fn begin_receiving_snapshot(&mut self) -> Result<Box<tokio::fs::File>, StorageError> {
        let path = snapshot_dir(&self.shared.engine).join(format!("incoming-{:016x}.part", rand::random::<u64>()));
        let file = tokio::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .await
            .map_err(|e| StorageIOError::write_snapshot(None, any(e)))?;
        // With the "snapshot installed" line this times the transfer apart from the install.
        tracing::info!(file = %path.display(), "receiving a snapshot");
        if let Some(abandoned) = self.shared.receiving.lock().unwrap_or_else(|p| p.into_inner()).replace(path) {
            let _ = std::fs::remove_file(abandoned);
        }
        Ok(Box::new(file))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Box<tokio::fs::File>,
    ) -> Result<(), StorageError> {
        let sig = Some(meta.signature());
        let fail = |e: String| -> StorageError { StorageIOError::write_snapshot(sig.clone(), any(e)).into() };
        let received = self.shared.receiving.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(received) = received else { return Err(fail("no snapshot file is being received".into())) };
        let file = (*snapshot).into_std().await;
        let shared = self.shared.clone();
        let record = SnapshotRecord {
            meta: meta.clone(),
            file: format!("{}-{:08x}.snap", meta.last_log_id.map_or(0, |l| l.index), rand::random::<u32>()),
            size: 0,
            created_at: unix_now(),
            key_check: shared.snapshot_key.check(),
        };
        let guard = self.shared.apply_lock.clone().lock_owned().await;
        // Anything in the snapshot may refuse a credential: shown only once the watermark passes it.
        if let Some(last) = meta.last_log_id {
            self.shared.watermark.revoking(last.index);
            self.shared.watermark.applied(last.leader_id.term, last.index);
        }
        let installed = tokio::task::spawn_blocking(move || -> Result<SnapshotRecord, StorageError> {
            let _guard = guard;
            let dir = snapshot_dir(&shared.engine);
            let mut record = record;
            let kept = (|| -> std::io::Result<()> {
                let file = adopt(file, &received)?;
                file.sync_all()?;
                record.size = file.metadata()?.len();
                std::fs::rename(&received, dir.join(&record.file))?;
                std::fs::File::open(&dir)?.sync_all()
            })();
            if let Err(e) = kept {
                let _ = std::fs::remove_file(&received);
                return Err(StorageIOError::write_snapshot(Some(record.meta.signature()), any(e)).into());
            }
            // Peers seal snapshots under the cluster's snapshot key; one that does not open is
            // refused (and dropped) before anything is written.
            if let Err(e) = crate::snapshot::install_file(&shared, &record) {
                shared.remove_file(&record);
                return Err(e);
            }
            Ok(record)
        })
        .await
        .map_err(|e| fail(e.to_string()))??;
        // `install_file` made it the current snapshot.
        self.shared.note_snapshot(&installed);
        self.shared.stats.snapshot_installs.fetch_add(1, Ordering::Relaxed);
        self.shared.app.installed_snapshot(&self.shared.engine);
        Ok(())
    }

    /// The current snapshot's file, opened for openraft to send (and once at startup).
    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<TypeConfig>>, StorageError> {
        let current = self.shared.current.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let Some(record) = current else { return Ok(None) };
        let data = self.shared.open_snapshot(&record).await?;
        Ok(Some(Snapshot { meta: record.meta, snapshot: Box::new(data) }))
    }
}

/// The received snapshot as the file at `path`: openraft hands back the file that
/// `begin_receiving_snapshot` made; any other handle (its storage test suite passes the
/// leader's) is copied into it.
fn adopt(mut file: std::fs::File, path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::io::{Seek, SeekFrom};
    use std::os::unix::fs::MetadataExt;
    let (have, want) = (file.metadata()?, std::fs::metadata(path)?);
    if (have.dev(), have.ino()) == (want.dev(), want.ino()) {
        return Ok(file);
    }
    let mut out = std::fs::OpenOptions::new().write(true).truncate(true).open(path)?;
    file.seek(SeekFrom::Start(0))?;
    std::io::copy(&mut file, &mut out)?;
    Ok(out)
}
