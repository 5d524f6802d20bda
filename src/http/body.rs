//! Typed request bodies read in Keystone's order: the JSON itself (syntax, size) when the
//! request arrives, the fields when the handler asks, which may be after it has loaded and
//! authorized the target (Keystone answers 404 or 403 before it looks at the fields).
//!
//! A body type derives `Deserialize` and `ToSchema`, so the type that parses a body is the one
//! the OpenAPI document shows; its [`Checked::check`] first holds the raw JSON to Keystone's
//! rules and messages (`Invalid input for field 'name': ...`), which serde's own messages do not
//! match. A check accepts nothing the type refuses.

use std::marker::PhantomData;

use axum::extract::{FromRequest, Request};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::error::{ApiError, ApiResult};
use super::extract::{JsonBody, MaybeJson};
use super::fields::Obj;

/// A body type whose raw JSON is checked with Keystone's messages before serde types it.
pub trait Checked: DeserializeOwned {
    fn check(raw: &Value) -> ApiResult<()>;
}

/// A request body of type `T`: valid JSON now, typed by [`Body::parse`].
pub struct Body<T> {
    raw: Value,
    _type: PhantomData<fn() -> T>,
}

impl<T, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let JsonBody(raw) = JsonBody::<Value>::from_request(req, state).await?;
        Ok(Body { raw, _type: PhantomData })
    }
}

impl<T: Checked> Body<T> {
    /// The object under `key` (`{"user": {...}}`), for the checks a handler makes on the raw
    /// body before the fields' own (the envelope, a field compared with the stored target).
    pub fn object(&self, key: &str) -> ApiResult<&Obj> {
        envelope(&self.raw, key)
    }

    /// The typed body, after Keystone's checks.
    pub fn parse(self) -> ApiResult<T> {
        T::check(&self.raw)?;
        typed(self.raw)
    }
}

/// A request body of type `T` that may be absent: an empty body reads as `null` for
/// [`Checked::check`] and as `{}` for serde.
pub struct OptionalBody<T> {
    raw: Value,
    _type: PhantomData<fn() -> T>,
}

impl<T, S: Send + Sync> FromRequest<S> for OptionalBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let MaybeJson(raw) = MaybeJson::from_request(req, state).await?;
        Ok(OptionalBody { raw, _type: PhantomData })
    }
}

impl<T: Checked> OptionalBody<T> {
    /// The typed body, after Keystone's checks.
    pub fn parse(self) -> ApiResult<T> {
        T::check(&self.raw)?;
        typed(match self.raw {
            Value::Null => Value::Object(Obj::new()),
            raw => raw,
        })
    }
}

/// serde's reading of a value the checks passed; its message (with any offending value left
/// out, as it may be a password) only shows if a check misses a case the type refuses.
pub fn typed<T: DeserializeOwned>(raw: Value) -> ApiResult<T> {
    serde_json::from_value(raw).map_err(|e| {
        let text = e.to_string();
        let text = if text.starts_with("invalid type") || text.starts_with("invalid value") {
            "invalid value".to_string()
        } else {
            text
        };
        ApiError::bad_request(format!("Expecting to find valid JSON in request body: {text}."))
    })
}

/// For typed bodies: a field kept as JSON that is present deserializes to `Some`, `null`
/// included (`Some(Value::Null)`), so `#[serde(default)]` leaves only an absent one `None`.
pub fn present_value<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    <Value as serde::Deserialize>::deserialize(d).map(Some)
}

/// The object under `key` of a body, with the messages of [`super::fields::envelope`].
pub fn envelope<'a>(body: &'a Value, key: &str) -> ApiResult<&'a Obj> {
    match body {
        Value::Object(m) => match m.get(key) {
            Some(Value::Object(o)) => Ok(o),
            Some(_) => Err(ApiError::bad_request(format!("Invalid input for field '{key}': must be an object."))),
            None => Err(ApiError::bad_request(format!("'{key}' is a required property."))),
        },
        _ => Err(ApiError::bad_request("The request body must be a JSON object.")),
    }
}
