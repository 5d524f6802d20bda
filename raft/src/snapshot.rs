//! Snapshots: a consistent export of the application's column families plus the dedup table,
//! tagged with the state machine position it was taken at. The current snapshot is kept in
//! memory and persisted (sealed) in `raft_meta` so it can be served again after a restart.

use std::io::Cursor;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use idnode_storage::{encode, Engine};
use openraft::{RaftSnapshotBuilder, Snapshot, StorageIOError};
use serde::{Deserialize, Serialize};

use crate::error::any;
use crate::schema::{CF_META, KEY_APPLIED, KEY_MEMBERSHIP, KEY_SNAPSHOT};
use crate::state_machine::SmShared;
use crate::types::{LogId, Membership, SnapshotMeta, StorageError, TypeConfig};

/// A snapshot as persisted: meta, the export stream and when it was made (unix seconds).
#[derive(Clone, Serialize, Deserialize)]
pub struct StoredSnapshot {
    pub meta: SnapshotMeta,
    pub data: Vec<u8>,
    pub created_at: u64,
}

impl StoredSnapshot {
    pub fn to_snapshot(&self) -> Snapshot<TypeConfig> {
        Snapshot { meta: self.meta.clone(), snapshot: Box::new(Cursor::new(self.data.clone())) }
    }
}

pub fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Exports the state as of now. The caller holds the apply lock while this takes a RocksDB
/// snapshot, so the position read here matches the exported data exactly; `release` is then
/// dropped and applies go on during the (long) copy.
pub fn export<G>(engine: &Engine, cfs: &[&'static str], release: G) -> Result<StoredSnapshot, StorageError> {
    let view = engine.snapshot();
    drop(release);
    let applied: Option<LogId> = view
        .get_t::<Option<LogId>>(CF_META, KEY_APPLIED)
        .map_err(|e| StorageIOError::read_state_machine(any(e)))?
        .flatten();
    let membership: Membership = view
        .get_t(CF_META, KEY_MEMBERSHIP)
        .map_err(|e| StorageIOError::read_state_machine(any(e)))?
        .unwrap_or_default();
    let mut data = Vec::new();
    Engine::export_view(&view, cfs, &mut data).map_err(|e| StorageIOError::read_state_machine(any(e)))?;
    let created_at = unix_now();
    let snapshot_id = match applied {
        Some(l) => format!("{}-{}-{}-{:08x}", l.leader_id.term, l.index, created_at, rand::random::<u32>()),
        None => format!("none-{}-{:08x}", created_at, rand::random::<u32>()),
    };
    let meta = SnapshotMeta { last_log_id: applied, last_membership: membership, snapshot_id };
    Ok(StoredSnapshot { meta, data, created_at })
}

/// Extra (cf, key, value) puts for `Engine::import`.
pub type Puts = Vec<(&'static str, Vec<u8>, Vec<u8>)>;

/// The `raft_meta` puts that make a snapshot current, in the form `Engine::import` takes.
pub fn import_extras(snap: &StoredSnapshot) -> idnode_storage::Result<Puts> {
    Ok(vec![
        (CF_META, KEY_APPLIED.to_vec(), encode(&snap.meta.last_log_id)?),
        (CF_META, KEY_MEMBERSHIP.to_vec(), encode(&snap.meta.last_membership)?),
        (CF_META, KEY_SNAPSHOT.to_vec(), encode(snap)?),
    ])
}

/// Builds snapshots off the apply path (openraft runs it in its own task).
pub struct SnapshotBuilder {
    pub(crate) shared: Arc<SmShared>,
}

impl RaftSnapshotBuilder<TypeConfig> for SnapshotBuilder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<TypeConfig>, StorageError> {
        let guard = self.shared.apply_lock.clone().lock_owned().await;
        let shared = self.shared.clone();
        let built = tokio::task::spawn_blocking(move || export(&shared.engine, &shared.snapshot_cfs, guard))
            .await
            .map_err(|e| StorageIOError::read_state_machine(any(e)))??;
        self.shared.offer_snapshot(built.clone())?;
        Ok(built.to_snapshot())
    }
}
