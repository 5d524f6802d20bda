//! OpenFGA's HTTP bodies, as its published API description (openfga/api,
//! `docs/openapiv2/apidocs.swagger.json`) gives them: only the fields the driver sends or reads.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::tuples::Tuple;

/// Reads, checks and listings ask for the store's latest writes: a grant made through one node
/// is seen by the next request on any node, whatever the store caches.
pub const CONSISTENCY: &str = "HIGHER_CONSISTENCY";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TupleKey {
    pub user: String,
    pub relation: String,
    pub object: String,
}

impl From<&Tuple> for TupleKey {
    fn from(t: &Tuple) -> Self {
        TupleKey { user: t.user.clone(), relation: t.relation.clone(), object: t.object.clone() }
    }
}

impl From<TupleKey> for Tuple {
    fn from(k: TupleKey) -> Self {
        Tuple { user: k.user, relation: k.relation, object: k.object }
    }
}

#[derive(Serialize)]
pub struct CheckRequest<'a> {
    pub tuple_key: TupleKey,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authorization_model_id: Option<&'a str>,
    pub consistency: &'static str,
}

#[derive(Deserialize)]
pub struct CheckResponse {
    #[serde(default)]
    pub allowed: bool,
}

#[derive(Serialize)]
pub struct BatchCheckItem {
    pub tuple_key: TupleKey,
    pub correlation_id: String,
}

#[derive(Serialize)]
pub struct BatchCheckRequest<'a> {
    pub checks: Vec<BatchCheckItem>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authorization_model_id: Option<&'a str>,
    pub consistency: &'static str,
}

#[derive(Deserialize)]
pub struct BatchCheckResponse {
    #[serde(default)]
    pub result: HashMap<String, BatchCheckSingleResult>,
}

#[derive(Deserialize)]
pub struct BatchCheckSingleResult {
    #[serde(default)]
    pub allowed: bool,
    #[serde(default)]
    pub error: Option<serde_json::Value>,
}

/// A read filter: any of the three may be left out (the object may be a bare `type:`).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ReadKey {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relation: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
}

#[derive(Serialize)]
pub struct ReadRequest<'a> {
    pub tuple_key: &'a ReadKey,
    pub page_size: u32,
    #[serde(skip_serializing_if = "str::is_empty")]
    pub continuation_token: &'a str,
    pub consistency: &'static str,
}

#[derive(Deserialize)]
pub struct ReadResponse {
    #[serde(default)]
    pub tuples: Vec<StoredTuple>,
    #[serde(default)]
    pub continuation_token: String,
}

#[derive(Deserialize)]
pub struct StoredTuple {
    pub key: TupleKey,
}

#[derive(Serialize)]
pub struct ListObjectsRequest<'a> {
    #[serde(rename = "type")]
    pub object_type: &'a str,
    pub relation: &'a str,
    pub user: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authorization_model_id: Option<&'a str>,
    pub consistency: &'static str,
}

/// One line of the streamed listing: an object, or the error that ended the stream.
#[derive(Deserialize)]
pub struct StreamLine {
    #[serde(default)]
    pub result: Option<StreamedObject>,
    #[serde(default)]
    pub error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
pub struct StreamedObject {
    pub object: String,
}

#[derive(Serialize)]
pub struct WriteRequest<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writes: Option<Writes>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletes: Option<Deletes>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub authorization_model_id: Option<&'a str>,
}

#[derive(Serialize)]
pub struct Writes {
    pub tuple_keys: Vec<TupleKey>,
    /// A grant that is already there is no error (Keystone's grant is idempotent).
    pub on_duplicate: &'static str,
}

#[derive(Serialize)]
pub struct Deletes {
    pub tuple_keys: Vec<TupleKey>,
    pub on_missing: &'static str,
}

/// The store's error body (`code`, `message`): the message is what a refusal reports.
#[derive(Deserialize, Default)]
pub struct ErrorBody {
    #[serde(default)]
    pub message: String,
}
