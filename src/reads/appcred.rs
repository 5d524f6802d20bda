//! A stored application credential as its document body holds it, found by its id alone:
//! the appcred feature writes and renders it, authentication and token validation read it.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::state::keys::doc_unique_ns;
use crate::state::model::{Doc, DocKind};
use crate::state::Reader;

/// A stored credential as its document body holds it.
#[derive(Debug, Clone, Deserialize)]
pub struct AppCred {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    pub user_id: String,
    pub project_id: String,
    /// Unix microseconds.
    pub expires_at: Option<i64>,
    pub unrestricted: Option<bool>,
    pub role_ids: Vec<String>,
    pub access_rule_ids: Vec<String>,
}

impl AppCred {
    /// The credential a document holds (the feature's `AppCred::of` answers 500 on a bad one).
    pub fn parse(doc: &Doc) -> serde_json::Result<AppCred> {
        serde_json::from_str(&doc.body)
    }

    pub fn expired(&self, now: i64) -> bool {
        self.expires_at.is_some_and(|t| now >= t)
    }
}

/// The names-index value a credential id is found by.
pub fn id_term(id: &str) -> String {
    format!("id:{id}")
}

/// A credential by its id alone (authentication, token validation).
pub fn find(r: &impl Reader, id: &str) -> idnode_storage::Result<Option<Doc>> {
    match r.id_by_name(&doc_unique_ns(DocKind::ApplicationCredential), "", &id_term(id))? {
        Some(doc_id) => r.doc(DocKind::ApplicationCredential, &doc_id),
        None => Ok(None),
    }
}

/// A user's access rule as the API shows it inside a credential.
pub fn rule_json(r: &Value) -> Value {
    json!({"id": r.get("id"), "service": r.get("service"), "path": r.get("path"), "method": r.get("method")})
}
