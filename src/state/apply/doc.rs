//! Document records (`model::Doc`): the invariants every kind shares. Ids are unique per
//! kind, values in `unique` are unique per kind, references exist, deleting a record deletes
//! the records that belong to it.

use super::super::cf;
use super::super::command::{not_found, Applied, ApplyError, ApplyResult};
use super::super::keys;
use super::super::model::{Doc, DocKind, Ref};
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::fatal::Fatal;

fn ref_kind(r: &Ref) -> (&'static str, &str) {
    match r {
        Ref::Doc(kind, id) => (kind.name(), id),
        Ref::Domain(id) => ("domain", id),
        Ref::Project(id) => ("project", id),
        Ref::Endpoint(id) => ("endpoint", id),
        Ref::User(id) => ("user", id),
        Ref::Role(id) => ("role", id),
        Ref::Service(id) => ("service", id),
        Ref::Region(id) => ("region", id),
    }
}

pub fn put(tx: &mut Tx<'_>, doc: Doc, create: bool, requires: &[Ref]) -> Result<ApplyResult, Fatal> {
    let before = tx.doc(doc.kind, &doc.id)?;
    match (&before, create) {
        (Some(_), true) => {
            return Ok(Err(ApplyError::Conflict(format!(
                "Conflict occurred attempting to store {} - Duplicate ID, {}.",
                doc.kind.name(),
                doc.id
            ))))
        }
        (None, false) => return Ok(Err(not_found(doc.kind.name(), &doc.id))),
        _ => {}
    }
    for r in requires {
        if !tx.exists(r)? {
            let (kind, id) = ref_kind(r);
            return Ok(Err(not_found(kind, id)));
        }
    }
    let ns = keys::doc_unique_ns(doc.kind);
    for value in &doc.unique {
        if let Some(holder) = tx.id_by_name(&ns, "", value)? {
            if holder != doc.id {
                return Ok(Err(ApplyError::Conflict(format!(
                    "Conflict occurred attempting to store {} - Duplicate entry: {value} is already used by {holder}.",
                    doc.kind.name()
                ))));
            }
        }
    }
    if let Some(old) = &before {
        for value in old.unique.iter().filter(|v| !doc.unique.contains(v)) {
            tx.delete_name(&ns, "", value);
        }
    }
    for value in &doc.unique {
        tx.put_name(&ns, "", value, &doc.id);
    }
    tx.put(cf::DOCS, keys::doc(doc.kind, &doc.id), &doc)?;
    Ok(Ok(Applied::Doc(doc)))
}

pub fn delete(tx: &mut Tx<'_>, kind: DocKind, id: &str) -> Result<ApplyResult, Fatal> {
    let Some(doc) = tx.doc(kind, id)? else {
        return Ok(Err(not_found(kind.name(), id)));
    };
    remove(tx, &doc)?;
    Ok(Ok(Applied::Done))
}

pub(super) fn remove(tx: &mut Tx<'_>, doc: &Doc) -> Result<(), Fatal> {
    for child_kind in doc.kind.children() {
        for child in tx.child_docs(*child_kind, &doc.id)? {
            remove(tx, &child)?;
        }
    }
    for (kind, field) in doc.kind.referrers() {
        for other in tx.docs(*kind)? {
            let named: serde_json::Value = serde_json::from_str(&other.body).unwrap_or_default();
            if named.get(field).and_then(serde_json::Value::as_str) == Some(doc.id.as_str()) {
                remove(tx, &other)?;
            }
        }
    }
    let ns = keys::doc_unique_ns(doc.kind);
    for value in &doc.unique {
        tx.delete_name(&ns, "", value);
    }
    tx.delete(cf::DOCS, keys::doc(doc.kind, &doc.id));
    Ok(())
}

/// Deletes every record of `kind` that belongs to `parent` (ids `{parent}/...`).
pub fn remove_children(tx: &mut Tx<'_>, kind: DocKind, parent: &str) -> Result<(), Fatal> {
    for child in tx.child_docs(kind, parent)? {
        remove(tx, &child)?;
    }
    Ok(())
}

/// Takes one use of a trust whose uses are counted (`remaining_uses` in its body).
pub fn use_trust(tx: &mut Tx<'_>, id: &str) -> Result<ApplyResult, Fatal> {
    let Some(mut doc) = tx.doc(DocKind::Trust, id)? else {
        return Ok(Err(not_found("trust", id)));
    };
    let mut body: serde_json::Value = serde_json::from_str(&doc.body).unwrap_or_default();
    match body.get("remaining_uses").and_then(serde_json::Value::as_i64) {
        None => return Ok(Ok(Applied::Done)),
        Some(n) if n <= 0 => return Ok(Err(not_found("trust", id))),
        Some(n) => body["remaining_uses"] = serde_json::json!(n - 1),
    }
    doc.body = body.to_string();
    tx.put(cf::DOCS, keys::doc(DocKind::Trust, id), &doc)?;
    Ok(Ok(Applied::Done))
}

/// Deletes the trusts a user gives or holds.
pub fn remove_trusts_of(tx: &mut Tx<'_>, user_id: &str) -> Result<(), Fatal> {
    for doc in tx.docs(DocKind::Trust)? {
        let body: serde_json::Value = serde_json::from_str(&doc.body).unwrap_or_default();
        let party = |k: &str| body.get(k).and_then(serde_json::Value::as_str) == Some(user_id);
        if party("trustor_user_id") || party("trustee_user_id") {
            remove(tx, &doc)?;
        }
    }
    Ok(())
}
