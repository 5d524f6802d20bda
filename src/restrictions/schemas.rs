//! Bodies of `/v4/tokens/restrictions` (api-shapes §13.3).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A role as a restriction names it: by id (a name alone is looked up as a global role).
#[derive(Deserialize, Serialize, ToSchema, Clone)]
#[serde(deny_unknown_fields)]
pub struct RoleRef {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    /// The role's domain, for a domain-specific role named by name.
    #[serde(default)]
    pub domain_id: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateBody {
    /// The owning domain.
    pub domain_id: String,
    /// Only this user's tokens may stand on the restriction.
    #[serde(default)]
    pub user_id: Option<String>,
    /// The project its tokens are scoped to; absent: the project a login asks for.
    #[serde(default)]
    pub project_id: Option<String>,
    pub allow_renew: bool,
    pub allow_rescope: bool,
    /// At least one: its tokens carry these (and what they imply) where their user holds them.
    pub roles: Vec<RoleRef>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEnvelope {
    pub restriction: CreateBody,
}

/// An absent field is left as it is; `null` clears `user_id` or `project_id`. The domain
/// cannot change.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateBody {
    #[serde(default, deserialize_with = "crate::http::fields::present")]
    #[schema(value_type = Option<String>)]
    pub user_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::http::fields::present")]
    #[schema(value_type = Option<String>)]
    pub project_id: Option<Option<String>>,
    #[serde(default)]
    pub allow_renew: Option<bool>,
    #[serde(default)]
    pub allow_rescope: Option<bool>,
    #[serde(default)]
    pub roles: Option<Vec<RoleRef>>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateEnvelope {
    pub restriction: UpdateBody,
}

/// A restriction as the API shows it.
#[derive(Serialize, ToSchema)]
pub struct RestrictionView {
    pub id: String,
    pub domain_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    pub allow_renew: bool,
    pub allow_rescope: bool,
    pub roles: Vec<RoleRef>,
}

#[derive(Serialize, ToSchema)]
pub struct RestrictionOne {
    pub restriction: RestrictionView,
}

/// A page of restrictions, in id order.
#[derive(Serialize, ToSchema)]
pub struct RestrictionList {
    pub restrictions: Vec<RestrictionView>,
    pub links: crate::http::openapi::CollectionLinks,
}
