//! A stored trust (OS-TRUST) as its document body holds it: the trust feature writes and
//! renders it, token validation checks it.

use serde::Deserialize;
use serde_json::Value;

use crate::state::model::Doc;

/// A stored trust as its document body holds it.
#[derive(Debug, Clone, Deserialize)]
pub struct Trust {
    pub id: String,
    pub trustor_user_id: String,
    pub trustee_user_id: String,
    pub project_id: Option<String>,
    pub impersonation: bool,
    /// Unix microseconds.
    pub expires_at: Option<i64>,
    pub remaining_uses: Option<i64>,
    pub redelegated_trust_id: Option<String>,
    pub redelegation_count: i64,
    pub role_ids: Vec<String>,
    #[serde(default)]
    pub extra: serde_json::Map<String, Value>,
}

impl Trust {
    /// The trust a document holds (the trust feature's `Trust::of` answers 500 on a bad one).
    pub fn parse(doc: &Doc) -> serde_json::Result<Trust> {
        serde_json::from_str(&doc.body)
    }

    /// Whether it can still be used at `now` (Keystone hides trusts that cannot).
    pub fn usable(&self, now: i64) -> bool {
        self.expires_at.is_none_or(|t| now < t) && self.remaining_uses.is_none_or(|n| n > 0)
    }
}
