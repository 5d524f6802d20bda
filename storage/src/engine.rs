use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use idnode_keys::{DataKeys, IndexHasher, IndexKey};
use rocksdb::{BoundColumnFamily, ColumnFamilyDescriptor, MultiThreaded, Options, WriteBatch, WriteOptions};

use crate::running::Running;
use crate::{Batch, ReadView, Result, StorageError};

pub(crate) type Db = rocksdb::DBWithThreadMode<MultiThreaded>;

/// One RocksDB instance per node holding every column family (raft log, raft metadata and
/// the application state). Sharing one write-ahead log means a synced log append also makes
/// every earlier state write durable, in order.
pub struct Engine {
    pub(crate) db: Db,
    keys: Arc<DataKeys>,
    path: PathBuf,
    cfs: Vec<&'static str>,
    /// The hasher of index terms, for the index key the application keeps in its replicated
    /// state (`None` until the application has one). A cache: the state is the authority.
    index: RwLock<Option<Arc<IndexHasher>>>,
    /// Held by every write, and by a re-sealing step across its reads and its write, so a
    /// value re-sealed under a new data key never overwrites a newer write (`reseal`).
    pub(crate) write_lock: Mutex<()>,
    /// Column families quarantined on this node: a stored value failed to open (tampered,
    /// corrupted, sealed under a key this node does not hold) or a consistency check found
    /// the family's digest different from the cluster's. Nothing is read from them
    /// again until the node is rebuilt (docs/operations.md, "Quarantine").
    quarantined: RwLock<std::collections::BTreeSet<String>>,
    /// The running digests of the replicated families, once the node starts them
    /// (`track_digests`): every write updates them.
    pub(crate) running: OnceLock<Arc<Running>>,
}

/// RocksDB's memory by default (`[raft] storage_memory_mb`), all column families together:
/// cached table blocks and the memtables, which are charged to the same cache, so this one
/// figure bounds both. Half of it is what the memtables may take before the oldest is
/// flushed, so a burst of writes (a new member replaying the entries after its snapshot, a
/// bulk import) moves memory by about that much, not by each family's own limit. Writers are
/// not made to wait at the limit: with RocksDB's stall on, a snapshot-install test hung for
/// good, every writer waiting for memory to be freed and no flush running (docs/decisions.md).
pub const MEMORY_BUDGET_BYTES: usize = 32 << 20;
/// The smallest budget a setting may give: the memtables of a few busy families need room.
pub const MIN_MEMORY_BUDGET_BYTES: usize = 8 << 20;
const MEMTABLE_ARENA_BLOCK_BYTES: usize = 256 << 10;

/// Where the quarantined families are recorded: beside the database directory (`db` →
/// `db.quarantine`), so deleting the data directory to rebuild the node removes it too.
fn quarantine_file(db: &Path) -> PathBuf {
    db.with_extension("quarantine")
}

fn load_quarantine(file: &Path) -> std::collections::BTreeSet<String> {
    std::fs::read_to_string(file)
        .map(|t| t.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect())
        .unwrap_or_default()
}

/// How tables are laid out, for the database and for the files a snapshot install stages.
/// Bloom filters (10 bits a key, about 1 % false positives): most point reads on the write
/// path are for keys that do not exist (a name's uniqueness, a request's dedup entry), and
/// without a filter each searched every level's index and a data block.
pub(crate) fn table_format() -> rocksdb::BlockBasedOptions {
    let mut table = rocksdb::BlockBasedOptions::default();
    table.set_bloom_filter(10.0, false);
    table
}

