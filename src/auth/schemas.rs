//! OpenAPI schemas of the token request and token object, and the typed token request.
//!
//! The request is typed down to `identity` and `scope`, which stay JSON: the authentication
//! methods and the scope reader hold them to Keystone's rules and messages field by field (the
//! negative tests of tempest exercise them), and the status of a refusal depends on where it
//! is found (400 for a malformed body, 401 for failed proof), which a serde error cannot tell.
//! The types below `Auth` document what they read.

use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::http::body::{Body, Sent};
use crate::http::error::{ApiError, ApiResult};
use crate::http::openapi::CollectionLinks;

/// `POST /v3/auth/tokens`.
#[derive(Deserialize, ToSchema)]
pub struct AuthRequest {
    #[serde(default)]
    #[schema(value_type = Auth, required = true)]
    pub auth: Sent<Auth>,
}

impl AuthRequest {
    /// The request's `auth`, with Keystone's 400s for a missing `auth` or `identity`.
    pub fn auth(body: Body<Self>) -> ApiResult<Auth> {
        let auth = body.into_inner().map(|b| b.auth).unwrap_or_default();
        match auth {
            Sent::Absent => Err(ApiError::bad_request("'auth' is a required property.")),
            Sent::Is(a) if a.identity.is_present() => Ok(a),
            _ => Err(ApiError::bad_request("'identity' is a required property.")),
        }
    }
}

#[derive(Deserialize, ToSchema)]
pub struct Auth {
    #[serde(default)]
    #[schema(value_type = Identity, required = true)]
    pub identity: Sent<Value>,
    /// `{"project": {"id"} | {"name", "domain": {"id"|"name"}}}`, `{"domain": {"id"|"name"}}`,
    /// `{"system": {"all": true}}`, `{"OS-TRUST:trust": {"id"}}`, or the string `unscoped`.
    /// Absent: the user's default project when usable, else unscoped. Present (even null)
    /// with an application credential: 401.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub scope: Sent<Value>,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: documents the JSON the authentication methods read
pub struct Identity {
    /// `password`, `totp`, `token`, `application_credential`: several prove one user together
    /// (multi-factor rules). `oauth1` (with an empty `oauth1` object): the request is signed
    /// (OAuth 1.0a, HMAC-SHA1, in the `Authorization` header) with a consumer's secret and an
    /// access token's, and the token is scoped to the access token's project.
    methods: Vec<String>,
    password: Option<PasswordMethod>,
    totp: Option<TotpMethod>,
    token: Option<TokenMethod>,
    #[schema(value_type = Option<Object>)]
    oauth1: Option<serde_json::Value>,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: documents the JSON the authentication methods read
pub struct TotpMethod {
    user: TotpUser,
}

/// By `id`, or by `name` with `domain`; the passcode of one of the user's `totp` credentials
/// (RFC 6238: HMAC-SHA1, 6 digits, 30-second steps), each usable once.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: documents the JSON the authentication methods read
pub struct TotpUser {
    id: Option<String>,
    name: Option<String>,
    domain: Option<NameOrId>,
    passcode: String,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: documents the JSON the authentication methods read
pub struct PasswordMethod {
    user: PasswordUser,
}

/// By `id`, or by `name` with `domain`.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: documents the JSON the authentication methods read
pub struct PasswordUser {
    id: Option<String>,
    name: Option<String>,
    domain: Option<NameOrId>,
    password: String,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: documents the JSON the authentication methods read
pub struct NameOrId {
    id: Option<String>,
    name: Option<String>,
}

/// Re-scoping: an existing token stands for the user.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: documents the JSON the authentication methods read
pub struct TokenMethod {
    id: String,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct IdName {
    id: String,
    name: String,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct TokenUser {
    id: String,
    name: String,
    domain: IdName,
    password_expires_at: Option<String>,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct TokenProject {
    id: String,
    name: String,
    domain: IdName,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct TokenSystem {
    all: bool,
}

/// A token. The token itself travels only in the `X-Subject-Token` header, never in a body.
/// At most one of `project`, `domain` and `system`; none for an unscoped token, which has no
/// roles and no catalog.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
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

/// What a user proved so far, when it meets none of their multi-factor rules.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct Receipt {
    methods: Vec<String>,
    user: TokenUser,
    expires_at: String,
    issued_at: String,
}

/// The 401 body that asks for more authentication methods.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct ReceiptEnvelope {
    receipt: Receipt,
    /// The user's rules that share a method with those proven: meeting one issues a token.
    required_auth_methods: Vec<Vec<String>>,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct TokenEnvelope {
    token: Token,
}

/// One enabled service with its enabled endpoints.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct CatalogService {
    id: String,
    #[schema(rename = "type")]
    service_type: String,
    name: String,
    endpoints: Vec<CatalogEndpoint>,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct CatalogEndpoint {
    id: String,
    interface: String,
    region: Option<String>,
    region_id: Option<String>,
    url: String,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct CatalogList {
    catalog: Vec<CatalogService>,
    links: CollectionLinks,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON
pub struct SystemScopes {
    /// `[{"all": true}]` when the caller holds a role on the system, else empty.
    system: Vec<TokenSystem>,
    links: CollectionLinks,
}
