//! The OpenAPI description of the SCIM endpoints (schema only: the handlers build and read
//! SCIM JSON directly, as RFC 7643 resources are open-ended).

#![allow(dead_code)]

use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{IntoParams, Modify, ToSchema};

/// The bearer scheme SCIM requests authenticate with: an API key (`kscim_…`).
pub struct ApiKeyBearer;

impl Modify for ApiKeyBearer {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        let mut http = Http::new(HttpAuthScheme::Bearer);
        http.bearer_format = Some("kscim_<secret>_<checksum> (an API key)".into());
        components.add_security_scheme("api_key", SecurityScheme::Http(http));
    }
}

/// RFC 7644 §3.12: every SCIM error.
#[derive(ToSchema)]
#[schema(as = ScimError)]
pub struct ScimErrorBody {
    /// `["urn:ietf:params:scim:api:messages:2.0:Error"]`
    schemas: Vec<String>,
    /// The HTTP status, as a string.
    #[schema(example = "409")]
    status: String,
    /// `invalidFilter`, `invalidPath`, `invalidValue`, `invalidSyntax`, `uniqueness`,
    /// `mutability`, `noTarget` or `tooMany`; absent for 401, 403, 404, 412, 415.
    #[schema(rename = "scimType")]
    scim_type: Option<String>,
    detail: String,
}

#[derive(ToSchema)]
pub struct Name {
    #[schema(rename = "givenName")]
    given_name: Option<String>,
    #[schema(rename = "familyName")]
    family_name: Option<String>,
}

#[derive(ToSchema)]
pub struct Email {
    value: String,
    primary: Option<bool>,
}

#[derive(ToSchema)]
pub struct Meta {
    #[schema(rename = "resourceType")]
    resource_type: String,
    location: String,
    created: String,
    #[schema(rename = "lastModified")]
    last_modified: String,
    /// The ETag: `W/"<version>"`.
    version: String,
}

/// A SCIM user (api-shapes §11.2). `id` and `meta` are the server's; `externalId` is
/// required on create.
#[derive(ToSchema)]
#[schema(as = ScimUser)]
pub struct User {
    schemas: Vec<String>,
    id: Option<String>,
    #[schema(rename = "externalId")]
    external_id: String,
    #[schema(rename = "userName")]
    user_name: String,
    name: Option<Name>,
    #[schema(rename = "displayName")]
    display_name: Option<String>,
    /// Only the primary (else the first) is kept.
    emails: Option<Vec<Email>>,
    active: Option<bool>,
    meta: Option<Meta>,
}

#[derive(ToSchema)]
pub struct Member {
    /// A user id of the same realm.
    value: String,
    #[schema(rename = "$ref")]
    ref_: Option<String>,
}

/// A SCIM group (api-shapes §11.3).
#[derive(ToSchema)]
#[schema(as = ScimGroup)]
pub struct Group {
    schemas: Vec<String>,
    id: Option<String>,
    #[schema(rename = "externalId")]
    external_id: Option<String>,
    #[schema(rename = "displayName")]
    display_name: String,
    /// At most 1,000 per request.
    members: Option<Vec<Member>>,
    meta: Option<Meta>,
}

#[derive(ToSchema)]
pub struct Operation {
    /// `add`, `replace` or `remove`.
    op: String,
    /// `active`, `userName`, `displayName`, `externalId`, `name.givenName`, `name.familyName`
    /// (users); `displayName`, `externalId`, `members` (groups; add and remove only).
    path: Option<String>,
    #[schema(value_type = Option<Object>)]
    value: Option<serde_json::Value>,
}

/// RFC 7644 §3.5.2.
#[derive(ToSchema)]
#[schema(as = ScimPatchOp)]
pub struct PatchOp {
    schemas: Vec<String>,
    #[schema(rename = "Operations")]
    operations: Vec<Operation>,
}

/// RFC 7644 §3.4.2.
#[derive(ToSchema)]
#[schema(as = ScimListResponse)]
pub struct ListResponse {
    schemas: Vec<String>,
    #[schema(rename = "totalResults")]
    total_results: u64,
    #[schema(rename = "startIndex")]
    start_index: u64,
    #[schema(rename = "itemsPerPage")]
    items_per_page: u64,
    #[schema(rename = "Resources", value_type = Vec<Object>)]
    resources: Vec<serde_json::Value>,
}

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(non_snake_case)]
pub struct ListParams {
    /// 1-based index of the first result (default 1).
    startIndex: Option<i64>,
    /// Results per page (default 20, at most 200).
    count: Option<i64>,
    /// `attr op value` terms joined by one of `and`/`or`: at most 8 terms and 512 bytes;
    /// users filter on `userName` (eq ne co sw pr), `externalId` (eq ne pr), `id` and
    /// `active` (eq pr); groups on `displayName`, `externalId`, `id`.
    filter: Option<String>,
    /// Return only these attributes (comma-separated; `id` and `schemas` always).
    attributes: Option<String>,
    /// Leave these attributes out (comma-separated).
    excludedAttributes: Option<String>,
}

#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(non_snake_case)]
pub struct Projection {
    /// Return only these attributes (comma-separated; `id` and `schemas` always).
    attributes: Option<String>,
    /// Leave these attributes out (comma-separated).
    excludedAttributes: Option<String>,
}

crate::http::openapi::errors::error_responses! { "application/scim+json", "ScimError":
    Invalid = 400, "invalidSyntax, invalidValue, invalidFilter, invalidPath, mutability, noTarget or tooMany (scimType says which).";
    Unauthorized = 401, "The bearer API key is missing, unknown, disabled, revoked, expired or used from outside its allowed_ips.";
    Forbidden = 403, "No enabled realm serves the key's provider in this domain, the key is not domain-scoped there, or the policy refuses its roles.";
    NotFound = 404, "No such resource in this realm (another realm's, or deprovisioned).";
    Conflict = 409, "uniqueness: the userName, displayName or externalId is taken in the domain.";
    Precondition = 412, "If-Match names another version.";
    UnsupportedMedia = 415, "The body is not application/scim+json (or application/json).";
    TooMany = 429, "The realm's provider made more SCIM writes than scim_realm_write_rate_limit allows; retry after Retry-After.";
    Internal = 500, "An unexpected error; the detail carries an error id for the logs.";
    NotImplemented = 501, "Not supported by this service (/Bulk, /Me).";
}
