use rocksdb::{Direction, IteratorMode, ReadOptions, Snapshot};
use serde::de::DeserializeOwned;

use crate::codec::value_ad;
use crate::{decode, Engine, Pair, Result, StorageError};

/// Reads from one consistent point in time: every read through a view sees the same state,
/// whatever is written meanwhile.
pub struct ReadView<'a> {
    pub(crate) engine: &'a Engine,
    pub(crate) snapshot: Option<Snapshot<'a>>,
}

impl<'a> ReadView<'a> {
    pub fn engine(&self) -> &'a Engine {
        self.engine
    }

    fn opts(&self) -> ReadOptions {
        let mut o = ReadOptions::default();
        if let Some(s) = &self.snapshot {
            o.set_snapshot(s);
        }
        o
    }

    /// Opens a stored value; one that does not open quarantines its family.
    fn open(&self, cf: &str, key: &[u8], sealed: &[u8]) -> Result<Vec<u8>> {
        self.engine.keys().open(&value_ad(cf, key), sealed).map_err(|source| {
            self.engine.quarantine(cf, &source);
            StorageError::Quarantined(cf.to_string())
        })
    }

    /// The family's handle, unless it is quarantined.
    fn handle(&self, cf: &str) -> Result<std::sync::Arc<rocksdb::BoundColumnFamily<'a>>> {
        self.engine.readable(cf)?;
        self.engine.cf(cf)
    }

    pub fn get(&self, cf: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let handle = self.handle(cf)?;
        match self.engine.db.get_cf_opt(&handle, key, &self.opts())? {
            Some(sealed) => Ok(Some(self.open(cf, key, &sealed)?)),
            None => Ok(None),
        }
    }

    pub fn get_t<T: DeserializeOwned>(&self, cf: &str, key: &[u8]) -> Result<Option<T>> {
        self.get(cf, key)?.map(|v| decode(&v)).transpose()
    }

    pub fn exists(&self, cf: &str, key: &[u8]) -> Result<bool> {
        let handle = self.handle(cf)?;
        Ok(self.engine.db.get_pinned_cf_opt(&handle, key, &self.opts())?.is_some())
    }

    /// Every pair whose key starts with `prefix`, in key order, at most `limit`.
    pub fn scan_prefix(&self, cf: &str, prefix: &[u8], limit: usize) -> Result<Vec<Pair>> {
        self.scan(cf, prefix, None, limit, |k| k.starts_with(prefix))
    }

    /// Pairs with `start <= key < end` (no end: to the last key), at most `limit`.
    pub fn scan_range(&self, cf: &str, start: &[u8], end: Option<&[u8]>, limit: usize) -> Result<Vec<Pair>> {
        self.scan(cf, start, None, limit, |k| end.is_none_or(|e| k < e))
    }

    /// Calls `f` on every pair of `cf` in key order without collecting them (whole-CF walks
    /// such as exports and digests stay flat in memory: they read around the block cache, so
    /// a walk neither grows the process nor evicts what the API reads).
    pub fn for_each(&self, cf: &str, mut f: impl FnMut(&[u8], &[u8]) -> Result<()>) -> Result<()> {
        let handle = self.handle(cf)?;
        let mut opts = self.opts();
        opts.fill_cache(false);
        opts.set_readahead_size(1 << 20);
        for item in self.engine.db.iterator_cf_opt(&handle, opts, IteratorMode::Start) {
            let (k, sealed) = item?;
            let v = self.open(cf, &k, &sealed)?;
            f(&k, &v)?;
        }
        Ok(())
    }

    /// The pair with the greatest key in `cf`, if any.
    pub fn last(&self, cf: &str) -> Result<Option<Pair>> {
        Ok(self.scan(cf, &[], Some(Direction::Reverse), 1, |_| true)?.pop())
    }

    /// Keys only (values not opened): for counting and for deletes.
    pub fn keys_with_prefix(&self, cf: &str, prefix: &[u8]) -> Result<Vec<Vec<u8>>> {
        let handle = self.handle(cf)?;
        let mut out = Vec::new();
        for item in self.engine.db.iterator_cf_opt(&handle, self.opts(), IteratorMode::From(prefix, Direction::Forward))
        {
            let (k, _) = item?;
            if !k.starts_with(prefix) {
                break;
            }
            out.push(k.to_vec());
        }
        Ok(out)
    }

    fn scan(
        &self,
        cf: &str,
        start: &[u8],
        dir: Option<Direction>,
        limit: usize,
        keep: impl Fn(&[u8]) -> bool,
    ) -> Result<Vec<Pair>> {
        let handle = self.handle(cf)?;
        let mode = match dir {
            Some(Direction::Reverse) => IteratorMode::End,
            _ => IteratorMode::From(start, Direction::Forward),
        };
        let mut out = Vec::new();
        for item in self.engine.db.iterator_cf_opt(&handle, self.opts(), mode) {
            if out.len() >= limit {
                break;
            }
            let (k, sealed) = item?;
            if !keep(&k) {
                break;
            }
            let v = self.open(cf, &k, &sealed)?;
            out.push((k.to_vec(), v));
        }
        Ok(out)
    }
}
