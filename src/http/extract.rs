//! Request extractors: JSON bodies that fail as Keystone errors (not axum's plain text). The
//! authenticated caller is the token layer's (`token::Caller`).

use axum::extract::{FromRequest, Request};
use serde::de::DeserializeOwned;

use super::ApiError;

/// Bodies larger than this are refused before parsing.
const MAX_BODY: usize = 1 << 20;

pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|_| ApiError::bad_request("The request body could not be read."))?;
        if bytes.len() > MAX_BODY {
            return Err(ApiError::new(axum::http::StatusCode::PAYLOAD_TOO_LARGE, "Request body too large."));
        }
        serde_json::from_slice(&bytes).map(JsonBody).map_err(|e| {
            ApiError::bad_request(format!("Expecting to find valid JSON in request body: {}.", sanitize(&e)))
        })
    }
}

/// A JSON body that may be absent (an empty body reads as `null`).
pub struct MaybeJson(pub serde_json::Value);

impl<S: Send + Sync> FromRequest<S> for MaybeJson {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|_| ApiError::bad_request("The request body could not be read."))?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(MaybeJson(serde_json::Value::Null));
        }
        if bytes.len() > MAX_BODY {
            return Err(ApiError::new(axum::http::StatusCode::PAYLOAD_TOO_LARGE, "Request body too large."));
        }
        serde_json::from_slice(&bytes).map(MaybeJson).map_err(|e| {
            ApiError::bad_request(format!("Expecting to find valid JSON in request body: {}.", sanitize(&e)))
        })
    }
}

/// serde's message without echoing request content (which may hold a password).
fn sanitize(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.find(" at line") {
        Some(i) if text.starts_with("invalid type") || text.starts_with("invalid value") => {
            format!("invalid value{}", &text[i..])
        }
        _ => text,
    }
}

/// Keystone's boolean query flags: present without a value, or 1/true/yes/on.
pub fn query_flag(value: Option<&String>) -> bool {
    match value {
        None => false,
        Some(v) => !matches!(v.to_lowercase().as_str(), "0" | "false" | "no" | "off"),
    }
}
