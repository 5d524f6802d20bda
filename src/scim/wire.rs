//! SCIM on the wire (RFC 7644 §3.1, §3.12, §3.14; api-shapes §11.1, §11.6, §11.9):
//! `application/scim+json` in and out, the error envelope every SCIM error is rendered in,
//! and the `ETag` / `If-Match` pair built on a resource's `version`.

use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::schemas::ScimErrorBody;
use crate::http::error::ApiError;
use crate::state::ApplyError;

pub const CONTENT_TYPE: &str = "application/scim+json";
pub const ERROR_URN: &str = "urn:ietf:params:scim:api:messages:2.0:Error";
pub const LIST_URN: &str = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
pub const PATCH_URN: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
pub const USER_URN: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
pub const GROUP_URN: &str = "urn:ietf:params:scim:schemas:core:2.0:Group";

/// The `scimType`s of RFC 7644 §3.12 this service answers with.
const SCIM_TYPES: &[&str] = &[
    "invalidFilter",
    "tooMany",
    "uniqueness",
    "mutability",
    "invalidSyntax",
    "invalidPath",
    "noTarget",
    "invalidValue",
];

/// Bodies larger than this are refused before parsing (1,000 members fit many times over).
const MAX_BODY: usize = 1 << 20;

/// A SCIM error: `{schemas: [Error], status: "<code>", scimType?, detail}`.
#[derive(Debug)]
pub struct ScimError {
    pub status: StatusCode,
    pub scim_type: Option<&'static str>,
    pub detail: String,
    pub retry_after: Option<u64>,
}

pub type ScimResult<T> = Result<T, ScimError>;

impl ScimError {
    pub fn new(status: StatusCode, scim_type: Option<&'static str>, detail: impl Into<String>) -> Self {
        ScimError { status, scim_type, detail: detail.into(), retry_after: None }
    }
    pub fn bad(scim_type: &'static str, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, Some(scim_type), detail)
    }
    pub fn not_found(kind: &str, id: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, None, format!("Could not find {kind}: {id}."))
    }
}

impl IntoResponse for ScimError {
    fn into_response(self) -> Response {
        let body = json!(ScimErrorBody {
            schemas: vec![ERROR_URN.into()],
            status: self.status.as_u16().to_string(),
            scim_type: self.scim_type.map(str::to_string),
            detail: self.detail,
        });
        let mut resp = (self.status, body.to_string()).into_response();
        let h = resp.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
        if self.status == StatusCode::UNAUTHORIZED {
            h.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"SCIM\""));
        }
        if let Some(s) = self.retry_after.and_then(|s| HeaderValue::from_str(&s.to_string()).ok()) {
            h.insert(header::RETRY_AFTER, s);
        }
        resp
    }
}

impl From<ApiError> for ScimError {
    fn from(e: ApiError) -> Self {
        ScimError { status: e.status, scim_type: None, detail: e.message, retry_after: e.retry_after }
    }
}

impl From<ApplyError> for ScimError {
    fn from(e: ApplyError) -> Self {
        match e {
            ApplyError::Detailed { status, key, message } => ScimError::new(
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                SCIM_TYPES.iter().find(|t| **t == key).copied(),
                message,
            ),
            other => ApiError::from(other).into(),
        }
    }
}

impl From<idnode_storage::StorageError> for ScimError {
    fn from(e: idnode_storage::StorageError) -> Self {
        ApiError::internal(e).into()
    }
}

/// A SCIM resource or message, with its `ETag` (a resource's version) and `Location`.
pub fn reply(status: StatusCode, body: &Value, version: Option<u64>, location: Option<&str>) -> Response {
    let mut resp = (status, body.to_string()).into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    if let Some(v) = version.and_then(|v| HeaderValue::from_str(&etag(v)).ok()) {
        h.insert(header::ETAG, v);
    }
    if let Some(l) = location.and_then(|l| HeaderValue::from_str(l).ok()) {
        h.insert(header::LOCATION, l);
    }
    resp
}

pub fn etag(version: u64) -> String {
    format!("W/\"{version}\"")
}

/// The version `If-Match` names: `W/"n"`, `"n"` or `n`; `*` (any) or no header: none.
/// Anything else is a 400.
pub fn if_match(headers: &HeaderMap) -> ScimResult<Option<u64>> {
    let Some(v) = headers.get(header::IF_MATCH) else { return Ok(None) };
    let malformed = || ScimError::bad("invalidValue", "If-Match must name one version: W/\"<n>\", \"<n>\" or <n>.");
    let v = v.to_str().map_err(|_| malformed())?.trim();
    if v == "*" {
        return Ok(None);
    }
    let v = v.strip_prefix("W/").unwrap_or(v);
    let v = v.strip_prefix('"').and_then(|s| s.strip_suffix('"')).unwrap_or(v);
    v.parse::<u64>().map(Some).map_err(|_| malformed())
}

/// A SCIM request body: `application/scim+json` or `application/json` (415 otherwise),
/// valid JSON (400 `invalidSyntax` otherwise).
pub struct ScimBody(pub Value);

impl<S: Send + Sync> FromRequest<S> for ScimBody {
    type Rejection = ScimError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ScimError> {
        let media = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or("").trim().to_ascii_lowercase());
        if !matches!(media.as_deref(), Some(CONTENT_TYPE | "application/json")) {
            return Err(ScimError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                None,
                "SCIM request bodies are application/scim+json (or application/json).",
            ));
        }
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|_| ScimError::bad("invalidSyntax", "The request body could not be read."))?;
        if bytes.len() > MAX_BODY {
            return Err(ScimError::new(StatusCode::PAYLOAD_TOO_LARGE, None, "The request body is too large."));
        }
        serde_json::from_slice(&bytes).map(ScimBody).map_err(|e| {
            ScimError::bad(
                "invalidSyntax",
                format!("The request body is not valid JSON (line {}, column {}).", e.line(), e.column()),
            )
        })
    }
}

/// The answer for `/Bulk` and `/Me`, which this service does not implement (RFC 7644 §3.7,
/// §3.11: a provider that does not support them says so with 501).
pub fn not_implemented(what: &str) -> ScimError {
    ScimError::new(StatusCode::NOT_IMPLEMENTED, None, format!("{what} is not supported by this service."))
}
