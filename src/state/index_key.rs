//! The cluster's index key in the replicated state (`meta/index_key`). Every replica hashes
//! index terms (unique names, membership indexes) with this one key, so the entries that
//! apply reads and writes are the same bytes on every node, whether it applied the log or
//! installed a snapshot. The engine caches its hasher; the state stays the authority.

use std::sync::Arc;

use idnode_keys::{IndexHasher, IndexKey};
use idnode_storage::{Batch, Engine, Result, StorageError};

use super::{cf, keys};

/// The key as the committed state holds it.
pub fn stored(engine: &Engine) -> Result<Option<IndexKey>> {
    match engine.read().get(cf::META, keys::META_INDEX_KEY)? {
        Some(raw) => IndexKey::from_bytes(&raw)
            .map(Some)
            .map_err(|source| StorageError::Unseal { cf: cf::META.to_string(), source }),
        None => Ok(None),
    }
}

/// The hasher for the committed state's key, from the engine's cache or (once) the state.
pub fn hasher(engine: &Engine) -> Result<Option<Arc<IndexHasher>>> {
    if let Some(h) = engine.index_hasher() {
        return Ok(Some(h));
    }
    let Some(key) = stored(engine)? else { return Ok(None) };
    engine.set_index_key(Some(&key));
    Ok(engine.index_hasher())
}

/// Stages the key in `batch` (bootstrap, and test worlds that skip bootstrap).
pub fn put(batch: &mut Batch, key: &IndexKey) {
    batch.put(cf::META, keys::META_INDEX_KEY.to_vec(), key.as_bytes());
}

/// Forgets the cached hasher (after a snapshot install replaced the state).
pub fn forget(engine: &Engine) {
    engine.set_index_key(None);
}
