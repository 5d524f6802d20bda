//! Errors of a page handler: an HTML page with the message, never a JSON body or internals.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::i18n::Lang;
use super::page;
use crate::http::ApiError;

#[derive(Debug)]
pub struct PageError {
    pub status: StatusCode,
    pub message: String,
}

pub type PageResult<T = Response> = Result<T, PageError>;

impl PageError {
    pub fn bad_request(message: impl Into<String>) -> Self {
        PageError { status: StatusCode::BAD_REQUEST, message: message.into() }
    }
    pub fn forbidden(message: impl Into<String>) -> Self {
        PageError { status: StatusCode::FORBIDDEN, message: message.into() }
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let key = match self.status.as_u16() {
            400 => "error-invalid-request",
            403 => "error-forbidden",
            404 => "error-not-found",
            503 => "error-unavailable",
            _ => "error-other",
        };
        let heading = Lang::default().text(key);
        let mut resp = page::message(self.status, &Lang::default(), &heading, &self.message).into_response();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        resp
    }
}

impl From<ApiError> for PageError {
    fn from(e: ApiError) -> Self {
        PageError { status: e.status, message: e.message }
    }
}

impl From<idnode_storage::StorageError> for PageError {
    fn from(e: idnode_storage::StorageError) -> Self {
        ApiError::internal(e).into()
    }
}
