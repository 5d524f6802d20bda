//! The SCIM bodies this service answers, as the handlers build them and the OpenAPI
//! description documents them (RFC 7643 resources are open-ended: requests are read as JSON,
//! and only the attributes a realm stores are answered). The request-only shapes (PATCH
//! operations, list parameters) document what the handlers read.

use serde::Serialize;
use serde_json::Value;
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
#[derive(Serialize, ToSchema)]
#[schema(as = ScimError)]
pub struct ScimErrorBody {
    /// `["urn:ietf:params:scim:api:messages:2.0:Error"]`
    pub schemas: Vec<String>,
    /// The HTTP status, as a string.
    #[schema(example = "409")]
    pub status: String,
    /// `invalidFilter`, `invalidPath`, `invalidValue`, `invalidSyntax`, `uniqueness`,
    /// `mutability`, `noTarget` or `tooMany`; absent for 401, 403, 404, 412, 415.
    #[serde(rename = "scimType", skip_serializing_if = "Option::is_none")]
    pub scim_type: Option<String>,
    pub detail: String,
}

/// The stored parts of a user's name (each as the directory sent it).
#[derive(Serialize, ToSchema)]
pub struct Name {
    #[serde(rename = "givenName", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub given_name: Option<Value>,
    #[serde(rename = "familyName", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub family_name: Option<Value>,
}

#[derive(Serialize, ToSchema)]
pub struct Email {
    #[schema(value_type = String)]
    pub value: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary: Option<bool>,
}

#[derive(Serialize, ToSchema)]
pub struct Meta {
    #[serde(rename = "resourceType")]
    pub resource_type: String,
    pub location: String,
    pub created: String,
    #[serde(rename = "lastModified")]
    pub last_modified: String,
    /// The ETag: `W/"<version>"`.
    pub version: String,
}

/// A SCIM user (api-shapes §11.2). `id` and `meta` are the server's; `externalId` is
/// required on create.
#[derive(Serialize, ToSchema)]
#[schema(as = ScimUser)]
pub struct User {
    pub schemas: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(rename = "externalId", skip_serializing_if = "String::is_empty")]
    #[schema(required = true)]
    pub external_id: String,
    #[serde(rename = "userName")]
    pub user_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<Name>,
    #[serde(rename = "displayName", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub display_name: Option<Value>,
    /// Only the primary (else the first) is kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub emails: Option<Vec<Email>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

#[derive(Serialize, ToSchema)]
pub struct Member {
    /// A user id of the same realm.
    pub value: String,
    #[serde(rename = "$ref", skip_serializing_if = "Option::is_none")]
    pub ref_: Option<String>,
    /// The member's resource type: `User` (answers only).
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// A SCIM group (api-shapes §11.3).
#[derive(Serialize, ToSchema)]
#[schema(as = ScimGroup)]
pub struct Group {
    pub schemas: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(rename = "externalId", skip_serializing_if = "Option::is_none")]
    pub external_id: Option<String>,
    #[serde(rename = "displayName")]
    pub display_name: String,
    /// At most 1,000 per request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub members: Option<Vec<Member>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// One PATCH operation (requests only: `patch` reads them from the JSON body).
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct Operation {
    /// `add`, `replace` or `remove`.
    op: String,
    /// `active`, `userName`, `displayName`, `externalId`, `name.givenName`, `name.familyName`
    /// (users); `displayName`, `externalId`, `members` (groups; add and remove only).
    path: Option<String>,
    #[schema(value_type = Option<Object>)]
    value: Option<Value>,
}

/// RFC 7644 §3.5.2 (requests only).
#[derive(ToSchema)]
#[schema(as = ScimPatchOp)]
#[allow(dead_code)]
pub struct PatchOp {
    schemas: Vec<String>,
    #[schema(rename = "Operations")]
    operations: Vec<Operation>,
}

/// RFC 7644 §3.4.2.
#[derive(Serialize, ToSchema)]
#[schema(as = ScimListResponse)]
pub struct ListResponse {
    pub schemas: Vec<String>,
    #[serde(rename = "totalResults")]
    pub total_results: u64,
    #[serde(rename = "startIndex")]
    pub start_index: u64,
    #[serde(rename = "itemsPerPage")]
    pub items_per_page: u64,
    #[serde(rename = "Resources")]
    #[schema(value_type = Vec<Object>)]
    pub resources: Vec<Value>,
}

/// The query of a list (read by the handlers from the query map).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(non_snake_case, dead_code)]
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

/// The projection of a read (read by the handlers from the query map).
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(non_snake_case, dead_code)]
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
