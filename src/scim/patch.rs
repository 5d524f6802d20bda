//! SCIM PATCH bodies (RFC 7644 §3.5.2, narrowed by the spec): `{schemas: [PatchOp],
//! Operations: [{op, path?, value?}]}` with `op` one of add / replace / remove (any case).
//! Paths are plain attribute names (optionally prefixed with the resource's schema URN); a
//! filtered or indexed path (`emails[type eq "work"]`, `members[value eq "…"]`) is refused
//! with 400 `invalidPath`, and so is an empty `Operations`. Each resource turns the operations
//! into the fields of its write (`users::patch_fields`, `groups::patch_fields`).

use serde_json::Value;

use super::wire::{ScimError, ScimResult, PATCH_URN};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Add,
    Replace,
    Remove,
}

/// One operation with its path lower-cased (`None`: the value is an object of attributes).
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    pub kind: OpKind,
    pub path: Option<String>,
    pub value: Option<Value>,
}

/// Most operations one PATCH may carry.
const MAX_OPERATIONS: usize = 1000;

pub fn parse(body: &Value, schema_urn: &str) -> ScimResult<Vec<Op>> {
    let schemas_ok = body["schemas"].as_array().is_some_and(|s| s.iter().any(|u| u.as_str() == Some(PATCH_URN)));
    if !schemas_ok {
        return Err(ScimError::bad("invalidValue", format!("A PATCH body's schemas must contain {PATCH_URN}.")));
    }
    let ops = body.get("Operations").or_else(|| body.get("operations")).and_then(Value::as_array);
    let ops = match ops {
        Some(o) if !o.is_empty() => o,
        _ => return Err(ScimError::bad("invalidPath", "A PATCH body needs at least one operation in Operations.")),
    };
    if ops.len() > MAX_OPERATIONS {
        return Err(ScimError::bad("tooMany", format!("At most {MAX_OPERATIONS} operations per PATCH.")));
    }
    ops.iter().map(|o| op(o, schema_urn)).collect()
}

fn op(o: &Value, schema_urn: &str) -> ScimResult<Op> {
    let kind = match o["op"].as_str().map(str::to_ascii_lowercase).as_deref() {
        Some("add") => OpKind::Add,
        Some("replace") => OpKind::Replace,
        Some("remove") => OpKind::Remove,
        _ => return Err(ScimError::bad("invalidSyntax", "Each operation's op is add, replace or remove.")),
    };
    let path = match o.get("path") {
        None | Some(Value::Null) => None,
        Some(Value::String(p)) => Some(normalize(p, schema_urn)?),
        Some(_) => return Err(ScimError::bad("invalidPath", "An operation's path is a string.")),
    };
    let value = o.get("value").filter(|v| !v.is_null()).cloned();
    match (kind, &path, &value) {
        (OpKind::Remove, None, _) => Err(ScimError::bad("noTarget", "A remove operation needs a path.")),
        (OpKind::Add | OpKind::Replace, None, Some(v)) if !v.is_object() => {
            Err(ScimError::bad("invalidValue", "Without a path, an operation's value is an object of attributes."))
        }
        (OpKind::Add | OpKind::Replace, _, None) => {
            Err(ScimError::bad("invalidValue", "An add or replace operation needs a value."))
        }
        _ => Ok(Op { kind, path, value }),
    }
}

/// The path, lower-cased, without its schema URN; filters and indexes refused.
fn normalize(path: &str, schema_urn: &str) -> ScimResult<String> {
    let p = path.trim();
    let p = match p.get(..schema_urn.len()) {
        Some(head) if head.eq_ignore_ascii_case(schema_urn) => p[schema_urn.len()..].trim_start_matches(':'),
        _ => p,
    };
    if p.is_empty() || p.contains(['[', ']', ' ', '"']) {
        return Err(ScimError::bad("invalidPath", format!("The PATCH path {path:?} is not supported.")));
    }
    Ok(p.to_ascii_lowercase())
}

/// An attribute a PATCH may not touch (`id`, `meta`, `schemas`): 400 `mutability`;
/// anything else not on the resource's list: 400 `invalidPath`.
pub fn refused_path(path: &str) -> ScimError {
    if path == "id" || path == "schemas" || path == "meta" || path.starts_with("meta.") {
        ScimError::bad("mutability", format!("The attribute {path:?} cannot be modified."))
    } else {
        ScimError::bad("invalidPath", format!("The PATCH path {path:?} is not supported."))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::scim::wire::USER_URN;

    fn body(ops: Value) -> Value {
        json!({"schemas": [PATCH_URN], "Operations": ops})
    }

    fn refusal(b: Value) -> &'static str {
        parse(&b, USER_URN).err().and_then(|e| e.scim_type).unwrap_or("accepted")
    }

    #[test]
    fn operations_parse_with_any_case_and_schema_prefixed_paths() {
        let ops = parse(
            &body(json!([{"op": "Replace", "path": "urn:ietf:params:scim:schemas:core:2.0:User:name.givenName", "value": "B"},
                         {"op": "add", "value": {"active": false}},
                         {"op": "REMOVE", "path": "displayName"}])),
            USER_URN,
        )
        .unwrap();
        assert_eq!(ops[0], Op { kind: OpKind::Replace, path: Some("name.givenname".into()), value: Some(json!("B")) });
        assert_eq!(ops[1].path, None);
        assert_eq!(ops[2], Op { kind: OpKind::Remove, path: Some("displayname".into()), value: None });
    }

    #[test]
    fn filtered_paths_empty_operations_and_bad_bodies_are_refused() {
        assert_eq!(
            refusal(body(json!([{"op": "replace", "path": "emails[type eq \"work\"].value", "value": "x"}]))),
            "invalidPath"
        );
        assert_eq!(refusal(body(json!([{"op": "remove", "path": "members[value eq \"u1\"]"}]))), "invalidPath");
        assert_eq!(refusal(body(json!([]))), "invalidPath");
        assert_eq!(refusal(json!({"Operations": [{"op": "add", "path": "active", "value": true}]})), "invalidValue");
        assert_eq!(refusal(body(json!([{"op": "move", "path": "active", "value": true}]))), "invalidSyntax");
        assert_eq!(refusal(body(json!([{"op": "remove"}]))), "noTarget");
        assert_eq!(refusal(body(json!([{"op": "add", "value": "x"}]))), "invalidValue");
        assert_eq!(refusal(body(json!([{"op": "replace", "path": "active"}]))), "invalidValue");
        assert_eq!(refused_path("id").scim_type, Some("mutability"));
        assert_eq!(refused_path("meta.created").scim_type, Some("mutability"));
        assert_eq!(refused_path("phonenumbers").scim_type, Some("invalidPath"));
    }
}
