//! API keys (`state::api_keys`).

use idnode_storage::Result;

use super::reader::Reader;
use crate::state::api_keys::{keys, ApiKey};
use crate::state::cf;

pub trait ApiKeyReads: Reader {
    fn api_key(&self, client_id: &str) -> Result<Option<ApiKey>> {
        self.get(cf::API_KEYS, &keys::record(client_id))
    }

    /// The `client_id` of the key whose secret has keyed hash `hash` (hex).
    fn api_key_id_by_hash(&self, hash: &str) -> Result<Option<String>> {
        self.get(cf::API_KEYS, &keys::by_hash(hash))
    }

    /// Every key, in `client_id` order.
    fn api_keys(&self) -> Result<Vec<ApiKey>> {
        self.scan(cf::API_KEYS, keys::RECORD_PREFIX)
    }
}

impl<R: Reader + ?Sized> ApiKeyReads for R {}
