//! `Tx`: what apply reads and writes through, the engine plus this command's batch.

use std::sync::Arc;

use idnode_keys::IndexHasher;
use idnode_storage::{Batch, Engine, Pair, Result};
use serde::Serialize;

use super::reader::{member_prefix, name_key, Reader};
use crate::state::cf;

/// What apply reads and writes through: reads see this command's own earlier writes. It
/// always has an index hasher (apply refuses every command but bootstrap before the cluster
/// has an index key), so index writes cannot fail.
pub struct Tx<'a> {
    pub engine: &'a Engine,
    pub batch: &'a mut Batch,
    pub index: Arc<IndexHasher>,
}

impl Tx<'_> {
    pub fn put<T: Serialize>(&mut self, cf: &'static str, key: Vec<u8>, value: &T) -> Result<()> {
        self.batch.put_t(cf, key, value)
    }

    pub fn delete(&mut self, cf: &'static str, key: Vec<u8>) {
        self.batch.delete(cf, key)
    }

    pub fn put_name(&mut self, ns: &str, scope: &str, name: &str, id: &str) {
        let key = name_key(&self.index, ns, scope, name);
        self.batch.put(cf::NAMES, key, id.as_bytes());
    }

    pub fn delete_name(&mut self, ns: &str, scope: &str, name: &str) {
        let key = name_key(&self.index, ns, scope, name);
        self.batch.delete(cf::NAMES, key);
    }

    pub fn add_member(&mut self, ns: &str, term: &str, id: &str) {
        let mut key = member_prefix(&self.index, ns, term);
        key.extend_from_slice(id.as_bytes());
        self.batch.put(cf::MEMBERS, key, &[]);
    }

    pub fn remove_member(&mut self, ns: &str, term: &str, id: &str) {
        let mut key = member_prefix(&self.index, ns, term);
        key.extend_from_slice(id.as_bytes());
        self.batch.delete(cf::MEMBERS, key);
    }
}

impl Tx<'_> {
    /// At most `limit` pairs with `start <= key < end`, this command's (and this batch's)
    /// own writes included: bounded work whatever the column family holds, and the same
    /// answer however a replica groups entries into batches.
    pub fn scan_before(&self, cf: &'static str, start: &[u8], end: &[u8], limit: usize) -> Result<Vec<Pair>> {
        let pending: Vec<(&[u8], Option<&[u8]>)> =
            self.batch.pending_with_prefix(cf, start).filter(|(k, _)| *k < end).collect();
        let deleted = pending.iter().filter(|(_, v)| v.is_none()).count();
        let mut merged: std::collections::BTreeMap<Vec<u8>, Vec<u8>> =
            self.engine.read().scan_range(cf, start, Some(end), limit + deleted)?.into_iter().collect();
        for (k, v) in pending {
            match v {
                Some(v) => merged.insert(k.to_vec(), v.to_vec()),
                None => merged.remove(k),
            };
        }
        Ok(merged.into_iter().take(limit).collect())
    }
}

impl Reader for Tx<'_> {
    fn get_raw(&self, cf: &'static str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.batch.get(cf, key) {
            Some(v) => Ok(v.map(<[u8]>::to_vec)),
            None => {
                let value = self.engine.read().get(cf, key)?;
                // the write's running digest takes out what this read found
                self.batch.note_read(cf, key, value.as_deref());
                Ok(value)
            }
        }
    }

    fn scan_raw(&self, cf: &'static str, prefix: &[u8]) -> Result<Vec<Pair>> {
        let mut merged: std::collections::BTreeMap<Vec<u8>, Vec<u8>> =
            self.engine.read().scan_prefix(cf, prefix, usize::MAX)?.into_iter().collect();
        for (k, v) in self.batch.pending_with_prefix(cf, prefix) {
            match v {
                Some(v) => merged.insert(k.to_vec(), v.to_vec()),
                None => merged.remove(k),
            };
        }
        Ok(merged.into_iter().collect())
    }

    fn index_hasher(&self) -> Result<Option<Arc<IndexHasher>>> {
        Ok(Some(self.index.clone()))
    }
}
