//! Snapshots: a consistent export of the application's column families plus the dedup table,
//! tagged with the state machine position it was taken at. The current snapshot is kept in
//! memory and persisted (sealed) in `raft_meta` so it can be served again after a restart.
//! A snapshot that leaves for a peer is sealed under a key derived from the cluster secret
//! (the peer transport itself is not encrypted yet), bound to the snapshot's id.

use std::io::Cursor;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use idnode_keys::{derive_key, open_stream, seal_stream, KeyError, KEY_LEN};
use idnode_storage::{encode, Engine};
use openraft::{RaftSnapshotBuilder, Snapshot, StorageIOError};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

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

/// The key snapshot streams between peers are sealed with: every member derives the same one
/// from the cluster secret; a lone node without a secret gets a random one (it has no peers).
pub struct SnapshotKey(Zeroizing<[u8; KEY_LEN]>);

const SNAPSHOT_KEY_PURPOSE: &str = "idnode raft snapshot stream v1";

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

    pub fn seal(&self, meta: &SnapshotMeta, plaintext: &[u8]) -> Vec<u8> {
        seal_stream(&self.0, &Self::context(meta), plaintext)
    }

    pub fn open(&self, meta: &SnapshotMeta, sealed: &[u8]) -> Result<Vec<u8>, KeyError> {
        open_stream(&self.0, &Self::context(meta), sealed)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(id: &str) -> SnapshotMeta {
        SnapshotMeta { last_log_id: None, last_membership: Membership::default(), snapshot_id: id.to_string() }
    }

    #[test]
    fn snapshot_streams_open_only_with_the_cluster_secret_and_their_own_id() {
        let key = SnapshotKey::from_secret(Some("s3cret"));
        let data = b"users/alice-distinctive-value".repeat(100);
        let sealed = key.seal(&meta("1-10-x"), &data);
        assert!(!sealed.windows(16).any(|w| w == &data[..16]), "plaintext on the wire");
        assert_eq!(SnapshotKey::from_secret(Some("s3cret")).open(&meta("1-10-x"), &sealed).unwrap(), data);
        assert!(SnapshotKey::from_secret(Some("other")).open(&meta("1-10-x"), &sealed).is_err());
        assert!(key.open(&meta("1-11-y"), &sealed).is_err(), "bound to the snapshot id");
        assert!(SnapshotKey::from_secret(None).open(&meta("1-10-x"), &sealed).is_err());
    }
}
