//! Exactly-once application of proposals: the reply of every applied request_id is stored in
//! the same RocksDB batch as the command's effects, so a retried proposal (after a forward
//! failed or a leader changed) is answered from the record instead of being applied again.
//! Records older than [`WINDOW`] log entries are pruned a few per apply; the pruning depends
//! only on replicated state, so every node prunes identically.

use std::sync::atomic::{AtomicU64, Ordering};

use idnode_storage::{Batch, Engine};
use serde::{Deserialize, Serialize};

use crate::schema::{dedup_index_key, dedup_record_key, CF_DEDUP, DEDUP_BY_INDEX};

/// How many log entries a request_id stays remembered (retries happen within seconds).
pub const WINDOW: u64 = 100_000;
/// Old records removed per applied proposal: more than one so a backlog drains.
const PRUNE_PER_APPLY: usize = 4;

#[derive(Debug, Serialize, Deserialize)]
pub struct DedupRecord {
    pub index: u64,
    pub reply: Vec<u8>,
}

/// The stored reply of an already applied request, if any.
pub fn lookup(engine: &Engine, batch: &Batch, request_id: &[u8; 16]) -> idnode_storage::Result<Option<DedupRecord>> {
    let key = dedup_record_key(request_id);
    match batch.get_t::<DedupRecord>(CF_DEDUP, &key) {
        Some(pending) => pending,
        None => engine.read().get_t(CF_DEDUP, &key),
    }
}

/// An index below which the stored state holds no index key: where pruning's scan starts.
/// Pruned keys stay behind as tombstones until compaction drops them, and a scan from the
/// start of the table walked every one of them on every apply (with 100,000 projects created,
/// that scan was most of every replica's CPU and creates fell to tens per second). Only a
/// hint: what is pruned is the same with or without it, so replicas stay identical; it starts
/// at 0 (one full scan) and is reset when a snapshot replaces the table.
#[derive(Debug, Default)]
pub struct PruneFloor(AtomicU64);

impl PruneFloor {
    pub fn reset(&self) {
        self.0.store(0, Ordering::Release);
    }
}

/// Remembers `reply` for `request_id` (applied at `index`) and prunes expired records.
pub fn record(
    engine: &Engine,
    batch: &mut Batch,
    floor: &PruneFloor,
    request_id: &[u8; 16],
    index: u64,
    reply: &[u8],
) -> idnode_storage::Result<()> {
    let rec = DedupRecord { index, reply: reply.to_vec() };
    batch.put_t(CF_DEDUP, dedup_record_key(request_id), &rec)?;
    batch.put(CF_DEDUP, dedup_index_key(index, request_id), &[]);
    prune(engine, batch, floor, index)
}

fn index_of(key: &[u8]) -> Option<u64> {
    key.get(1..9).and_then(|b| <[u8; 8]>::try_from(b).ok()).map(u64::from_be_bytes)
}

fn prune(engine: &Engine, batch: &mut Batch, floor: &PruneFloor, index: u64) -> idnode_storage::Result<()> {
    let Some(cutoff) = index.checked_sub(WINDOW) else {
        return Ok(());
    };
    let from = floor.0.load(Ordering::Acquire).min(cutoff);
    let (mut start, mut end) = (vec![DEDUP_BY_INDEX], vec![DEDUP_BY_INDEX]);
    start.extend_from_slice(&from.to_be_bytes());
    end.extend_from_slice(&cutoff.to_be_bytes());
    let old = engine.read().scan_range(CF_DEDUP, &start, Some(&end), PRUNE_PER_APPLY)?;
    // Nothing is stored below the first key found (below the cutoff when none is: records
    // are only added at the index being applied, above it).
    let lowest = old.first().and_then(|(k, _)| index_of(k)).unwrap_or(cutoff);
    floor.0.store(lowest.max(from), Ordering::Release);
    for (key, _) in old {
        if let Some(id) = key.get(9..25).and_then(|s| <[u8; 16]>::try_from(s).ok()) {
            batch.delete(CF_DEDUP, dedup_record_key(&id));
        }
        batch.delete(CF_DEDUP, key);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use idnode_keys::DataKeys;

    use super::*;

    #[test]
    fn records_are_found_and_pruned_after_the_window() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path(), &[CF_DEDUP], Arc::new(DataKeys::ephemeral())).unwrap();
        let floor = PruneFloor::default();
        let write = |id: [u8; 16], index: u64| {
            let mut b = engine.batch();
            record(&engine, &mut b, &floor, &id, index, b"reply").unwrap();
            engine.write(b, false).unwrap();
        };
        write([1; 16], 1);
        write([2; 16], 2);
        let b = engine.batch();
        assert_eq!(lookup(&engine, &b, &[1; 16]).unwrap().map(|r| r.reply), Some(b"reply".to_vec()));
        assert!(lookup(&engine, &b, &[9; 16]).unwrap().is_none());
        // Within the window nothing is pruned.
        write([3; 16], WINDOW);
        assert!(lookup(&engine, &engine.batch(), &[1; 16]).unwrap().is_some());
        // Past it, the oldest records go (index 1 and 2 are < WINDOW + 3 - WINDOW).
        write([4; 16], WINDOW + 3);
        let b = engine.batch();
        assert!(lookup(&engine, &b, &[1; 16]).unwrap().is_none());
        assert!(lookup(&engine, &b, &[2; 16]).unwrap().is_none());
        assert!(lookup(&engine, &b, &[3; 16]).unwrap().is_some());
        assert_eq!(engine.read().keys_with_prefix(CF_DEDUP, &[DEDUP_BY_INDEX]).unwrap().len(), 2);
    }

    /// The floor only skips what is gone: two tables fed the same records, one pruning with a
    /// floor kept across applies and one scanning from the start each time (what every replica
    /// did before), hold the same keys at every step, past a reset too.
    #[test]
    fn the_prune_floor_changes_nothing_but_where_the_scan_starts() {
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let open =
            |d: &tempfile::TempDir| Engine::open(d.path(), &[CF_DEDUP], Arc::new(DataKeys::ephemeral())).unwrap();
        let (kept, fresh) = (open(&dirs[0]), open(&dirs[1]));
        let floor = PruneFloor::default();
        // Entries that carry no proposal prune nothing: after 3,000 records, a long stretch of
        // them leaves 2,000 records overdue when proposals resume, and pruning (4 per apply)
        // catches up from behind.
        let indexes: Vec<u64> = (1..=3000).chain(WINDOW + 2001..=WINDOW + 3000).collect();
        let keys = |e: &Engine| e.read().keys_with_prefix(CF_DEDUP, &[]).unwrap();
        for (n, index) in indexes.into_iter().enumerate() {
            let id = (n as u128).to_be_bytes();
            if index == WINDOW + 2300 {
                floor.reset();
            }
            for (engine, floor) in [(&kept, &floor), (&fresh, &PruneFloor::default())] {
                let mut b = engine.batch();
                record(engine, &mut b, floor, &id, index, b"r").unwrap();
                engine.write(b, false).unwrap();
            }
            if index > WINDOW && index % 37 == 0 {
                assert_eq!(keys(&kept), keys(&fresh), "at index {index}");
            }
        }
        assert_eq!(keys(&kept), keys(&fresh));
        let oldest = kept.read().keys_with_prefix(CF_DEDUP, &[DEDUP_BY_INDEX]).unwrap()[0].clone();
        assert_eq!(index_of(&oldest), Some(3000), "the backlog drained: nothing below the last cutoff is left");
    }
}
