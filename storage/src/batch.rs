use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use idnode_keys::DataKeys;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::codec::value_ad;
use crate::{decode, encode, Result};

/// A put's value as written (sealed) and as read back by the batch's builder (plaintext).
pub(crate) type Sealed = (Vec<u8>, Vec<u8>);

/// Writes that land together or not at all. Values are sealed as they are added. The batch
/// remembers its plaintext so code that builds it can read its own writes (see [`Batch::get`]).
pub struct Batch {
    pub(crate) keys: Arc<DataKeys>,
    /// (cf, key) -> Some(sealed, plaintext) for a put, None for a delete; the last op wins.
    pub(crate) ops: BTreeMap<(&'static str, Vec<u8>), Option<Sealed>>,
    /// While a savepoint is open: each touched key with what the batch held for it before.
    journal: Option<Vec<Undo>>,
    /// The engine's count of writes to tracked families when the batch was made (`None`: the
    /// engine keeps no running digests).
    pub(crate) made_at: Option<u64>,
    /// What the builder read from the engine, per key (`None`: absent). While no tracked write
    /// landed since `made_at`, these are the values the batch's writes replace, so the running
    /// digests need not read them again (`Engine::deltas`).
    pub(crate) seen: Mutex<BTreeMap<OpKey, Option<Vec<u8>>>>,
}

type OpKey = (&'static str, Vec<u8>);
type Undo = (OpKey, Option<Option<Sealed>>);

impl Batch {
    pub(crate) fn new(keys: Arc<DataKeys>, made_at: Option<u64>) -> Self {
        Batch { keys, ops: BTreeMap::new(), journal: None, made_at, seen: Mutex::new(BTreeMap::new()) }
    }

    /// The builder read `value` for `key` from the engine (not from this batch): kept, so the
    /// write need not read it again. The first reading of a key is kept.
    pub fn note_read(&self, cf: &'static str, key: &[u8], value: Option<&[u8]>) {
        if self.made_at.is_some() {
            let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            seen.entry((cf, key.to_vec())).or_insert_with(|| value.map(<[u8]>::to_vec));
        }
    }

    pub fn put(&mut self, cf: &'static str, key: impl Into<Vec<u8>>, value: &[u8]) {
        let key = key.into();
        let sealed = self.keys.seal(&value_ad(cf, &key), value);
        self.set((cf, key), Some((sealed, value.to_vec())));
    }

    pub fn put_t<T: Serialize>(&mut self, cf: &'static str, key: impl Into<Vec<u8>>, value: &T) -> Result<()> {
        let bytes = encode(value)?;
        self.put(cf, key, &bytes);
        Ok(())
    }

    pub fn delete(&mut self, cf: &'static str, key: impl Into<Vec<u8>>) {
        self.set((cf, key.into()), None);
    }

    fn set(&mut self, k: OpKey, op: Option<Sealed>) {
        if let Some(journal) = &mut self.journal {
            journal.push((k.clone(), self.ops.get(&k).cloned()));
        }
        self.ops.insert(k, op);
    }

    /// Opens a savepoint: the writes from here on can be dropped with [`Batch::rollback`]
    /// (one replicated command refused after some of its steps) or kept with
    /// [`Batch::release`]. Savepoints do not nest; opening one releases the previous.
    pub fn savepoint(&mut self) {
        self.journal = Some(Vec::new());
    }

    /// Keeps the writes made since the savepoint.
    pub fn release(&mut self) {
        self.journal = None;
    }

    /// Drops every write made since the savepoint, restoring what the batch held before.
    pub fn rollback(&mut self) {
        if let Some(journal) = self.journal.take() {
            for (k, before) in journal.into_iter().rev() {
                match before {
                    Some(op) => self.ops.insert(k, op),
                    None => self.ops.remove(&k),
                };
            }
        }
    }

    /// What this batch will do to a key: `Some(Some(v))` put, `Some(None)` delete, `None`
    /// untouched (read the engine).
    pub fn get(&self, cf: &'static str, key: &[u8]) -> Option<Option<&[u8]>> {
        self.ops.get(&(cf, key.to_vec())).map(|op| op.as_ref().map(|(_, plain)| plain.as_slice()))
    }

    pub fn get_t<T: DeserializeOwned>(&self, cf: &'static str, key: &[u8]) -> Option<Result<Option<T>>> {
        self.get(cf, key).map(|v| v.map(decode).transpose())
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Puts and deletes of this batch inside `cf` whose keys start with `prefix`.
    pub fn pending_with_prefix<'a>(
        &'a self,
        cf: &'static str,
        prefix: &'a [u8],
    ) -> impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)> + 'a {
        self.ops
            .range((cf, prefix.to_vec())..)
            .take_while(move |((c, k), _)| *c == cf && k.starts_with(prefix))
            .map(|((_, k), v)| (k.as_slice(), v.as_ref().map(|(_, p)| p.as_slice())))
    }
}