impl Engine {
    /// Opens (creating when missing) the database at `dir` with exactly `cfs`, within the
    /// default memory budget.
    pub fn open(dir: &Path, cfs: &[&'static str], keys: Arc<DataKeys>) -> Result<Engine> {
        Self::open_within(dir, cfs, keys, MEMORY_BUDGET_BYTES)
    }

    /// [`Engine::open`] with `budget` bytes for RocksDB's block cache and memtables together
    /// (the memtables may take half of it); at least 8 MiB.
    pub fn open_within(dir: &Path, cfs: &[&'static str], keys: Arc<DataKeys>, budget: usize) -> Result<Engine> {
        let budget = budget.max(MIN_MEMORY_BUDGET_BYTES);
        std::fs::create_dir_all(dir)?;
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts.set_max_background_jobs(2);
        opts.set_keep_log_file_num(4);
        opts.set_compression_type(rocksdb::DBCompressionType::None);
        // One block cache for every column family: left alone, RocksDB gives each its own
        // (32 MiB apiece), so a node that reads its whole state once (a snapshot install, a
        // consistency check) grew by the size of the state. Memtables are bounded the same
        // way: otherwise each family's may reach 64 MiB twice over before a flush.
        let cache = rocksdb::Cache::new_lru_cache(budget);
        let buffers =
            rocksdb::WriteBufferManager::new_write_buffer_manager_with_cache(budget / 2, false, cache.clone());
        opts.set_write_buffer_manager(&buffers);
        let mut table = table_format();
        table.set_block_cache(&cache);
        let descriptors = cfs.iter().map(|name| {
            let mut o = Options::default();
            o.set_compression_type(rocksdb::DBCompressionType::None);
            o.set_block_based_table_factory(&table);
            // A memtable's memory grows by whole arena blocks (1 MiB by default) and the budget
            // counts them: smaller blocks keep a family touched by a few writes from holding a
            // megabyte of it.
            o.set_arena_block_size(MEMTABLE_ARENA_BLOCK_BYTES);
            ColumnFamilyDescriptor::new(*name, o)
        });
        let db = Db::open_cf_descriptors(&opts, dir, descriptors)?;
        Ok(Engine {
            db,
            keys,
            path: dir.to_path_buf(),
            cfs: cfs.to_vec(),
            index: RwLock::new(None),
            write_lock: Mutex::new(()),
            quarantined: RwLock::new(load_quarantine(&quarantine_file(dir))),
            running: OnceLock::new(),
        })
    }

    pub fn keys(&self) -> &Arc<DataKeys> {
        &self.keys
    }

    /// The column families quarantined on this node, by name.
    pub fn quarantined(&self) -> Vec<String> {
        self.quarantined.read().map(|q| q.iter().cloned().collect()).unwrap_or_default()
    }

    /// Refuses a read of a quarantined family.
    pub(crate) fn readable(&self, cf: &str) -> Result<()> {
        match self.quarantined.read() {
            Ok(q) if !q.contains(cf) => Ok(()),
            _ => Err(StorageError::Quarantined(cf.to_string())),
        }
    }

    /// Quarantines `cf` after one of its values failed to open: serving the rest of it could
    /// answer from damaged state (a missing revocation, an altered grant).
    pub(crate) fn quarantine(&self, cf: &str, why: &idnode_keys::KeyError) {
        self.quarantine_because(cf, &format_args!("a stored value could not be opened ({why})"));
    }

    /// Quarantines `cf` for `why` (a value that does not open, a digest that differs from
    /// the cluster's): nothing is read from it on this node again. The verdict is kept beside
    /// the database, so a restart does not serve the family again: only rebuilding the node
    /// (a new data directory) lifts it. Logged once per family, at error.
    pub fn quarantine_because(&self, cf: &str, why: &dyn std::fmt::Display) {
        let mut q = self.quarantined.write().unwrap_or_else(|p| p.into_inner());
        if q.insert(cf.to_string()) {
            let file = quarantine_file(&self.path);
            let text: String = q.iter().map(|c| format!("{c}\n")).collect();
            let tmp = file.with_extension("quarantine.tmp");
            let saved = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &file));
            if let Err(e) = saved {
                tracing::error!(file = %file.display(), "the quarantine could not be recorded ({e}): a restart would forget it");
            }
            tracing::error!(
                column_family = cf,
                "{why}: the column family is quarantined on this node and its reads answer 503; rebuild the node \
                 (docs/operations.md, \"Quarantine\")"
            );
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn column_families(&self) -> &[&'static str] {
        &self.cfs
    }

    pub(crate) fn cf(&self, name: &str) -> Result<Arc<BoundColumnFamily<'_>>> {
        self.db.cf_handle(name).ok_or_else(|| StorageError::UnknownCf(name.to_string()))
    }

    /// Reads of the latest committed state (each read on its own).
    pub fn read(&self) -> ReadView<'_> {
        ReadView { engine: self, snapshot: None }
    }

