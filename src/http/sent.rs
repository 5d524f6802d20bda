//! Typed request bodies that keep Keystone's own 400 answers.
//!
//! A body type lists its fields as [`Sent`] values: serde accepts any JSON in them, so the
//! handler (not serde) rejects a field of the wrong JSON type, with Keystone's message for
//! that field and at the point where Keystone checks it (after the lookup and the policy
//! check where those come first). [`Body`] does the same for the body as a whole. The
//! helpers mirror [`super::fields`], which checks untyped objects with the same messages.

use serde::de::{Deserialize, DeserializeOwned, Deserializer, Error as _};
use serde::Serialize;
use serde_json::Value;

use super::fields::Obj;
use super::ApiError;

/// A field of a request body as the client sent it.
#[derive(Debug, Clone, Default)]
pub enum Sent<T> {
    /// Not in the body (with `#[serde(default)]` on the field).
    #[default]
    Absent,
    Null,
    Is(T),
    /// Present with a JSON type that `T` does not take; the value as sent.
    Wrong(Value),
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Sent<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match Value::deserialize(d)? {
            Value::Null => Sent::Null,
            v => match T::deserialize(&v) {
                Ok(t) => Sent::Is(t),
                Err(_) => Sent::Wrong(v),
            },
        })
    }
}

fn invalid(key: &str, why: &str) -> ApiError {
    ApiError::bad_request(format!("Invalid input for field '{key}': {why}."))
}

fn required(key: &str) -> ApiError {
    ApiError::bad_request(format!("'{key}' is a required property."))
}

impl<T> Sent<T> {
    /// Whether the key is in the body at all (`null` included).
    pub fn is_present(&self) -> bool {
        !matches!(self, Sent::Absent)
    }

    /// The object under an envelope key, e.g. `{"project": {...}}` (as [`super::fields::envelope`]).
    pub fn envelope(self, key: &str) -> Result<T, ApiError> {
        match self {
            Sent::Is(t) => Ok(t),
            Sent::Absent => Err(required(key)),
            Sent::Null | Sent::Wrong(_) => Err(invalid(key, "must be an object")),
        }
    }
}

impl<T: Serialize> Sent<T> {
    /// The JSON as sent; `None` when absent.
    pub fn value(&self) -> Option<Value> {
        match self {
            Sent::Absent => None,
            Sent::Null => Some(Value::Null),
            Sent::Is(t) => Some(serde_json::to_value(t).unwrap_or(Value::Null)),
            Sent::Wrong(v) => Some(v.clone()),
        }
    }

    /// Puts the field back under `key` when it was sent (records kept as the body's JSON,
    /// policy targets made of the body).
    pub fn put(&self, o: &mut Obj, key: &str) {
        if let Some(v) = self.value() {
            o.insert(key.to_string(), v);
        }
    }
}

impl Sent<String> {
    /// As [`super::fields::opt_str`]: absent or null is none.
    pub fn string(&self, key: &str, max: usize) -> Result<Option<String>, ApiError> {
        match self {
            Sent::Absent | Sent::Null => Ok(None),
            Sent::Is(s) if s.chars().count() <= max => Ok(Some(s.clone())),
            Sent::Is(_) => Err(invalid(key, &format!("is too long (at most {max} characters)"))),
            Sent::Wrong(_) => Err(invalid(key, "must be a string")),
        }
    }

    /// As [`super::fields::req_name`]: a required non-blank string.
    pub fn name(&self, key: &str, max: usize) -> Result<String, ApiError> {
        match self.string(key, max)? {
            Some(s) if !s.trim().is_empty() => Ok(s),
            Some(_) => Err(invalid(key, "must not be empty")),
            None => Err(required(key)),
        }
    }

    /// As [`super::fields::opt_name`]: present means non-blank.
    pub fn opt_name(&self, key: &str, max: usize) -> Result<Option<String>, ApiError> {
        match self {
            Sent::Absent => Ok(None),
            _ => self.name(key, max).map(Some),
        }
    }
}

