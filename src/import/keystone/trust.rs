//! OS-TRUST trusts (`trust` with `trust_role`), as the trust feature stores them: one document
//! per trust, by its id. A trust Keystone deleted (it only marks them, until
//! `keystone-manage trust_flush`) does not move.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::db::{Db, SqlRow};
use super::source::Source;
use crate::state::import::ImportRecord;
use crate::state::model::{Doc, DocKind, Ref};

pub async fn read(db: &Db, src: &mut Source) -> anyhow::Result<()> {
    let mut roles: HashMap<String, Vec<String>> = HashMap::new();
    for r in db.rows("trust_role", &["trust_id", "role_id"], "ORDER BY `trust_id`, `role_id`").await? {
        roles.entry(r.text("trust_id")).or_default().push(r.text("role_id"));
    }
    let cols = [
        "id",
        "trustor_user_id",
        "trustee_user_id",
        "project_id",
        "impersonation",
        "deleted_at",
        "expires_at",
        "expires_at_int",
        "remaining_uses",
        "extra",
        "redelegated_trust_id",
        "redelegation_count",
    ];
    for r in db.rows("trust", &cols, "ORDER BY `id`").await? {
        let id = r.text("id");
        let (trustor, trustee) = (r.text("trustor_user_id"), r.text("trustee_user_id"));
        if let Some(at) = r.opt("deleted_at") {
            let label = format!("{id} (from user {trustor} to user {trustee})");
            src.skip("trusts", label, format!("deleted in Keystone at {at} (kept there only until trust_flush)"));
            continue;
        }
        let project_id = r.opt("project_id").filter(|p| !p.is_empty()).map(str::to_string);
        let mut role_ids = roles.remove(&id).unwrap_or_default();
        // The handler keeps them sorted and distinct (by byte order, not the database's collation).
        role_ids.sort();
        role_ids.dedup();
        let body = json!({
            "id": id, "trustor_user_id": trustor, "trustee_user_id": trustee, "project_id": project_id,
            "impersonation": r.flag("impersonation"), "expires_at": expires_at(&r),
            "remaining_uses": r.int("remaining_uses"),
            "redelegated_trust_id": r.opt("redelegated_trust_id"),
            // NULL in trusts older than redelegation: none allowed.
            "redelegation_count": r.int("redelegation_count").unwrap_or(0),
            "role_ids": role_ids, "extra": Value::Object(extra(r.opt("extra"))),
        });
        let mut requires = vec![Ref::User(trustor), Ref::User(trustee)];
        requires.extend(project_id.map(Ref::Project));
        let doc = Doc { kind: DocKind::Trust, id, body: body.to_string(), private: "{}".into(), unique: Vec::new() };
        src.push(ImportRecord::Doc { doc, requires });
    }
    Ok(())
}

/// Keystone reads `expires_at_int` (microseconds) first and the older `DATETIME` column when
/// it is NULL.
fn expires_at(r: &SqlRow) -> Option<i64> {
    r.int("expires_at_int").or_else(|| r.micros("expires_at"))
}

/// The attributes a client gave beyond the trust's own, shown as top-level properties.
/// Keystone's `extra` column also holds the `roles` it was created with (its model keeps
/// every key that is not a column there); the handler keeps none of the keys its request body
/// names, so those are dropped.
fn extra(raw: Option<&str>) -> Map<String, Value> {
    const NAMED: [&str; 11] = [
        "trustor_user_id",
        "trustee_user_id",
        "impersonation",
        "project_id",
        "roles",
        "expires_at",
        "remaining_uses",
        "allow_redelegation",
        "redelegation_count",
        "redelegated_trust_id",
        "id",
    ];
    match raw.and_then(|t| serde_json::from_str(t).ok()) {
        Some(Value::Object(mut o)) => {
            o.retain(|k, _| !NAMED.contains(&k.as_str()));
            o
        }
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_drops_keystones_roles() {
        let raw = r#"{"roles": [{"id": "r1"}], "note": "ci", "allow_redelegation": true}"#;
        assert_eq!(Value::Object(extra(Some(raw))), json!({"note": "ci"}));
        assert!(extra(Some("null")).is_empty());
        assert!(extra(Some("[1]")).is_empty());
        assert!(extra(None).is_empty());
    }
}
