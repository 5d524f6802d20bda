//! Bodies of application credentials and access rules. The request types are the ones the
//! handlers parse (fields as [`Sent`], so the handlers answer wrong types with Keystone's
//! messages).
#![allow(dead_code)]

use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::http::body::Sent;
use crate::http::fields::Obj;
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

/// No other attributes are allowed.
#[derive(Deserialize, ToSchema)]
pub struct AppCredBody {
    /// Unique among the user's credentials; 1 to 255 characters.
    #[serde(default)]
    #[schema(value_type = String, required = true)]
    pub name: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub description: Sent<String>,
    /// Generated (86 characters) when absent or empty.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub secret: Sent<String>,
    /// An ISO 8601 time in the future.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub expires_at: Sent<String>,
    /// True lets its tokens manage application credentials.
    #[serde(default)]
    #[schema(value_type = Option<bool>)]
    pub unrestricted: Sent<bool>,
    /// `{"id"}` or `{"name"}` of roles the caller's token holds; default: all of them.
    #[serde(default)]
    #[schema(value_type = Option<Vec<Object>>)]
    pub roles: Sent<Vec<Value>>,
    /// Rules by `id` (the user's existing ones) or by `service`, `path` and `method`.
    #[serde(default)]
    #[schema(value_type = Option<Vec<AccessRule>>)]
    pub access_rules: Sent<Vec<Value>>,
    /// Ignored: the id is generated.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub id: Sent<Value>,
    /// Ignored: the token's project.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub project_id: Sent<Value>,
    /// Ignored.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub system: Sent<Value>,
    /// Anything else, refused.
    #[serde(flatten)]
    #[schema(ignore)]
    pub extra: Obj,
}

/// Nothing besides `application_credential` is allowed.
#[derive(Deserialize, ToSchema)]
pub struct AppCredRequest {
    #[serde(default)]
    #[schema(value_type = AppCredBody, required = true)]
    pub application_credential: Sent<AppCredBody>,
    /// Anything else, refused.
    #[serde(flatten)]
    #[schema(ignore)]
    pub extra: Obj,
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
