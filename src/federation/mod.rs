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

use crate::http::body::{Kept, Sent};
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::Obj;
use crate::state::keys::ns;
use crate::state::Reader;

/// Keystone's validation message: `Invalid input for field/attribute F. Value: V. WHY`.
pub(crate) fn invalid(field: &str, value: &Value, why: &str) -> ApiError {
    let shown = match value {
        Value::String(s) => s.chars().take(64).collect(),
        other => other.to_string().chars().take(128).collect::<String>(),
    };
    ApiError::bad_request(format!("Invalid input for field/attribute {field}. Value: {shown}. {why}"))
}

/// The role ids a delegation's body (a trust's, an application credential's) names in `roles`,
/// in order: each role an object with exactly one of `id` or `name` (an unknown name is 404).
pub(crate) fn named_role_ids(view: &impl Reader, roles: &[Value]) -> ApiResult<Vec<String>> {
    let mut ids = Vec::new();
    for r in roles {
        let o = r
            .as_object()
            .filter(|o| o.len() == 1)
            .ok_or_else(|| invalid("roles", r, "each role must be an object with exactly one of 'id' or 'name'"))?;
        match (o.get("id").and_then(Value::as_str), o.get("name").and_then(Value::as_str)) {
            (Some(id), _) => ids.push(id.to_string()),
            (None, Some(name)) => match view.id_by_name(ns::ROLE_NAME, "", name)? {
                Some(id) => ids.push(id),
                None => return Err(ApiError::not_found_msg(format!("Role {name} is not defined"))),
            },
            _ => return Err(invalid("roles", r, "each role must have an 'id' or a 'name'")),
        }
    }
    Ok(ids)
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

/// The member under `key` of a body Keystone's schema allows nothing else in (`top`: the body,
/// `member` reads the member off it), holding only `allowed` properties (one at least when
/// `non_empty`). The federation bodies refuse unknown properties, so an object that has one is
/// `Wrong`; an absent member (or body) that is not `required` is the default.
pub(crate) fn member<R, T: Default>(
    top: Sent<R>,
    member: impl FnOnce(R) -> Sent<Kept<T>>,
    key: &str,
    required: bool,
    (allowed, non_empty): (&[&str], bool),
) -> ApiResult<Kept<T>> {
    let missing = || ApiError::bad_request(format!("'{key}' is a required property"));
    let sent = match top {
        Sent::Is(r) => member(r),
        Sent::Absent if !required => Sent::Absent,
        Sent::Wrong(Value::Object(o)) => {
            let k = o.keys().find(|k| *k != key).cloned().unwrap_or_default();
            return Err(ApiError::bad_request(format!("Additional properties are not allowed ('{k}' was unexpected)")));
        }
        _ => return Err(missing()),
    };
    let body = match sent {
        Sent::Is(b) => b,
        Sent::Absent if !required => Kept::default(),
        Sent::Absent => return Err(missing()),
        Sent::Wrong(Value::Object(o)) => {
            return Err(only_keys(&o, allowed, key, non_empty).err().unwrap_or_else(missing));
        }
        wrong => {
            let v = wrong.unread().unwrap_or_default();
            return Err(invalid(key, &v, &format!("{v} is not of type 'object'")));
        }
    };
    only_keys(&body.sent, allowed, key, non_empty)?;
    Ok(body)
}

/// Keystone's lenient boolean (`true`, `"yes"`, `"0"`, ...).
pub(crate) fn bool_like(sent: &Sent<bool>, key: &str) -> ApiResult<Option<bool>> {
    match sent {
        Sent::Absent => Ok(None),
        Sent::Is(b) => Ok(Some(*b)),
        Sent::Wrong(v @ Value::String(s)) => match bool_word(s) {
            Some(b) => Ok(Some(b)),
            None => Err(invalid(key, v, &format!("'{s}' is not a valid boolean"))),
        },
        other => {
            let v = other.unread().unwrap_or_default();
            Err(invalid(key, &v, &format!("{v} is not a valid boolean")))
        }
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

/// A string or null of at most `max` characters; `Some(None)` for null.
pub(crate) fn str_or_null(sent: &Sent<String>, key: &str, max: usize) -> ApiResult<Option<Option<String>>> {
    match sent {
        Sent::Absent => Ok(None),
        Sent::Null => Ok(Some(None)),
        Sent::Is(s) if s.chars().count() <= max => Ok(Some(Some(s.clone()))),
        other => Err(invalid(
            key,
            &other.value().unwrap_or_default(),
            &format!("must be a string of at most {max} characters or null"),
        )),
    }
}

/// Keystone's URL rule for service provider URLs: `^[a-zA-Z0-9+.-]+:.+`, at most 225.
pub(crate) fn check_url(sent: &Sent<String>, key: &str) -> ApiResult<Option<String>> {
    let Some(v) = sent.value() else { return Ok(None) };
    let ok = v.as_str().is_some_and(|s| {
        s.chars().count() <= 225
            && s.split_once(':').is_some_and(|(scheme, rest)| {
                !scheme.is_empty()
                    && !rest.is_empty()
                    && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'))
            })
    });
    match v {
        Value::String(s) if ok => Ok(Some(s)),
        v => Err(invalid(key, &v, &format!("{v} does not match '^[a-zA-Z0-9+.-]+:.+'"))),
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
