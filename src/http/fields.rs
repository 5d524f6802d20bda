//! Field access for untyped JSON objects (Keystone's messages; typed bodies read theirs with
//! [`super::body::Sent`]), and the `extra` attributes clients may add.

use serde_json::{Map, Value};

use super::error::ApiError;

pub type Obj = Map<String, Value>;

fn invalid(key: &str, why: &str) -> ApiError {
    ApiError::bad_request(format!("Invalid input for field '{key}': {why}."))
}

pub fn opt_str(o: &Obj, key: &str, max: usize) -> Result<Option<String>, ApiError> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.chars().count() <= max => Ok(Some(s.clone())),
        Some(Value::String(_)) => Err(invalid(key, &format!("is too long (at most {max} characters)"))),
        Some(_) => Err(invalid(key, "must be a string")),
    }
}

/// Attributes outside `known`, kept and echoed back as Keystone does.
pub fn extra(o: &Obj, known: &[&str], base: &str) -> String {
    let mut m: Obj = serde_json::from_str(base).unwrap_or_default();
    for (k, v) in o {
        if !known.contains(&k.as_str()) && k != "links" {
            m.insert(k.clone(), v.clone());
        }
    }
    Value::Object(m).to_string()
}

/// Merges stored extra attributes into a rendered object (known fields win).
pub fn with_extra(mut v: Value, extra: &str) -> Value {
    if let (Some(obj), Ok(Value::Object(ex))) = (v.as_object_mut(), serde_json::from_str::<Value>(extra)) {
        for (k, x) in ex {
            obj.entry(k).or_insert(x);
        }
    }
    v
}

pub fn json_obj(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::Object(Obj::new()))
}

/// Ids are 32 hex characters, like Keystone's.
pub fn new_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// An ISO 8601 time as Keystone's clients send it (`2026-11-23T11:53:52.229823`, with or
/// without `Z` or an offset; no zone means UTC), in Unix microseconds.
pub fn parse_iso_time(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(t.timestamp_micros());
    }
    for f in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M"] {
        if let Ok(t) = chrono::NaiveDateTime::parse_from_str(s.trim_end_matches('Z'), f) {
            return Some(t.and_utc().timestamp_micros());
        }
    }
    None
}

/// Keystone's 400s for a requested expiry: unparsable, or already past at `now`.
pub fn future_time(s: &str, now: i64) -> Result<i64, ApiError> {
    const SUFFIX: &str = "The server could not comply with the request since it is either malformed or otherwise \
                          incorrect. The client is assumed to be in error.";
    let t = parse_iso_time(s)
        .ok_or_else(|| ApiError::bad_request(format!("Timestamp not in expected format. {SUFFIX}")))?;
    if t < now {
        return Err(ApiError::bad_request(format!("The 'expires_at' must not be before now. {SUFFIX}")));
    }
    Ok(t)
}

/// For typed bodies: a field that is present deserializes to `Some(value)`, `null`
/// included (`Some(None)`), so `#[serde(default)]` leaves an absent one `None`.
pub fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    <Option<T> as serde::Deserialize>::deserialize(d).map(Some)
}
