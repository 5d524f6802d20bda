use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::{Result, StorageError};

/// postcard encoding of a stored value (compact, stable, not self-describing: schema changes
/// go through versioned types, never in-place field edits).
pub fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    postcard::to_allocvec(value).map_err(|e| StorageError::Codec(e.to_string()))
}

pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    postcard::from_bytes(bytes).map_err(|e| StorageError::Codec(e.to_string()))
}

/// The associated data that binds a sealed value to where it is stored.
pub(crate) fn value_ad(cf: &str, key: &[u8]) -> Vec<u8> {
    let mut ad = Vec::with_capacity(cf.len() + 1 + key.len());
    ad.extend_from_slice(cf.as_bytes());
    ad.push(0);
    ad.extend_from_slice(key);
    ad
}
