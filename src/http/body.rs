//! Typed request bodies that keep Keystone's own 400 answers and order of checks.
//!
//! A body type derives `Deserialize` and `ToSchema`, so the type that parses a body is the one
//! the OpenAPI document shows. It lists its fields as [`Sent`] values: serde accepts any JSON
//! in them, so the handler (not serde) rejects a field of the wrong JSON type, with Keystone's
//! message for that field and at the point where Keystone checks it (after the lookup and the
//! policy check where those come first). [`Body`] does the same for the body as a whole; it is
//! read with [`super::extract::JsonBody`] (or [`super::extract::OptionalJson`] where the body
//! may be absent). A body type that refuses unknown properties (`deny_unknown_fields`, so the
//! document says `additionalProperties: false`) is read as a `Sent` itself: an object with one
//! is `Wrong`, as sent, for the handler's message.

use serde::de::{Deserialize, DeserializeOwned, Deserializer, Error as _, Unexpected, Visitor};
use serde::Serialize;
use serde_json::Value;

use super::error::ApiError;
use super::fields::Obj;

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
        Value::deserialize(d).map(|v| Sent::of(Some(&v)))
    }
}

impl<T: DeserializeOwned> Sent<T> {
    /// A member of an untyped object (a query, a stored document) read as if it were sent.
    pub fn of(v: Option<&Value>) -> Self {
        match v {
            None => Sent::Absent,
            Some(Value::Null) => Sent::Null,
            Some(v) => T::deserialize(Strict(v)).map_or_else(|_| Sent::Wrong(v.clone()), Sent::Is),
        }
    }
}

/// A JSON value to read a field from, which reads a struct from an object only: serde would
/// also read one from an array, by position, where Keystone wants an object.
struct Strict<'a>(&'a Value);

/// Methods read as the JSON value reads them.
macro_rules! as_json {
    ($($method:ident($($arg:ident: $ty:ty),*))*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, Self::Error> {
            self.0.$method($($arg,)* visitor)
        }
    )*};
}

impl<'de> Deserializer<'de> for Strict<'de> {
    type Error = serde_json::Error;

    as_json!(deserialize_any() deserialize_bool() deserialize_i8() deserialize_i16() deserialize_i32()
        deserialize_i64() deserialize_i128() deserialize_u8() deserialize_u16() deserialize_u32() deserialize_u64()
        deserialize_u128() deserialize_f32() deserialize_f64() deserialize_char() deserialize_str()
        deserialize_string() deserialize_bytes() deserialize_byte_buf() deserialize_option() deserialize_unit()
        deserialize_seq() deserialize_map() deserialize_identifier() deserialize_ignored_any()
        deserialize_unit_struct(name: &'static str) deserialize_newtype_struct(name: &'static str)
        deserialize_tuple(len: usize) deserialize_tuple_struct(name: &'static str, len: usize)
        deserialize_enum(name: &'static str, variants: &'static [&'static str]));

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Array(_) => Err(serde::de::Error::invalid_type(Unexpected::Seq, &visitor)),
            v => v.deserialize_struct(name, fields, visitor),
        }
    }
}

/// An object read as `T` that keeps its properties as sent, for the messages that show them
/// (Keystone's schema errors quote the object). Only an object reads as one.
#[derive(Default)]
pub struct Kept<T> {
    pub typed: T,
    pub sent: Obj,
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Kept<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::Object(sent) => {
                T::deserialize(Value::Object(sent.clone())).map(|typed| Kept { typed, sent }).map_err(D::Error::custom)
            }
            _ => Err(D::Error::custom("not an object")),
        }
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

    /// The value when it has the type; anything else reads as absent (Keystone's lenient
    /// readers).
    pub fn typed(self) -> Option<T> {
        match self {
            Sent::Is(t) => Some(t),
            _ => None,
        }
    }

    /// The JSON as sent when it is not a `T` (`null` included); `None` when absent or a `T`.
    pub fn unread(&self) -> Option<Value> {
        match self {
            Sent::Null => Some(Value::Null),
            Sent::Wrong(v) => Some(v.clone()),
            Sent::Absent | Sent::Is(_) => None,
        }
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
    /// Absent or null is none (as [`super::fields::opt_str`] reads an untyped object).
    pub fn string(&self, key: &str, max: usize) -> Result<Option<String>, ApiError> {
        match self {
            Sent::Absent | Sent::Null => Ok(None),
            Sent::Is(s) if s.chars().count() <= max => Ok(Some(s.clone())),
            Sent::Is(_) => Err(invalid(key, &format!("is too long (at most {max} characters)"))),
            Sent::Wrong(_) => Err(invalid(key, "must be a string")),
        }
    }

    /// A required non-blank string (names).
    pub fn name(&self, key: &str, max: usize) -> Result<String, ApiError> {
        match self.string(key, max)? {
            Some(s) if !s.trim().is_empty() => Ok(s),
            Some(_) => Err(invalid(key, "must not be empty")),
            None => Err(required(key)),
        }
    }

    /// A field an update may clear: absent is `None` (left as it is), `null` is `Some(None)`.
    pub fn nullable(&self, key: &str, max: usize) -> Result<Option<Option<String>>, ApiError> {
        match self {
            Sent::Absent => Ok(None),
            _ => self.string(key, max).map(Some),
        }
    }

    /// A required string that may be blank (a password); `null` is not a string.
    pub fn required(&self, key: &str, max: usize) -> Result<String, ApiError> {
        match self {
            Sent::Absent => Err(required(key)),
            Sent::Null => Err(invalid(key, "must be a string")),
            _ => self.string(key, max).map(Option::unwrap_or_default),
        }
    }

    /// An optional name: present means non-blank.
    pub fn opt_name(&self, key: &str, max: usize) -> Result<Option<String>, ApiError> {
        match self {
            Sent::Absent => Ok(None),
            _ => self.name(key, max).map(Some),
        }
    }
}

impl Sent<bool> {
    /// An optional boolean; `null` is not a boolean.
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
    /// `options`: an object of bounded size ([`super::limits::MAX_OPTIONS_BYTES`]), as JSON text.
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
    fn an_array_is_no_object() {
        let b = parse(serde_json::json!({"thing": ["x", true]}));
        let e = b.object().ok().map(|b| b.thing.envelope("thing"));
        assert_eq!(
            e.and_then(Result::err).map(message).as_deref(),
            Some("Invalid input for field 'thing': must be an object.")
        );
        let list: Sent<Vec<String>> = serde_json::from_value(serde_json::json!(["a"])).expect("a field never fails");
        assert_eq!(list.strings("l").ok().flatten(), Some(vec!["a".to_string()]));
    }

    #[test]
    fn nullable_and_required_strings() {
        let field = |v: Value| -> Sent<String> { serde_json::from_value(v).expect("a field never fails") };
        assert_eq!(Sent::<String>::Absent.nullable("d", 5).ok(), Some(None));
        assert_eq!(field(Value::Null).nullable("d", 5).ok(), Some(Some(None)));
        assert_eq!(field(serde_json::json!("")).required("p", 5).ok().as_deref(), Some(""));
        assert_eq!(
            field(Value::Null).required("p", 5).err().map(message).as_deref(),
            Some("Invalid input for field 'p': must be a string.")
        );
        assert_eq!(
            Sent::<String>::Absent.required("p", 5).err().map(message).as_deref(),
            Some("'p' is a required property.")
        );
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
