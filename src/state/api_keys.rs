//! API keys (spec "API key (v4)", api-shapes §8): domain-owned bearer credentials bound to a
//! provider coordinate (`domain_id`, `provider_id`), in the `api_keys` column family. The
//! secret never enters the log: only its keyed hash (HMAC under the cluster index key, label
//! `api-key`) does, indexed so a presented key is found without knowing its `client_id`.
//! Every time is unix seconds, stamped by the service.

use serde::{Deserialize, Serialize};

/// Key layouts of the `api_keys` column family.
pub mod keys {
    pub const RECORD_PREFIX: &[u8] = b"k/";
    pub fn record(client_id: &str) -> Vec<u8> {
        format!("k/{client_id}").into_bytes()
    }
    /// The secret's keyed hash (hex) → `client_id`.
    pub fn by_hash(hash: &str) -> Vec<u8> {
        format!("h/{hash}").into_bytes()
    }
}

/// One API key as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiKey {
    pub client_id: String,
    pub domain_id: String,
    pub provider_id: String,
    pub enabled: bool,
    pub created_at: i64,
    pub expires_at: i64,
    /// CIDR blocks a request must come from; `None`: anywhere.
    pub allowed_ips: Option<Vec<String>>,
    pub description: Option<String>,
    pub last_used_at: Option<i64>,
    /// The revocation tombstone: a revoked key stays disabled for good.
    pub revoked_at: Option<i64>,
    pub revoked_by: Option<String>,
    /// Keyed hash (hex) of the secret.
    pub secret_hash: String,
}

/// A field of an update: absent leaves it, `Some(None)` clears it.
pub type Change<T> = Option<Option<T>>;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ApiKeyCommand {
    /// Stores a new key (its `client_id` and secret hash must be free; the domain must exist).
    Create(Box<ApiKey>),
    /// Changes the named fields of the key of `domain_id`; re-enabling a revoked key is refused
    /// (409).
    Update {
        client_id: String,
        domain_id: String,
        allowed_ips: Change<Vec<String>>,
        description: Change<String>,
        enabled: Option<bool>,
    },
    /// Disables the key and stamps the tombstone (the first revocation's stamp stays).
    Revoke { client_id: String, domain_id: String, by: String, at: i64 },
    /// Notes uses seen by a node since its last report (`client_id`, time); a time never moves
    /// back, and keys gone meanwhile are skipped.
    Used { uses: Vec<(String, i64)> },
    /// Physically deletes up to `limit` keys revoked at or before `revoked_before`: the
    /// tombstones' reclamation (spec, "States and transitions"). Expired keys stay until
    /// revoked, so their owners can still see what expired.
    Reclaim { revoked_before: i64, limit: u32 },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ApiKeyApplied {
    Key(Box<ApiKey>),
    Done,
    /// The `client_id`s a reclamation deleted.
    Reclaimed(Vec<String>),
}
