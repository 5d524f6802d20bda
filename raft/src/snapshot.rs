//! Snapshots as sealed files. A snapshot is a consistent export of the application's column
//! families plus the dedup table, written once through the streaming sealer into a file under
//! the database directory; the metadata holds only a `SnapshotRecord` naming that file. The
//! file is exactly what travels to a peer (openraft reads and writes it in bounded chunks), so
//! neither side ever holds a snapshot in memory, whatever the size of the state.
//!
//! The file is sealed under a key derived from the cluster secret and bound to the snapshot's
//! id: useless on its own, and a peer refuses one that does not open before it writes anything.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use idnode_keys::{derive_key, OpenReader, SealWriter, KEY_LEN};
use idnode_storage::Engine;
use openraft::{RaftSnapshotBuilder, Snapshot, StorageIOError};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::error::any;
use crate::schema::{CF_META, KEY_APPLIED, KEY_INSTALLING, KEY_MEMBERSHIP, KEY_SNAPSHOT};
use crate::state_machine::SmShared;
use crate::types::{LogId, Membership, SnapshotMeta, StorageError, TypeConfig};

/// The current snapshot, as the metadata records it.
#[derive(Clone, Serialize, Deserialize)]
pub struct SnapshotRecord {
    pub meta: SnapshotMeta,
    /// The file's name in the snapshot directory.
    pub file: String,
    /// The file's size in bytes.
    pub size: u64,
    /// When it was made or received (unix seconds).
    pub created_at: u64,
    /// Which key sealed it (`SnapshotKey::check`): after a change of cluster secret the file
    /// could not be opened by any peer, so it is rebuilt instead.
    pub key_check: [u8; 16],
}

/// The key snapshot files are sealed with: every member derives the same one from the cluster
/// secret; a lone node without a secret gets a random one (it has no peers).
pub struct SnapshotKey(Zeroizing<[u8; KEY_LEN]>);

const SNAPSHOT_KEY_PURPOSE: &str = "idnode raft snapshot stream v1";
/// Buffer between the export and the sealer, and in front of file reads.
const IO_BUFFER: usize = 1 << 20;

impl SnapshotKey {
    pub fn from_secret(secret: Option<&str>) -> Self {
        let secret: Vec<u8> = match secret {
            Some(s) => s.as_bytes().to_vec(),
            None => idnode_keys::random_bytes::<32>().to_vec(),
        };
        SnapshotKey(derive_key(&secret, SNAPSHOT_KEY_PURPOSE))
    }

    fn context(meta: &SnapshotMeta) -> Vec<u8> {
        let mut c = b"idnode-snapshot\0".to_vec();
        c.extend_from_slice(meta.snapshot_id.as_bytes());
        c
    }

    /// A fingerprint of the key (a one-way hash: it tells keys apart, it reveals nothing).
    pub fn check(&self) -> [u8; 16] {
        let digest = Sha256::new().chain_update(b"idnode snapshot key check\0").chain_update(&self.0[..]).finalize();
        let mut out = [0u8; 16];
        out.copy_from_slice(&digest[..16]);
        out
    }

    pub fn sealer<W: Write>(&self, meta: &SnapshotMeta, out: W) -> std::io::Result<SealWriter<W>> {
        SealWriter::new(&self.0, &Self::context(meta), out)
    }

    pub fn opener<R: std::io::Read>(&self, meta: &SnapshotMeta, input: R) -> OpenReader<R> {
        OpenReader::new(&self.0, &Self::context(meta), input)
    }
}

pub fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Where snapshot files live: inside the database directory, so table files staged from a
/// received snapshot are on the same file system and ingesting them is a rename.
pub(crate) fn snapshot_dir(engine: &Engine) -> PathBuf {
    engine.path().join("snapshots")
}

/// Where a received snapshot (or a restored backup) becomes table files before ingestion.
pub(crate) fn staging_dir(engine: &Engine) -> PathBuf {
    snapshot_dir(engine).join("staging")
}

fn write_err(meta: Option<&SnapshotMeta>, e: impl std::fmt::Display) -> StorageError {
    StorageIOError::write_snapshot(meta.map(|m| m.signature()), any(e.to_string())).into()
}

