//! The raft log in RocksDB: entries in `raft_log` under big-endian indexes, vote, committed
//! and last-purged in `raft_meta`. Appends are synced before openraft hears they are flushed,
//! so an acknowledgement means a majority has the entry on disk.

use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use idnode_storage::{decode, encode, Engine};
use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{LogState, RaftLogId, RaftLogReader, StorageIOError};

use crate::error::any;
use crate::recent_log::RecentEntries;
use crate::schema::{log_index, log_key, CF_LOG, CF_META, KEY_COMMITTED, KEY_PURGED, KEY_VOTE};
use crate::snapshot_policy::LogVolume;
use crate::types::{Entry, LogId, StorageError, TypeConfig, Vote};

/// Log storage handle; cheap to clone (the reader is a clone too: RocksDB serves both).
#[derive(Clone)]
pub struct LogStore {
    engine: Arc<Engine>,
    /// Last committed index seen (for status and metrics without asking raft core).
    committed: Arc<AtomicU64>,
    /// The newest entries, decoded, shared by every clone (replication and apply read them).
    recent: Arc<RecentEntries>,
    /// What has been appended, for the snapshot policy's estimate of the log's size.
    volume: Arc<LogVolume>,
}

impl LogStore {
    pub fn new(engine: Arc<Engine>) -> Self {
        LogStore { engine, committed: Arc::new(AtomicU64::new(0)), recent: Arc::default(), volume: Arc::default() }
    }

    /// Shares the committed index cell with the node (status reads it without locking).
    pub(crate) fn committed_cell(&self) -> Arc<AtomicU64> {
        self.committed.clone()
    }

    /// Shares the appended-volume counters with the snapshot policy.
    pub(crate) fn volume(&self) -> Arc<LogVolume> {
        self.volume.clone()
    }

    fn meta<T: serde::de::DeserializeOwned>(&self, key: &[u8]) -> Result<Option<T>, StorageError> {
        self.engine.read().get_t(CF_META, key).map_err(|e| StorageIOError::read(any(e)).into())
    }

    fn last_entry_id(&self) -> Result<Option<LogId>, StorageError> {
        match self.engine.read().last(CF_LOG).map_err(|e| StorageIOError::read_logs(any(e)))? {
            Some((_, v)) => {
                let entry: Entry = decode(&v).map_err(|e| StorageIOError::read_logs(any(e)))?;
                Ok(Some(*entry.get_log_id()))
            }
            None => Ok(None),
        }
    }

    /// Deletes the log keys in `[from, to]` (inclusive) in one batch, recording `purged`.
    fn delete_range(&self, from: u64, to: u64, purged: Option<&LogId>, sync: bool) -> Result<(), StorageError> {
        let mut batch = self.engine.batch();
        let mut i = from;
        while i <= to {
            batch.delete(CF_LOG, log_key(i));
            if i == u64::MAX {
                break;
            }
            i += 1;
        }
        if let Some(p) = purged {
            batch.put_t(CF_META, KEY_PURGED, p).map_err(|e| StorageIOError::write_logs(any(e)))?;
        }
        self.engine.write(batch, sync).map_err(|e| StorageIOError::write_logs(any(e)).into())
    }

    fn first_index(&self) -> Result<Option<u64>, StorageError> {
        let first = self.engine.read().keys_first(CF_LOG).map_err(|e| StorageIOError::read_logs(any(e)))?;
        Ok(first.as_deref().and_then(log_index))
    }
}

/// The first key of a column family without opening its value.
trait FirstKey {
    fn keys_first(&self, cf: &str) -> idnode_storage::Result<Option<Vec<u8>>>;
}

impl FirstKey for idnode_storage::ReadView<'_> {
    fn keys_first(&self, cf: &str) -> idnode_storage::Result<Option<Vec<u8>>> {
        Ok(self.scan_range(cf, &[], None, 1)?.pop().map(|(k, _)| k))
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        let start = match range.start_bound() {
            Bound::Included(s) => *s,
            Bound::Excluded(s) => s.saturating_add(1),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(e) => e.checked_add(1),
            Bound::Excluded(e) => Some(*e),
            Bound::Unbounded => None,
        };
        if end.is_some_and(|e| e <= start) {
            return Ok(Vec::new());
        }
        if let Some(entries) = self.recent.get(start, end) {
            return Ok(entries);
        }
        let end_key = end.map(log_key);
        let pairs = self
            .engine
            .read()
            .scan_range(CF_LOG, &log_key(start), end_key.as_deref(), usize::MAX)
            .map_err(|e| StorageIOError::read_logs(any(e)))?;
        pairs.iter().map(|(_, v)| decode::<Entry>(v).map_err(|e| StorageIOError::read_logs(any(e)).into())).collect()
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError> {
        let last_purged_log_id: Option<LogId> = self.meta(KEY_PURGED)?;
        let last_log_id = self.last_entry_id()?.or(last_purged_log_id);
        Ok(LogState { last_purged_log_id, last_log_id })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), StorageError> {
        let mut batch = self.engine.batch();
        batch.put_t(CF_META, KEY_VOTE, vote).map_err(|e| StorageIOError::write_vote(any(e)))?;
        // A vote must survive a crash or the node could vote twice in one term.
        self.engine.write(batch, true).map_err(|e| StorageIOError::write_vote(any(e)).into())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, StorageError> {
        self.meta(KEY_VOTE)
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        let mut batch = self.engine.batch();
        batch.put_t(CF_META, KEY_COMMITTED, &committed).map_err(|e| StorageIOError::write(any(e)))?;
        self.engine.write(batch, false).map_err(|e| StorageIOError::write(any(e)))?;
        self.committed.store(committed.map_or(0, |c| c.index), Ordering::Release);
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        let committed: Option<Option<LogId>> = self.meta(KEY_COMMITTED)?;
        let committed = committed.flatten();
        self.committed.store(committed.map_or(0, |c| c.index), Ordering::Release);
        Ok(committed)
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<TypeConfig>) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let mut batch = self.engine.batch();
        let mut written = Vec::new();
        for entry in entries {
            let index = entry.get_log_id().index;
            let bytes = encode(&entry).map_err(|e| StorageIOError::write_logs(any(e)))?;
            batch.put(CF_LOG, log_key(index), &bytes);
            written.push((entry, bytes.len()));
        }
        // Synced: the flush callback is the promise that the entries are on disk.
        match self.engine.write(batch, true) {
            Ok(()) => {
                self.volume.appended(written.len() as u64, written.iter().map(|(_, n)| *n as u64).sum());
                self.recent.appended(written);
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                let msg = e.to_string();
                callback.log_io_completed(Err(std::io::Error::other(msg.clone())));
                Err(StorageIOError::write_logs(any(msg)).into())
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        if let Some(last) = self.last_entry_id()? {
            if last.index >= log_id.index {
                self.recent.truncated(log_id.index);
                // Synced: conflicting entries must not reappear after a crash.
                self.delete_range(log_id.index, last.index, None, true)?;
            }
        }
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let from = self.first_index()?.unwrap_or(log_id.index);
        let from = from.min(log_id.index);
        self.recent.purged(log_id.index);
        // Not synced: a purge lost in a crash only leaves entries the snapshot already covers.
        self.delete_range(from, log_id.index, Some(&log_id), false)
    }
}
