//! Request extractors: JSON bodies that fail as Keystone errors (not axum's plain text), and
//! the path id and query of sub-collection lists. The authenticated caller is the token
//! layer's (`token::Caller`).

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use super::error::ApiError;

/// Bodies larger than this are refused before parsing.
const MAX_BODY: usize = 1 << 20;

pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        parse(&bytes(req, state).await?).map(JsonBody)
    }
}

/// A JSON body that may be absent: `None` for an empty body (or a blank one, or `null`).
pub struct OptionalJson<T>(pub Option<T>);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for OptionalJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = bytes(req, state).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJson(None));
        }
        match parse(&bytes)? {
            serde_json::Value::Null => Ok(OptionalJson(None)),
            v => serde_json::from_value(v).map(|t| OptionalJson(Some(t))).map_err(|e| invalid_json(&e)),
        }
    }
}

async fn bytes<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    Bytes::from_request(req, state).await.map_err(|_| ApiError::bad_request("The request body could not be read."))
}

fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.len() > MAX_BODY {
        return Err(ApiError::new(axum::http::StatusCode::PAYLOAD_TOO_LARGE, "Request body too large."));
    }
    serde_json::from_slice(bytes).map_err(|e| invalid_json(&e))
}

/// serde's message without echoing request content (which may hold a password).
fn invalid_json(e: &serde_json::Error) -> ApiError {
    let text = e.to_string();
    let text = match text.find(" at line") {
        Some(i) if text.starts_with("invalid type") || text.starts_with("invalid value") => {
            format!("invalid value{}", &text[i..])
        }
        _ if text.starts_with("invalid type") || text.starts_with("invalid value") => "invalid value".to_string(),
        _ => text,
    };
    ApiError::bad_request(format!("Expecting to find valid JSON in request body: {text}."))
}

/// Keystone's boolean query flags: present without a value, or 1/true/yes/on.
pub fn query_flag(value: Option<&String>) -> bool {
    match value {
        None => false,
        Some(v) => !matches!(v.to_lowercase().as_str(), "0" | "false" | "no" | "off"),
    }
}

/// What a list below one record takes (`/v3/groups/{id}/users`): the record's id from the path
/// and the query (filters, `limit`, `marker`); each rejected as `Path` and `Query` reject it.
pub struct Below(pub String, pub HashMap<String, String>);

impl<S: Send + Sync> FromRequestParts<S> for Below {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Response> {
        let Path(id) = Path::<String>::from_request_parts(parts, state).await.map_err(IntoResponse::into_response)?;
        let Query(q) = Query::from_request_parts(parts, state).await.map_err(IntoResponse::into_response)?;
        Ok(Below(id, q))
    }
}