/// Makes a file's rename durable.
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Exports the state as of now into a new sealed file. The caller holds the apply lock while
/// this takes a RocksDB snapshot, so the position read here matches the exported data exactly;
/// `release` is then dropped and applies go on during the (long) copy.
pub(crate) fn build<G>(shared: &SmShared, release: G) -> Result<SnapshotRecord, StorageError> {
    let started = std::time::Instant::now();
    let engine = &shared.engine;
    let view = engine.snapshot();
    drop(release);
    let read_err =
        |e: idnode_storage::StorageError| -> StorageError { StorageIOError::read_state_machine(any(e)).into() };
    let applied: Option<LogId> = view.get_t::<Option<LogId>>(CF_META, KEY_APPLIED).map_err(read_err)?.flatten();
    let membership: Membership = view.get_t(CF_META, KEY_MEMBERSHIP).map_err(read_err)?.unwrap_or_default();
    let created_at = unix_now();
    let snapshot_id = match applied {
        Some(l) => format!("{}-{}-{}-{:08x}", l.leader_id.term, l.index, created_at, rand::random::<u32>()),
        None => format!("none-{}-{:08x}", created_at, rand::random::<u32>()),
    };
    let meta = SnapshotMeta { last_log_id: applied, last_membership: membership, snapshot_id };
    let dir = snapshot_dir(engine);
    let file = format!("{}.snap", meta.snapshot_id);
    let tmp = dir.join(format!("{file}.tmp"));
    let written = (|| -> Result<u64, Box<dyn std::error::Error + Send + Sync>> {
        std::fs::create_dir_all(&dir)?;
        let out = BufWriter::with_capacity(IO_BUFFER, File::create(&tmp)?);
        let mut plain = BufWriter::with_capacity(IO_BUFFER, shared.snapshot_key.sealer(&meta, out)?);
        Engine::export_view(&view, &shared.snapshot_cfs, &mut plain)?;
        let sealed = plain.into_inner().map_err(|e| e.into_error())?;
        let out = sealed.finish()?.into_inner().map_err(|e| e.into_error())?;
        out.sync_all()?;
        let size = out.metadata()?.len();
        std::fs::rename(&tmp, dir.join(&file))?;
        sync_dir(&dir)?;
        Ok(size)
    })();
    let size = written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        write_err(Some(&meta), e)
    })?;
    tracing::info!(snapshot = %meta.snapshot_id, bytes = size, ms = started.elapsed().as_millis(), "snapshot built");
    Ok(SnapshotRecord { meta, file, size, created_at, key_check: shared.snapshot_key.check() })
}

/// Replaces the state with the snapshot in `record`'s file. The whole file is verified (and
/// staged as table files) before anything is written; then an install marker is stored, the
/// column families are replaced and the position, membership and current snapshot written
/// with the marker's removal. A crash in between leaves the marker, and startup redoes this
/// from the same file before anything reads the state.
pub(crate) fn install_file(shared: &SmShared, record: &SnapshotRecord) -> Result<u64, StorageError> {
    let engine = &shared.engine;
    let meta = &record.meta;
    let started = std::time::Instant::now();
    let path = snapshot_dir(engine).join(&record.file);
    let file = File::open(&path).map_err(|e| write_err(Some(meta), format!("{}: {e}", path.display())))?;
    let mut input = shared.snapshot_key.opener(meta, BufReader::with_capacity(IO_BUFFER, file));
    let staged = engine
        .stage_import(&shared.snapshot_cfs, &mut input, &staging_dir(engine))
        .map_err(|e| write_err(Some(meta), format!("the snapshot does not open or is damaged: {e}")))?;
    if !input.finished() {
        return Err(write_err(Some(meta), "the snapshot ends before its sealed stream does"));
    }
    let mut marker = engine.batch();
    marker.put_t(CF_META, KEY_INSTALLING, record).map_err(|e| write_err(Some(meta), e))?;
    engine.write(marker, true).map_err(|e| write_err(Some(meta), e))?;
    let mut done = engine.batch();
    let position = (|| {
        done.put_t(CF_META, KEY_APPLIED, &meta.last_log_id)?;
        done.put_t(CF_META, KEY_MEMBERSHIP, &meta.last_membership)?;
        done.put_t(CF_META, KEY_SNAPSHOT, record)
    })();
    position.map_err(|e| write_err(Some(meta), e))?;
    done.delete(CF_META, KEY_INSTALLING);
    let staging = started.elapsed();
    // The current snapshot changes with the state, under its lock: a build of our own that
    // finishes meanwhile (it exported an older position) must not be recorded over this one,
    // or the log purged behind this one would leave the recorded snapshot short of it.
    let mut current = shared.current.lock().unwrap_or_else(|p| p.into_inner());
    shared.stats.installing.store(true, std::sync::atomic::Ordering::Release);
    let imported = engine.commit_import(staged, done);
    if imported.is_ok() {
        if let Some(old) = current.replace(record.clone()).filter(|old| old.file != record.file) {
            shared.remove_file(&old);
        }
    }
    drop(current);
    // The dedup table was replaced: its pruning scans from the start once more.
    shared.dedup_floor.reset();
    shared.stats.installing.store(false, std::sync::atomic::Ordering::Release);
    let records = imported.map_err(|e| write_err(Some(meta), e))?;
    tracing::info!(
        snapshot = %meta.snapshot_id,
        records,
        bytes = record.size,
        verified_and_staged_ms = staging.as_millis(),
        swapped_ms = (started.elapsed() - staging).as_millis(),
        "snapshot installed"
    );
    Ok(records)
}

/// Builds snapshots off the apply path (openraft runs it in its own task).
pub struct SnapshotBuilder {
    pub(crate) shared: std::sync::Arc<SmShared>,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let guard = self.shared.apply_lock.clone().lock_owned().await;
        let shared = self.shared.clone();
        let record = tokio::task::spawn_blocking(move || build(&shared, guard))
            .await
            .map_err(|e| StorageIOError::read_state_machine(any(e)))??;
        // Opened before it is offered: a newer snapshot may replace (and remove) it meanwhile,
        // and an open file stays readable.
        let data = self.shared.open_snapshot(&record).await?;
        self.shared.offer_snapshot(record.clone())?;
        Ok(Snapshot { meta: record.meta, snapshot: Box::new(data) })
    }
}

#[cfg(test)]
mod tests;
