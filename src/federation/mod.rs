//! OS-FEDERATION's v3 registries: identity providers with their protocols, mappings and
//! service providers, kept as document records and checked with Keystone's schemas and
//! messages (`keystone/federation/schema.py`).

pub mod identity_providers;
pub mod mapping_rules;
pub mod mappings;
pub mod protocols;
pub mod schemas;
pub mod service_providers;

use serde_json::Value;

use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::Obj;

/// Keystone's validation message: `Invalid input for field/attribute F. Value: V. WHY`.
pub(crate) fn invalid(field: &str, value: &Value, why: &str) -> ApiError {
    let shown = match value {
        Value::String(s) => s.chars().take(64).collect(),
        other => other.to_string().chars().take(128).collect::<String>(),
    };
    ApiError::bad_request(format!("Invalid input for field/attribute {field}. Value: {shown}. {why}"))
}

/// `additionalProperties: false` (and `minProperties: 1` when `non_empty`).
pub(crate) fn only_keys(o: &Obj, allowed: &[&str], envelope: &str, non_empty: bool) -> ApiResult<()> {
    let whole = Value::Object(o.clone());
    if let Some(k) = o.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(invalid(
            envelope,
            &whole,
            &format!("Additional properties are not allowed ('{k}' was unexpected)"),
        ));
    }
    if non_empty && o.is_empty() {
        return Err(invalid(envelope, &whole, "{} should be non-empty"));
    }
    Ok(())
}

/// The object under `key`, or `{}` when the body is absent and `required` is false.
pub(crate) fn member_ref(body: &Value, key: &str, required: bool) -> ApiResult<Obj> {
    match body {
        Value::Null if !required => Ok(Obj::new()),
        Value::Object(top) => {
            if let Some(k) = top.keys().find(|k| *k != key) {
                return Err(ApiError::bad_request(format!(
                    "Additional properties are not allowed ('{k}' was unexpected)"
                )));
            }
            match top.get(key) {
                Some(Value::Object(o)) => Ok(o.clone()),
                None if !required => Ok(Obj::new()),
                None => Err(ApiError::bad_request(format!("'{key}' is a required property"))),
                Some(v) => Err(invalid(key, v, &format!("{v} is not of type 'object'"))),
            }
        }
        _ => Err(ApiError::bad_request(format!("'{key}' is a required property"))),
    }
}

/// Keystone's lenient boolean (`true`, `"yes"`, `"0"`, ...).
pub(crate) fn bool_like(o: &Obj, key: &str) -> ApiResult<Option<bool>> {
    match o.get(key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) => match bool_word(s) {
            Some(b) => Ok(Some(b)),
            None => Err(invalid(key, &o[key], &format!("'{s}' is not a valid boolean"))),
        },
        Some(v) => Err(invalid(key, v, &format!("{v} is not a valid boolean"))),
    }
}

/// The words Keystone's boolean reads.
fn bool_word(s: &str) -> Option<bool> {
    match s {
        "True" | "TRUE" | "true" | "1" | "y" | "Y" | "on" | "ON" | "yes" => Some(true),
        "False" | "FALSE" | "false" | "" | "0" | "n" | "N" | "off" | "OFF" | "no" => Some(false),
        _ => None,
    }
}

/// For typed bodies: a field read as [`bool_like`] reads it (present means `Some`).
pub(crate) fn de_bool_like<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    use serde::de::Error;
    match <Value as serde::Deserialize>::deserialize(d)? {
        Value::Bool(b) => Ok(Some(b)),
        Value::String(s) => bool_word(&s).map(Some).ok_or_else(|| D::Error::custom("not a valid boolean")),
        _ => Err(D::Error::custom("not a valid boolean")),
    }
}

/// A string or null of at most `max` characters.
pub(crate) fn str_or_null(o: &Obj, key: &str, max: usize) -> ApiResult<Option<Option<String>>> {
    match o.get(key) {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(None)),
        Some(Value::String(s)) if s.chars().count() <= max => Ok(Some(Some(s.clone()))),
        Some(v) => Err(invalid(key, v, &format!("must be a string of at most {max} characters or null"))),
    }
}

/// Keystone's URL rule for service provider URLs: `^[a-zA-Z0-9+.-]+:.+`, at most 225.
pub(crate) fn check_url(o: &Obj, key: &str) -> ApiResult<()> {
    let Some(v) = o.get(key) else { return Ok(()) };
    let ok = v.as_str().is_some_and(|s| {
        s.chars().count() <= 225
            && s.split_once(':').is_some_and(|(scheme, rest)| {
                !scheme.is_empty()
                    && !rest.is_empty()
                    && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'))
            })
    });
    if ok {
        Ok(())
    } else {
        Err(invalid(key, v, &format!("{v} does not match '^[a-zA-Z0-9+.-]+:.+'")))
    }
}

/// Ids chosen by the client in the path: 1 to 255 characters without `/`.
pub(crate) fn check_path_id(id: &str, what: &str) -> ApiResult<()> {
    if id.is_empty() || id.chars().count() > 255 || id.contains('/') {
        return Err(ApiError::bad_request(format!("Invalid {what} id: it must have 1 to 255 characters and no '/'.")));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
