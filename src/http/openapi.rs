//! The machine-readable API description (`GET /api-docs/openapi.json`) and the interactive
//! reference (`/swagger-ui/`). Operations come from the handlers' `#[utoipa::path]`
//! annotations through `utoipa_axum::routes!`, the same declarations the router is built from,
//! so a route cannot be served without being described, nor described without being served.
//! This module holds what is common to every operation: the document's info and security
//! schemes, Keystone's error body, and the error responses annotations refer to.

use std::sync::Arc;

use axum::http::header;
use axum::response::IntoResponse;
use axum::Extension;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityScheme};

use crate::scim::schemas::ApiKeyBearer;
use utoipa::{Modify, OpenApi, ToSchema};

/// Where the description is served; Swagger UI loads it from here.
pub const SPEC_PATH: &str = "/api-docs/openapi.json";
/// Where Swagger UI is served (its page is `/swagger-ui/`).
pub const UI_PATH: &str = "/swagger-ui";

/// The document's fixed parts. `openapi: 3.1.0` is utoipa's default; the API document version
/// is the spec's.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "idnode identity API",
        version = "4.0.1",
        description = "A Keystone v3 compatible identity service. Every operation except discovery, \
                       token issue and revocation, signed-request tokens and this description needs \
                       a token in `X-Auth-Token`. Any operation answers 503 with `Retry-After` when it \
                       does not complete within the node's request timeout (`[api] request_timeout_s`).",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    modifiers(&TokenHeader, &ApiKeyBearer),
    security(("x-auth" = []), ("X-Auth-Token" = [])),
    components(schemas(ErrorBody, ErrorDetail, CollectionLinks, SelfLink, crate::scim::schemas::ScimErrorBody)),
    tags(
        (name = "discovery", description = "Version discovery"),
        (name = "auth", description = "Tokens: issue, validate, revoke; scopes available to a token"),
        (name = "domains", description = "Domains"),
        (name = "projects", description = "Projects"),
        (name = "users", description = "Users and password change"),
        (name = "application_credentials", description = "Application credentials and their access rules"),
        (name = "groups", description = "Groups and group membership"),
        (name = "roles", description = "Roles and role inference rules"),
        (name = "role_assignments", description = "Grants of roles and the role assignment listing"),
        (name = "catalog", description = "Regions, services and endpoints"),
        (name = "federation", description = "OS-FEDERATION identity providers, protocols, mappings and service providers"),
        (name = "oauth1", description = "OS-OAUTH1 consumers, request and access tokens"),
        (name = "trusts", description = "OS-TRUST trusts: delegation of a user's roles to another user"),
        (name = "credentials", description = "Credentials, signature credentials (OS-EC2) and signed-request tokens"),
        (name = "oauth2", description = "The OAuth2 authorization server and OpenID Connect provider of each domain"),
        (name = "identity_providers", description = "v4 federation: external OpenID Connect identity providers"),
        (name = "k8s_auth", description = "v4 Kubernetes cluster issuers whose service-account tokens authenticate"),
        (name = "spiffe", description = "v4 SPIFFE workload trust domains whose JWT-SVIDs authenticate"),
        (name = "mappings", description = "Mapping rulesets: how external identities (OIDC, Kubernetes, SPIFFE) become users, groups and authorizations"),
        (name = "scim", description = "SCIM realms: per-provider SCIM v2 provisioning of a domain"),
        (name = "api_keys", description = "v4 API keys: domain-owned bearer credentials bound to a provider (SCIM provisioning)"),
        (name = "meta", description = "This description"),
    )
)]
pub struct ApiDoc;

/// The token header under both names the spec gives (`x-auth` and `X-Auth-Token`); either
/// satisfies an operation's security requirement.
struct TokenHeader;

impl Modify for TokenHeader {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        for name in ["x-auth", "X-Auth-Token"] {
            let key = ApiKeyValue::with_description("X-Auth-Token", "A token issued by POST /v3/auth/tokens.");
            components.add_security_scheme(name, SecurityScheme::ApiKey(ApiKey::Header(key)));
        }
    }
}

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

/// The serialized description, rendered once at router assembly.
#[derive(Clone)]
pub struct SpecJson(pub Arc<String>);

#[utoipa::path(
    get,
    path = "/api-docs/openapi.json",
    tag = "meta",
    operation_id = "openapi_json",
    security(()),
    responses((status = 200, description = "This OpenAPI 3.1 description.", content_type = "application/json", body = Object))
)]
pub async fn spec(Extension(json): Extension<SpecJson>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], json.0.as_str().to_string())
}

/// Swagger UI served from the assets vendored into the binary; the validator badge is off so
/// the page makes no request to another host.
pub fn swagger_ui<S: Clone + Send + Sync + 'static>() -> axum::Router<S> {
    let config = utoipa_swagger_ui::Config::from(SPEC_PATH).validator_url("none");
    utoipa_swagger_ui::SwaggerUi::new(UI_PATH).config(config).into()
}
