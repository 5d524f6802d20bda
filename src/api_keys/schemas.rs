//! Bodies of `/v4/api-keys` (api-shapes §8).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateBody {
    /// The owning domain.
    pub domain_id: String,
    /// The provider coordinate shared with mapping rulesets and SCIM realms.
    pub provider_id: String,
    /// Mandatory lifetime: an RFC 3339 time in the future.
    pub expires_at: String,
    /// CIDR blocks requests must come from; absent: anywhere.
    #[serde(default)]
    pub allowed_ips: Option<Vec<String>>,
    #[serde(default)]
    pub description: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEnvelope {
    pub api_key: CreateBody,
}

/// An absent field is left as it is; `null` clears `allowed_ips` or `description`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateBody {
    #[serde(default, deserialize_with = "crate::http::fields::present")]
    #[schema(value_type = Option<Vec<String>>)]
    pub allowed_ips: Option<Option<Vec<String>>>,
    #[serde(default, deserialize_with = "crate::http::fields::present")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Option<String>>,
    /// `true` on a revoked key: 409.
    #[serde(default)]
    pub enabled: Option<bool>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateEnvelope {
    pub api_key: UpdateBody,
}

/// The key is named in the body, so its id stays out of proxy logs.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SimulateBody {
    pub client_id: String,
    pub domain_id: String,
}

/// An API key as the API shows it (never its secret or its hash).
#[derive(Serialize, ToSchema)]
pub struct ApiKeyView {
    pub client_id: String,
    pub domain_id: String,
    pub provider_id: String,
    pub enabled: bool,
    pub created_at: String,
    pub expires_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_ips: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub last_used_at: Option<String>,
    pub revoked_at: Option<String>,
    pub revoked_by: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct ApiKeyOne {
    pub api_key: ApiKeyView,
}

/// The create answer: the bearer token appears here only.
#[derive(Serialize, ToSchema)]
pub struct ApiKeyCreated {
    pub api_key: ApiKeyView,
    /// `kscim_<secret>_<checksum>`: shown once.
    pub token: String,
}

/// Schema only (the list is paged as JSON).
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct ApiKeyList {
    pub api_keys: Vec<ApiKeyView>,
    pub links: crate::http::openapi::CollectionLinks,
}

/// `simulate-access`'s answer (api-shapes §8.3).
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: `simulate` writes the body
pub struct SimulateAnswer {
    client_id: String,
    domain_id: String,
    provider_id: String,
    matched: bool,
    /// Only when `matched` is false.
    reason: Option<String>,
    /// Sorted, distinct role names; empty when not matched.
    roles: Vec<String>,
    /// `{"type": "domain", "domain_id"}` or `{"type": "project", "project_id", "project_domain_id"}`; absent when not matched.
    #[schema(value_type = Option<Object>)]
    scope: Option<serde_json::Value>,
}
