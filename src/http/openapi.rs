//! The OpenAPI building blocks handlers' `#[utoipa::path]` annotations share: Keystone's
//! error body, collection and self links, and one error response type per status. The
//! document itself (info, security schemes, tags) is assembled in `serve::openapi`.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::fields::Obj;

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

/// Keystone's collection links: `next` names the next page when `limit` cut the list;
/// `previous` is always null.
#[derive(Serialize, ToSchema)]
pub struct CollectionLinks {
    #[serde(rename = "self")]
    self_: String,
    previous: Option<String>,
    next: Option<String>,
}

impl CollectionLinks {
    /// The links of a list that is never cut: `self`, with `previous` and `next` null.
    pub fn whole(self_: String) -> Self {
        CollectionLinks { self_, previous: None, next: None }
    }

    /// The links of one page of a list.
    pub fn new(self_: String, previous: Option<String>, next: Option<String>) -> Self {
        CollectionLinks { self_, previous, next }
    }
}

/// A resource's own URL.
#[derive(Serialize, ToSchema)]
pub struct SelfLink {
    #[serde(rename = "self")]
    self_: String,
}

impl SelfLink {
    /// `{"self": base + path}`.
    pub fn new(base: &str, path: &str) -> Self {
        SelfLink { self_: format!("{base}{path}") }
    }
}

/// A record's stored extra attributes (JSON object text), for a response type's
/// `#[serde(flatten)] extra`; anything but an object shows none.
pub fn extras(stored: &str) -> Obj {
    match serde_json::from_str(stored) {
        Ok(Value::Object(o)) => o,
        _ => Obj::new(),
    }
}

/// A response body as JSON. Response types with free-form extra attributes declare their
/// `#[serde(flatten)] extra` first: serialized into a `Value`, the record's own fields then
/// replace a stored extra of the same name, as Keystone shows them.
pub fn to_json<T: Serialize>(body: &T) -> Value {
    serde_json::to_value(body).unwrap_or(Value::Null)
}

/// A feature's `routes<S>()`, generic over the node's state `S`: `S` hands out each state the
/// feature's handlers extract (`Arc<T>` through `FromRef`), and any extra bound after `+`.
///
/// ```ignore
/// feature_routes! {
///     pub fn routes() over [Core, Tokens] {
///         OpenApiRouter::new().routes(routes!(list))
///     }
/// }
/// ```
macro_rules! feature_routes {
    ($(#[$attr:meta])* $vis:vis fn $name:ident() over [$($state:ty),+ $(,)?] $(+ $extra:path)? $body:block) => {
        $(#[$attr])*
        $vis fn $name<S>() -> utoipa_axum::router::OpenApiRouter<S>
        where
            S: Clone + Send + Sync + 'static $(+ $extra)?,
            $(std::sync::Arc<$state>: axum::extract::FromRef<S>,)+
        $body
    };
}
pub(crate) use feature_routes;

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

    /// The error statuses of one kind of operation, as one `IntoResponses` type.
    macro_rules! error_sets {
        ($($(#[doc = $doc:literal])* $name:ident = [$($part:ident),*];)*) => {$(
            $(#[doc = $doc])*
            pub struct $name;
            impl utoipa::IntoResponses for $name {
                fn responses() -> std::collections::BTreeMap<String, utoipa::openapi::RefOr<utoipa::openapi::Response>> {
                    let mut all = std::collections::BTreeMap::new();
                    $(all.extend(<$part as utoipa::IntoResponses>::responses());)*
                    all
                }
            }
        )*};
    }

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

    error_sets! {
        /// Listing a collection: 401, 403, 500.
        List = [Unauthorized, Forbidden, Internal];
        /// Reading one record: 401, 403, 404, 500.
        Read = [Unauthorized, Forbidden, NotFound, Internal];
        /// A create or update with a JSON body: 400, 401, 403, 404, 409, 413, 500, 503.
        Write = [BadRequest, Unauthorized, Forbidden, NotFound, Conflict, PayloadTooLarge, Internal, Unavailable];
        /// A write without a body (delete, grant): 400, 401, 403, 404, 409, 500, 503.
        Change = [BadRequest, Unauthorized, Forbidden, NotFound, Conflict, Internal, Unavailable];
        /// A delete that cannot conflict: 401, 403, 404, 500, 503.
        Remove = [Unauthorized, Forbidden, NotFound, Internal, Unavailable];
        /// An update that cannot conflict: 400, 401, 403, 404, 500, 503.
        Edit = [BadRequest, Unauthorized, Forbidden, NotFound, Internal, Unavailable];
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[derive(Serialize)]
    struct Record {
        #[serde(flatten)]
        extra: Obj,
        id: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    }

    #[test]
    fn own_fields_win_over_stored_extras() {
        let extra = extras(r#"{"id": "theirs", "description": "kept", "colour": "blue"}"#);
        let v = to_json(&Record { extra, id: "ours".into(), description: None });
        assert_eq!(v, json!({"id": "ours", "description": "kept", "colour": "blue"}));
        let v = to_json(&Record { extra: extras("not an object"), id: "ours".into(), description: Some("d".into()) });
        assert_eq!(v, json!({"id": "ours", "description": "d"}));
    }
}
