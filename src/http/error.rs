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
    /// A 409 reworded with `message` (Keystone words a duplicate per kind of record); any other
    /// error as it is.
    pub fn duplicate(self, message: impl Into<String>) -> Self {
        if self.status == StatusCode::CONFLICT {
            Self::new(StatusCode::CONFLICT, message)
        } else {
            self
        }
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
            out.detail = detail_key(&key);
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
        match e {
            // This node's copy is damaged; another node's is not.
            idnode_storage::StorageError::Quarantined(_) => {
                ApiError::unavailable("This node cannot read part of its data at the moment; retry on another node.")
            }
            other => ApiError::internal(other),
        }
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
            // The leader's binary, or the cluster version, does not take this command yet (a
            // rolling upgrade under way): the reason names the versions, nothing of the state.
            P::Rejected(why) => ApiError::unavailable(format!("This write needs an upgraded cluster: {why}")),
        }
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

/// Every `detail` key the mapping administration answers with: the spec's table (Errors
/// item 7) plus `domain_id_immutable` (a PUT that would move a ruleset to another domain,
/// which the spec refuses with 422 without naming a key) and `scim_realm_project_authorization`
/// (a project authorization for a provider with an active SCIM realm, likewise 422 unnamed)
/// and `user_mapping_unauthorized` (403: a rule or a login naming a user it may not become).
pub const DETAIL_KEYS: &[&str] = &[
    "system_token_shadowing",
    "domain_claim_required",
    "domain_override_fixed_mode",
    "invalid_rule_name",
    "duplicate_rule_name",
    "regex_safety_violation",
    "shadow_registry_conflict",
    "group_not_found",
    "mapping_rule_removed",
    "mapping_disabled",
    "mapping_not_found",
    "system_mapping_immutable",
    "role_grant_unauthorized",
    "cross_domain_mapping",
    "group_assignment_unauthorized",
    "system_scope_requires_is_system",
    "domain_mapping_unauthorized",
    "domain_resolution_mode_requires_admin",
    "allowed_domains_required",
    "interpolated_value_too_long",
    "ruleset_version_mismatch",
    "role_not_found",
    "invalid_template",
    "domain_id_immutable",
    "scim_realm_project_authorization",
    "user_mapping_unauthorized",
];

/// The static form of a detail key that crossed the raft log as a string (`None`: unknown).
pub fn detail_key(key: &str) -> Option<&'static str> {
    DETAIL_KEYS.iter().find(|k| **k == key).copied()
}
