//! OS-OAUTH1 tokens as stored: the OAuth1 feature writes them, token validation reads an
//! access token behind a token Keystone issued for it before the move.

use serde::{Deserialize, Serialize};

use crate::http::fields::parse_iso_time;
use crate::state::keys::doc_unique_ns;
use crate::state::model::{Doc, DocKind};
use crate::state::Reader;

/// An access token: what the consumer got for an authorized request token.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AccessToken {
    pub id: String,
    pub consumer_id: String,
    pub project_id: String,
    pub authorizing_user_id: String,
    pub expires_at: Option<String>,
    pub role_ids: Vec<String>,
}

impl AccessToken {
    pub fn parse(doc: &Doc) -> serde_json::Result<AccessToken> {
        serde_json::from_str(&doc.body)
    }
}

/// The index value a token record is found by.
pub fn id_term(id: &str) -> String {
    format!("id:{id}")
}

/// A token record of `kind` (request or access token) by the token's own id.
pub fn find(r: &impl Reader, kind: DocKind, id: &str) -> idnode_storage::Result<Option<Doc>> {
    match r.id_by_name(&doc_unique_ns(kind), "", &id_term(id))? {
        Some(doc_id) => r.doc(kind, &doc_id),
        None => Ok(None),
    }
}

/// Whether a token's `expires_at` (Keystone's text form; none: never) has passed.
pub fn expired(expires_at: Option<&str>, now_micros: i64) -> bool {
    expires_at.is_some_and(|t| parse_iso_time(t).is_none_or(|at| now_micros > at))
}
