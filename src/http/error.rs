//! One error type for the API layer, rendered as Keystone's error body
//! `{"error": {"code", "title", "message"}}`. Internal details are logged, never sent.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::state::ApplyError;

#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub retry_after: Option<u64>,
    /// A machine-readable key rendered as a top-level `detail` field next to `error` (the
    /// mapping API's keys, spec Errors item 7, without their `detail.` prefix); bodies
    /// without one are unchanged.
    pub detail: Option<&'static str>,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError { status, message: message.into(), retry_after: None, detail: None }
    }
    pub fn bad_request(m: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, m)
    }
    pub fn unauthorized(m: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, m)
    }
    pub fn unauthenticated() -> Self {
        Self::unauthorized("The request you have made requires authentication.")
    }
    pub fn forbidden(m: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, m)
    }
    pub fn denied(action: &str) -> Self {
        Self::forbidden(format!("You are not authorized to perform the requested action: {action}."))
    }
    pub fn not_found(kind: &str, id: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, format!("Could not find {kind}: {id}."))
    }
    /// 404 with exactly this message.
    pub fn not_found_msg(m: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, m)
    }
    pub fn unavailable(m: impl Into<String>) -> Self {
        ApiError { status: StatusCode::SERVICE_UNAVAILABLE, message: m.into(), retry_after: Some(1), detail: None }
    }
    /// The same error, carrying a `detail` key.
    pub fn with_detail(mut self, key: &'static str) -> Self {
        self.detail = Some(key);
        self
    }
    /// Logs the cause with an error id and returns a generic 500.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        let id = uuid::Uuid::new_v4().simple().to_string();
        tracing::error!(error_id = %id, "internal error: {cause}");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("An unexpected error prevented the server from fulfilling your request (error id {id})."),
        )
    }
}

fn title(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        412 => "Precondition Failed",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body =
            json!({"error": {"code": self.status.as_u16(), "title": title(self.status), "message": self.message}});
        if let Some(d) = self.detail {
            body["detail"] = json!(d);
        }
        let mut resp = (self.status, axum::Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Keystone uri=\"/v3\""));
        }
        if let Some(s) = self.retry_after {
            if let Ok(v) = HeaderValue::from_str(&s.to_string()) {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        resp
    }
}

impl From<ApplyError> for ApiError {
    fn from(e: ApplyError) -> Self {
        if let ApplyError::Detailed { status, key, message } = e {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut out = ApiError::new(status, message);
            out.detail = crate::mapping::detail_key(&key);
            return out;
        }
        let status = match e {
            ApplyError::Detailed { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            ApplyError::NotFound { .. } => StatusCode::NOT_FOUND,
            ApplyError::Conflict(_) => StatusCode::CONFLICT,
            ApplyError::Invalid(_) => StatusCode::BAD_REQUEST,
            ApplyError::Forbidden(_) => StatusCode::FORBIDDEN,
        };
        ApiError::new(status, e.to_string())
    }
}

impl From<idnode_storage::StorageError> for ApiError {
    fn from(e: idnode_storage::StorageError) -> Self {
        ApiError::internal(e)
    }
}

impl From<idnode_raft::ProposeError> for ApiError {
    fn from(e: idnode_raft::ProposeError) -> Self {
        use idnode_raft::ProposeError as P;
        match e {
            P::NoLeader => ApiError::unavailable("The cluster has no leader at the moment; retry shortly."),
            P::Timeout => ApiError::unavailable("The write was not confirmed in time; retry shortly."),
            // A stopped consensus core (shutdown, or a fatal storage error that /health
            // reports): another node can serve the request.
            P::Fatal(e) => {
                tracing::error!("consensus unavailable: {e}");
                ApiError::unavailable("This node cannot accept writes at the moment; retry on another node.")
            }
            other => ApiError::internal(other),
        }
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
