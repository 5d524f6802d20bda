//! OpenAPI schemas of application credentials and access rules. Schema only.
#![allow(dead_code)]

use utoipa::ToSchema;

use crate::http::openapi::{CollectionLinks, SelfLink};

#[derive(ToSchema)]
pub struct AccessRule {
    id: String,
    /// The service type, e.g. `compute`.
    service: String,
    /// The API path, `*` and `**` wildcards allowed.
    path: String,
    /// DELETE, GET, HEAD, PATCH, POST or PUT.
    method: String,
}

#[derive(ToSchema)]
pub struct RoleRef {
    id: String,
    name: String,
}

/// An application credential (never with its secret after create).
#[derive(ToSchema)]
pub struct AppCred {
    id: String,
    name: String,
    description: Option<String>,
    user_id: String,
    project_id: String,
    /// `YYYY-MM-DDTHH:MM:SS.ffffff` (UTC), or null for no expiry.
    expires_at: Option<String>,
    /// True lets its tokens manage application credentials.
    unrestricted: Option<bool>,
    roles: Vec<RoleRef>,
    /// Present when the credential has rules.
    access_rules: Option<Vec<AccessRule>>,
    links: SelfLink,
}

/// The create response's credential: as shown later, plus the secret (shown only here).
#[derive(ToSchema)]
pub struct AppCredWithSecret {
    id: String,
    name: String,
    description: Option<String>,
    user_id: String,
    project_id: String,
    expires_at: Option<String>,
    unrestricted: Option<bool>,
    roles: Vec<RoleRef>,
    access_rules: Option<Vec<AccessRule>>,
    secret: String,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct AppCredCreated {
    application_credential: AppCredWithSecret,
}

#[derive(ToSchema)]
pub struct AppCredEnvelope {
    application_credential: AppCred,
}

#[derive(ToSchema)]
pub struct AppCredList {
    application_credentials: Vec<AppCred>,
    links: CollectionLinks,
}

#[derive(ToSchema)]
pub struct AppCredBody {
    /// Unique among the user's credentials.
    name: String,
    description: Option<String>,
    /// Generated (86 characters) when absent.
    secret: Option<String>,
    expires_at: Option<String>,
    unrestricted: Option<bool>,
    /// `{"id"}` or `{"name"}` of roles the caller's token holds; default: all of them.
    #[schema(value_type = Option<Vec<Object>>)]
    roles: Option<Vec<serde_json::Value>>,
    access_rules: Option<Vec<AccessRule>>,
}

#[derive(ToSchema)]
pub struct AppCredRequest {
    application_credential: AppCredBody,
}

#[derive(ToSchema)]
pub struct AccessRuleWithLinks {
    id: String,
    service: String,
    path: String,
    method: String,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct AccessRuleEnvelope {
    access_rule: AccessRuleWithLinks,
}

#[derive(ToSchema)]
pub struct AccessRuleList {
    access_rules: Vec<AccessRuleWithLinks>,
    links: CollectionLinks,
}