    /// A consistent point-in-time view for multi-read operations.
    pub fn snapshot(&self) -> ReadView<'_> {
        ReadView { engine: self, snapshot: Some(self.db.snapshot()) }
    }

    pub fn batch(&self) -> Batch {
        Batch::new(self.keys.clone(), self.running.get().map(|r| r.writes()))
    }

    /// Fault injection for the quarantine tests: flips one byte of the stored (sealed) value
    /// at `key`, as a damaged disk would; false when there is no such value.
    pub fn flip_stored_byte(&self, cf: &str, key: &[u8]) -> Result<bool> {
        let handle = self.cf(cf)?;
        let Some(mut sealed) = self.db.get_cf(&handle, key)? else { return Ok(false) };
        if let Some(last) = sealed.last_mut() {
            *last ^= 0x01;
        }
        let mut wb = WriteBatch::default();
        wb.put_cf(&handle, key, sealed);
        self.write_raw(wb, true)?;
        Ok(true)
    }

    /// Applies a batch atomically. `sync` waits for the write-ahead log to reach the disk. A
    /// batch that touches tracked families also tells the running digests what it changed:
    /// the values it replaces are read under the digests' own writer lock, held until the
    /// write landed, so no other write to those families slips in between; writes to other
    /// families (the raft log's appends) do not wait for those reads.
    pub fn write(&self, batch: Batch, sync: bool) -> Result<()> {
        let running = self.running.get().filter(|r| batch.ops.keys().any(|(cf, _)| r.tracks(cf)));
        let _writer = running.map(|r| r.writer());
        let deltas = self.deltas(&batch)?;
        let mut wb = WriteBatch::default();
        for ((cf, key), op) in batch.ops {
            let handle = self.cf(cf)?;
            match op {
                Some((sealed, _)) => wb.put_cf(&handle, key, sealed),
                None => wb.delete_cf(&handle, key),
            }
        }
        let _turn = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        self.write_unlocked(wb, sync)?;
        if let Some(running) = running {
            running.commit(deltas);
        }
        Ok(())
    }

    pub(crate) fn write_raw(&self, wb: WriteBatch, sync: bool) -> Result<()> {
        let _turn = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        self.write_unlocked(wb, sync)
    }

    /// A write by a caller that holds `write_lock`.
    pub(crate) fn write_unlocked(&self, wb: WriteBatch, sync: bool) -> Result<()> {
        let mut wo = WriteOptions::default();
        wo.set_sync(sync);
        self.db.write_opt(wb, &wo)?;
        Ok(())
    }

    /// Writes every memtable to table files (a clean shutdown: faster restart, short WAL).
    pub fn flush(&self) -> Result<()> {
        for cf in &self.cfs {
            self.db.flush_cf(&self.cf(cf)?)?;
        }
        Ok(())
    }

    /// Makes every write so far durable.
    pub fn sync(&self) -> Result<()> {
        self.db.flush_wal(true)?;
        Ok(())
    }

    /// The cached hasher of index terms, if the application installed one.
    pub fn index_hasher(&self) -> Option<Arc<IndexHasher>> {
        self.index.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Installs (or, with `None`, forgets) the cached index hasher. The application calls it
    /// with the key its committed state holds, so the cache never disagrees with the state.
    pub fn set_index_key(&self, key: Option<&IndexKey>) {
        *self.index.write().unwrap_or_else(|p| p.into_inner()) = key.map(|k| Arc::new(k.hasher()));
    }

    /// Bytes used by the database directory.
    pub fn disk_usage(&self) -> u64 {
        dir_size(&self.path)
    }

    /// RocksDB's memory, as RocksDB counts it: (block cache, memtables, table readers' index
    /// and filter blocks), every column family together. The memtables are charged to the
    /// block cache, so the first figure includes the second and stays near
    /// `MEMORY_BUDGET_BYTES`.
    pub fn memory_usage(&self) -> (u64, u64, u64) {
        // One cache serves every family: ask one of them.
        let cache = self
            .cfs
            .first()
            .and_then(|name| self.db.cf_handle(name))
            .and_then(|h| self.db.property_int_value_cf(&h, "rocksdb.block-cache-usage").ok().flatten())
            .unwrap_or(0);
        let sum = |property| self.property_sum(property);
        (cache, sum("rocksdb.cur-size-all-mem-tables"), sum("rocksdb.estimate-table-readers-mem"))
    }

    /// Bytes in the families' active (still written) memtables, all together: what the memory
    /// budget's write buffer manager compares with its threshold before each write, switching
    /// one to a flush once they pass it (the memtables waiting for that flush are in
    /// [`Engine::memory_usage`]'s figure, not in this one).
    pub fn active_memtable_bytes(&self) -> u64 {
        self.property_sum("rocksdb.cur-size-active-mem-table")
    }

    /// A numeric RocksDB property summed over every column family.
    fn property_sum(&self, property: &str) -> u64 {
        self.cfs
            .iter()
            .filter_map(|name| self.db.cf_handle(name))
            .filter_map(|h| self.db.property_int_value_cf(&h, property).ok().flatten())
            .sum()
    }
}

fn dir_size(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else { return 0 };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}
