//! OpenAPI schemas of the token request and token object. Schema only: the handlers build and
//! read JSON directly.
#![allow(dead_code)]

use serde_json::Value;
use utoipa::ToSchema;

use crate::http::openapi::CollectionLinks;

/// `POST /v3/auth/tokens`.
#[derive(ToSchema)]
pub struct AuthRequest {
    auth: Auth,
}

#[derive(ToSchema)]
pub struct Auth {
    identity: Identity,
    /// `{"project": {"id"} | {"name", "domain": {"id"|"name"}}}`, `{"domain": {"id"|"name"}}`,
    /// `{"system": {"all": true}}`, or the string `unscoped`. Absent: the user's default project
    /// when usable, else unscoped.
    #[schema(value_type = Object)]
    scope: Option<Value>,
}

#[derive(ToSchema)]
pub struct Identity {
    /// `password` and/or `token`.
    methods: Vec<String>,
    password: Option<PasswordMethod>,
    token: Option<TokenMethod>,
}

#[derive(ToSchema)]
pub struct PasswordMethod {
    user: PasswordUser,
}

/// By `id`, or by `name` with `domain`.
#[derive(ToSchema)]
pub struct PasswordUser {
    id: Option<String>,
    name: Option<String>,
    domain: Option<NameOrId>,
    password: String,
}

#[derive(ToSchema)]
pub struct NameOrId {
    id: Option<String>,
    name: Option<String>,
}

/// Re-scoping: an existing token stands for the user.
#[derive(ToSchema)]
pub struct TokenMethod {
    id: String,
}

#[derive(ToSchema)]
pub struct IdName {
    id: String,
    name: String,
}

#[derive(ToSchema)]
pub struct TokenUser {
    id: String,
    name: String,
    domain: IdName,
    password_expires_at: Option<String>,
}

#[derive(ToSchema)]
pub struct TokenProject {
    id: String,
    name: String,
    domain: IdName,
}

#[derive(ToSchema)]
pub struct TokenSystem {
    all: bool,
}

/// A token. The token itself travels only in the `X-Subject-Token` header, never in a body.
/// At most one of `project`, `domain` and `system`; none for an unscoped token, which has no
/// roles and no catalog.
#[derive(ToSchema)]
pub struct Token {
    audit_ids: Vec<String>,
    methods: Vec<String>,
    /// `2015-11-07T02:58:43.578887Z`.
    expires_at: String,
    issued_at: String,
    user: TokenUser,
    project: Option<TokenProject>,
    is_domain: Option<bool>,
    domain: Option<IdName>,
    system: Option<TokenSystem>,
    roles: Option<Vec<IdName>>,
    /// Left out with `nocatalog`.
    catalog: Option<Vec<CatalogService>>,
}

#[derive(ToSchema)]
pub struct TokenEnvelope {
    token: Token,
}

/// One enabled service with its enabled endpoints.
#[derive(ToSchema)]
pub struct CatalogService {
    id: String,
    #[schema(rename = "type")]
    service_type: String,
    name: String,
    endpoints: Vec<CatalogEndpoint>,
}

#[derive(ToSchema)]
pub struct CatalogEndpoint {
    id: String,
    interface: String,
    region: Option<String>,
    region_id: Option<String>,
    url: String,
}

#[derive(ToSchema)]
pub struct CatalogList {
    catalog: Vec<CatalogService>,
    links: CollectionLinks,
}

#[derive(ToSchema)]
pub struct SystemScopes {
    /// `[{"all": true}]` when the caller holds a role on the system, else empty.
    system: Vec<TokenSystem>,
    links: CollectionLinks,
}
