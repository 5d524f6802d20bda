//! One resource shape for document records (`state::model::Doc`): load, render with links,
//! list with equality filters, and writes through raft. The handlers of policies, endpoint
//! groups, federation records and OAuth1 consumers are a few lines over these.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{json, Value};

use super::error::{ApiError, ApiResult};
use super::fields::{json_obj, Obj};
use super::openapi::{to_json, SelfLink};
use crate::context::Core;
use crate::state::model::{Doc, DocKind, Ref};
use crate::state::{Command, Reader};

/// How one kind of document appears in the API.
pub struct DocApi {
    pub kind: DocKind,
    /// The envelope of one record (`{"policy": {...}}`).
    pub member: &'static str,
    /// The envelope of a list (`{"policies": [...]}`).
    pub collection: &'static str,
    /// The path of a record from its id (for `links.self`).
    pub path: fn(&str) -> String,
}

impl DocApi {
    /// The record, or Keystone's 404.
    pub fn load(&self, node: &Core, id: &str) -> ApiResult<Doc> {
        node.engine.read().doc(self.kind, id)?.ok_or_else(|| ApiError::not_found(self.kind.name(), id))
    }

    /// The record as the API shows it: its body plus `links.self`.
    pub fn render(&self, node: &Core, doc: &Doc) -> Value {
        let mut v = json_obj(&doc.body);
        if let Some(o) = v.as_object_mut() {
            o.insert("links".into(), json!({"self": format!("{}{}", node.cfg.public_base(), (self.path)(&doc.id))}));
        }
        v
    }

    /// `{member: record}`.
    pub fn one(&self, node: &Core, doc: &Doc) -> Value {
        json!({self.member: self.render(node, doc)})
    }

    /// `{collection: [records], links}` for the records whose body fields equal the query's
    /// values for the keys in `filters` (booleans compare with `true`/`false`).
    pub fn list(
        &self,
        node: &Core,
        docs: impl IntoIterator<Item = Doc>,
        q: &HashMap<String, String>,
        filters: &[&str],
        list_path: &str,
    ) -> ApiResult<Value> {
        self.list_as(node, docs, |d| self.render(node, d), q, filters, list_path)
    }

    /// [`DocApi::list`] with each record shown as `show` makes it (a response type).
    pub fn list_as<T: Serialize>(
        &self,
        node: &Core,
        docs: impl IntoIterator<Item = Doc>,
        show: impl Fn(&Doc) -> T,
        q: &HashMap<String, String>,
        filters: &[&str],
        list_path: &str,
    ) -> ApiResult<Value> {
        let items: Vec<Value> = docs
            .into_iter()
            .map(|d| to_json(&show(&d)))
            .filter(|v| filters.iter().all(|f| q.get(*f).is_none_or(|want| matches_query(v.get(*f), want))))
            .collect();
        super::pages::page(self.collection, items, &node.cfg.public_base(), list_path, q)
    }

    /// A record's `links`.
    pub fn links(&self, node: &Core, id: &str) -> SelfLink {
        SelfLink::new(&node.cfg.public_base(), &(self.path)(id))
    }

    /// Creates (`create`) or replaces the record through raft.
    pub async fn save(&self, node: &Core, doc: Doc, create: bool, requires: Vec<Ref>) -> ApiResult<Doc> {
        node.propose_as(Command::PutDoc { doc, create, requires }).await
    }

    /// Merges `changes` (but never `id` or `links`) into the record's body and saves it.
    pub async fn update(&self, node: &Core, mut doc: Doc, changes: Obj) -> ApiResult<Doc> {
        let mut merged = body(&doc);
        merged.extend(changes.into_iter().filter(|(k, _)| k != "id" && k != "links"));
        doc.body = Value::Object(merged).to_string();
        self.save(node, doc, false, vec![]).await
    }

    /// Deletes the record (and what belongs to it) through raft.
    pub async fn delete(&self, node: &Core, id: &str) -> ApiResult<()> {
        node.propose(Command::DeleteDoc { kind: self.kind, id: id.to_string() }).await?;
        Ok(())
    }

    /// A new record of this kind; `body` gets its `id`.
    pub fn doc(&self, id: &str, mut body: Obj) -> Doc {
        body.insert("id".into(), json!(id));
        self.record(id, body)
    }

    /// A new record whose body does not show its id (an association).
    pub fn record(&self, id: &str, body: Obj) -> Doc {
        Doc {
            kind: self.kind,
            id: id.to_string(),
            body: Value::Object(body).to_string(),
            private: "{}".into(),
            unique: Vec::new(),
        }
    }
}

/// A stored field against a query value: strings as they are, booleans and numbers by text.
pub fn matches_query(field: Option<&Value>, want: &str) -> bool {
    match field {
        Some(Value::String(s)) => s == want,
        Some(Value::Bool(b)) => want.eq_ignore_ascii_case(if *b { "true" } else { "false" }) || (*b && want == "1"),
        Some(Value::Number(n)) => n.to_string() == want,
        Some(Value::Null) | None => want.is_empty(),
        Some(_) => false,
    }
}

/// The body of a stored record as an object.
pub fn body(doc: &Doc) -> Obj {
    match json_obj(&doc.body) {
        Value::Object(o) => o,
        _ => Obj::new(),
    }
}
