//! Exactly-once application of proposals: the reply of every applied request_id is stored in
//! the same RocksDB batch as the command's effects, so a retried proposal (after a forward
//! failed or a leader changed) is answered from the record instead of being applied again.
//! Records older than [`WINDOW`] log entries are pruned a few per apply; the pruning depends
//! only on replicated state, so every node prunes identically.

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

/// Remembers `reply` for `request_id` (applied at `index`) and prunes expired records.
pub fn record(
    engine: &Engine,
    batch: &mut Batch,
    request_id: &[u8; 16],
    index: u64,
    reply: &[u8],
) -> idnode_storage::Result<()> {
    let rec = DedupRecord { index, reply: reply.to_vec() };
    batch.put_t(CF_DEDUP, dedup_record_key(request_id), &rec)?;
    batch.put(CF_DEDUP, dedup_index_key(index, request_id), &[]);
    prune(engine, batch, index)
}

fn prune(engine: &Engine, batch: &mut Batch, index: u64) -> idnode_storage::Result<()> {
    let Some(cutoff) = index.checked_sub(WINDOW) else {
        return Ok(());
    };
    let mut end = vec![DEDUP_BY_INDEX];
    end.extend_from_slice(&cutoff.to_be_bytes());
    let old = engine.read().scan_range(CF_DEDUP, &[DEDUP_BY_INDEX], Some(&end), PRUNE_PER_APPLY)?;
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
        let write = |id: [u8; 16], index: u64| {
            let mut b = engine.batch();
            record(&engine, &mut b, &id, index, b"reply").unwrap();
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
}
