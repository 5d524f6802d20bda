//! The OpenAPI building blocks handlers' `#[utoipa::path]` annotations share: Keystone's
//! error body, collection and self links, and one error response type per status. The
//! document itself (info, security schemes, tags) is assembled in `serve::openapi`.

use utoipa::ToSchema;

/// Keystone's error body, the answer of every 4xx and 5xx.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: `ApiError` renders the body
pub struct ErrorBody {
    error: ErrorDetail,
}

#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ErrorDetail {
    /// The HTTP status code.
    #[schema(example = 404)]
    code: u16,
    /// The status's reason phrase.
    #[schema(example = "Not Found")]
    title: String,
    /// What went wrong, without internal details.
    #[schema(example = "Could not find project: 0123.")]
    message: String,
}

/// Keystone's collection links; this node does not paginate, so `previous` and `next` are null.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct CollectionLinks {
    #[schema(rename = "self")]
    self_: String,
    previous: Option<String>,
    next: Option<String>,
}

/// A resource's own URL.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct SelfLink {
    #[schema(rename = "self")]
    self_: String,
}

/// Error responses for annotations, one type per status, so each operation lists exactly the
/// statuses it can answer: `responses((status = 200, ...), Unauthorized, Forbidden, Internal)`.
pub mod errors {
    use utoipa::openapi::{ContentBuilder, Ref, Response, ResponseBuilder};

    /// A documented error response: `description`, a body of the named schema.
    pub fn error_response(description: &str, content_type: &str, schema: &str) -> Response {
        ResponseBuilder::new()
            .description(description)
            .content(content_type, ContentBuilder::new().schema(Some(Ref::from_schema_name(schema))).build())
            .build()
    }

    /// One `IntoResponses` type per status, its body `$schema` as `$content_type`.
    macro_rules! error_responses {
        ($content_type:literal, $schema:literal: $($name:ident = $status:literal, $desc:literal;)*) => {$(
            #[doc = $desc]
            pub struct $name;
            impl utoipa::IntoResponses for $name {
                fn responses() -> std::collections::BTreeMap<String, utoipa::openapi::RefOr<utoipa::openapi::Response>> {
                    let resp = $crate::http::openapi::errors::error_response($desc, $content_type, $schema);
                    std::collections::BTreeMap::from([($status.to_string(), utoipa::openapi::RefOr::T(resp))])
                }
            }
        )*};
    }
    pub(crate) use error_responses;

    error_responses! { "application/json", "ErrorBody":
        BadRequest = 400, "The body is not valid JSON, a field is missing or invalid, a filter combination is invalid, or the change breaks an invariant.";
        Unauthorized = 401, "The token in X-Auth-Token (or the presented credentials) is missing, invalid, expired or revoked.";
        Forbidden = 403, "The policy refuses the caller, the resource is protected, or a signed-request token was presented.";
        NotFound = 404, "The resource, or one the request refers to, does not exist.";
        Conflict = 409, "The change would duplicate a unique name or identifier, or the state does not allow it.";
        Unprocessable = 422, "The mapping ruleset breaks a write-time rule; the body's top-level `detail` names it (spec Errors item 7).";
        PayloadTooLarge = 413, "The request body exceeds 1 MiB.";
        TooManyRequests = 429, "Too many authentication attempts; retry after the Retry-After header's seconds.";
        Internal = 500, "An unexpected error; the message carries an error id for the logs.";
        Unavailable = 503, "The cluster cannot accept the write now (no leader, not confirmed in time, or the node is shutting down), or the password hashing pool is saturated; retry after Retry-After.";
    }
}