impl Sent<bool> {
    /// As [`super::fields::opt_bool`]: `null` is not a boolean.
    pub fn flag(&self, key: &str) -> Result<Option<bool>, ApiError> {
        match self {
            Sent::Absent => Ok(None),
            Sent::Is(b) => Ok(Some(*b)),
            Sent::Null | Sent::Wrong(_) => Err(invalid(key, "must be a boolean")),
        }
    }
}

impl Sent<Vec<String>> {
    /// A list of strings; absent or null is none.
    pub fn strings(&self, key: &str) -> Result<Option<Vec<String>>, ApiError> {
        match self {
            Sent::Absent | Sent::Null => Ok(None),
            Sent::Is(v) => Ok(Some(v.clone())),
            Sent::Wrong(_) => Err(invalid(key, "must be a list of strings")),
        }
    }
}

impl Sent<Obj> {
    /// As [`super::fields::opt_options`]: an object of bounded size, as JSON text.
    pub fn options(&self) -> Result<Option<String>, ApiError> {
        match self {
            Sent::Absent | Sent::Null => Ok(None),
            Sent::Is(m) => {
                let text = Value::Object(m.clone()).to_string();
                super::limits::check_options(&text)?;
                Ok(Some(text))
            }
            Sent::Wrong(_) => Err(invalid("options", "must be an object")),
        }
    }
}

/// A whole request body, which Keystone wants to be a JSON object. Duplicate keys keep the
/// last value, as they did when bodies were read as untyped JSON.
pub struct Body<T>(Option<T>);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Body<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        if !v.is_object() {
            return Ok(Body(None));
        }
        T::deserialize(v).map(|t| Body(Some(t))).map_err(D::Error::custom)
    }
}

impl<T> Body<T> {
    /// The body, or Keystone's 400 when it is not an object.
    pub fn object(self) -> Result<T, ApiError> {
        self.0.ok_or_else(|| ApiError::bad_request("The request body must be a JSON object."))
    }

    /// The body when it is an object.
    pub fn into_inner(self) -> Option<T> {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize)]
    struct Thing {
        #[serde(default)]
        name: Sent<String>,
        #[serde(default)]
        enabled: Sent<bool>,
        #[serde(flatten)]
        extra: Obj,
    }

    #[derive(Deserialize)]
    struct Request {
        #[serde(default)]
        thing: Sent<Thing>,
    }

    fn parse(v: Value) -> Body<Request> {
        serde_json::from_value(v).expect("a typed body never fails to parse")
    }

    fn message(e: ApiError) -> String {
        e.message.to_string()
    }

    #[test]
    fn keystone_messages_for_the_envelope() {
        let no_object = parse(serde_json::json!([1])).object().err().map(message);
        assert_eq!(no_object.as_deref(), Some("The request body must be a JSON object."));
        let missing = parse(serde_json::json!({})).object().ok().map(|b| b.thing.envelope("thing"));
        assert_eq!(missing.and_then(Result::err).map(message).as_deref(), Some("'thing' is a required property."));
        for bad in [serde_json::json!(null), serde_json::json!([]), serde_json::json!("x")] {
            let b = parse(serde_json::json!({ "thing": bad })).object().ok().map(|b| b.thing.envelope("thing"));
            assert_eq!(
                b.and_then(Result::err).map(message).as_deref(),
                Some("Invalid input for field 'thing': must be an object.")
            );
        }
    }

    #[test]
    fn wrong_types_are_kept_for_the_handler() {
        let b = parse(serde_json::json!({"thing": {"name": 5, "enabled": null, "x": [1]}}));
        let t = b.object().ok().and_then(|b| b.thing.envelope("thing").ok()).expect("an object");
        assert_eq!(
            t.name.string("name", 5).err().map(message).as_deref(),
            Some("Invalid input for field 'name': must be a string.")
        );
        assert_eq!(
            t.enabled.flag("enabled").err().map(message).as_deref(),
            Some("Invalid input for field 'enabled': must be a boolean.")
        );
        assert_eq!(t.extra.get("x"), Some(&serde_json::json!([1])));
        assert!(!t.extra.contains_key("name"));
    }
}
