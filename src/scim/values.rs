//! Reading attribute values out of SCIM bodies, with the 400 `invalidValue` every resource
//! answers for a wrong one.

use serde_json::Value;

use super::wire::{ScimError, ScimResult};

/// Longest text attribute (`userName`, `displayName`, `externalId`, name parts, email).
pub const MAX_TEXT: usize = 255;

/// A text attribute: a non-empty string of at most [`MAX_TEXT`] characters; when not
/// `required`, `null` or a blank string reads as absent.
pub fn text(name: &str, v: &Value, required: bool) -> ScimResult<Option<String>> {
    match v {
        Value::String(s) if !s.trim().is_empty() && s.chars().count() <= MAX_TEXT => Ok(Some(s.clone())),
        Value::Null => {
            if required {
                Err(ScimError::bad("invalidValue", format!("{name} is required.")))
            } else {
                Ok(None)
            }
        }
        Value::String(s) if s.trim().is_empty() && !required => Ok(None),
        _ => Err(ScimError::bad(
            "invalidValue",
            format!("{name} takes a non-empty string of at most {MAX_TEXT} characters."),
        )),
    }
}

/// A boolean; `"true"`/`"false"` strings are taken too (some directories send them).
pub fn boolean(name: &str, v: &Value) -> ScimResult<bool> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(false),
        _ => Err(ScimError::bad("invalidValue", format!("{name} takes a boolean."))),
    }
}

/// A resource body must name its core schema (api-shapes §11.2).
pub fn require_schema(body: &Value, urn: &str) -> ScimResult<()> {
    if body["schemas"].as_array().is_some_and(|s| s.iter().any(|u| u.as_str() == Some(urn))) {
        Ok(())
    } else {
        Err(ScimError::bad("invalidValue", format!("The body's schemas must contain {urn}.")))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn texts_booleans_and_schemas() {
        assert_eq!(text("a", &json!("x"), true).unwrap(), Some("x".into()));
        assert_eq!(text("a", &json!(null), false).unwrap(), None);
        assert_eq!(text("a", &json!(" "), false).unwrap(), None);
        assert_eq!(text("a", &json!(null), true).unwrap_err().scim_type, Some("invalidValue"));
        assert!(text("a", &json!(" "), true).is_err());
        assert!(text("a", &json!("x".repeat(256)), false).is_err());
        assert!(text("a", &json!(3), false).is_err());
        assert!(!boolean("active", &json!("False")).unwrap());
        assert!(boolean("active", &json!(true)).unwrap());
        assert!(boolean("active", &json!(1)).is_err());
        assert!(require_schema(&json!({"schemas": ["u"]}), "u").is_ok());
        assert!(require_schema(&json!({}), "u").is_err());
    }
}
