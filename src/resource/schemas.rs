//! Bodies of the domain, project and domain configuration APIs. The request types are the
//! ones the handlers parse (fields as [`Sent`], so the handlers answer wrong types with
//! Keystone's messages); extra properties are accepted and echoed back.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::http::body::Sent;
use crate::http::fields::Obj;
use crate::http::openapi::SelfLink;
use crate::http::wrappers::{envelopes, member_requests};

/// A domain. Unknown properties given at create or update are returned as top-level properties.
#[derive(Serialize, ToSchema)]
pub struct Domain {
    // First: the domain's own fields win a name both use (`to_json`).
    #[serde(flatten)]
    #[schema(value_type = BTreeMap<String, Value>)]
    pub extra: Obj,
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    pub enabled: bool,
    /// Resource options, e.g. `{"immutable": true}`.
    #[schema(value_type = BTreeMap<String, Value>)]
    pub options: Value,
    pub links: SelfLink,
}

envelopes! {
    DomainEnvelope { domain: Domain }
}

envelopes! { schema_only:
    DomainList { domains: [Domain] }
}

/// What a domain's create and update bodies share; other attributes are kept and echoed back.
#[derive(Deserialize, ToSchema)]
pub struct DomainFields {
    /// Default `""` on create.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub description: Sent<String>,
    /// Default true on create; `false` is refused for the caller's own domain.
    #[serde(default)]
    #[schema(value_type = bool)]
    pub enabled: Sent<bool>,
    #[serde(default)]
    #[schema(value_type = Option<BTreeMap<String, Value>>)]
    pub options: Sent<Obj>,
    /// Ignored.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub domain_id: Sent<Value>,
    /// Ignored.
    #[serde(default)]
    #[schema(value_type = Option<bool>)]
    pub is_domain: Sent<Value>,
    /// Ignored.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub parent_id: Sent<Value>,
    #[serde(flatten)]
    #[schema(value_type = BTreeMap<String, Value>)]
    pub extra: Obj,
}

#[derive(Deserialize, ToSchema)]
pub struct DomainCreate {
    /// An explicit id (letters, digits, `-`, `_`); generated when absent.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = String, required = true)]
    pub name: Sent<String>,
    #[serde(flatten)]
    pub fields: DomainFields,
}

member_requests! {
    DomainCreateRequest { domain: DomainCreate }
}

#[derive(Deserialize, ToSchema)]
pub struct DomainUpdate {
    /// Must be the domain's own id when given.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = String)]
    pub name: Sent<String>,
    #[serde(flatten)]
    pub fields: DomainFields,
}

member_requests! {
    DomainUpdateRequest { domain: DomainUpdate }
}

/// A project. Unknown properties given at create or update are returned as top-level properties.
#[derive(Serialize, ToSchema)]
pub struct Project {
    // First: the project's own fields win a name both use (`to_json`).
    #[serde(flatten)]
    #[schema(value_type = BTreeMap<String, Value>)]
    pub extra: Obj,
    pub id: String,
    pub name: String,
    pub domain_id: String,
    pub description: Option<String>,
    pub enabled: bool,
    pub is_domain: bool,
    pub parent_id: Option<String>,
    pub tags: Vec<String>,
    #[schema(value_type = BTreeMap<String, Value>)]
    pub options: Value,
    pub links: SelfLink,
}

envelopes! {
    ProjectEnvelope { project: Project }
}

envelopes! { schema_only:
    ProjectList { projects: [Project] }
}

/// What a project's create and update bodies share; other attributes are kept and echoed
/// back.
#[derive(Deserialize, ToSchema)]
pub struct ProjectFields {
    /// Ignored: the id is generated on create, and does not change.
    #[serde(default, rename = "id")]
    #[schema(value_type = Option<String>)]
    pub _id: Sent<Value>,
    /// Create: default the parent's domain, else the caller's domain scope, else `default`; not
    /// allowed with `is_domain`. Update: must be the current value when given (a project does not
    /// move).
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub domain_id: Sent<String>,
    /// Update: must be the current value when given.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub parent_id: Sent<String>,
    /// Create: default false, true creates a project acting as a domain. Update: must be the
    /// current value when given.
    #[serde(default)]
    #[schema(value_type = bool)]
    pub is_domain: Sent<bool>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub description: Sent<String>,
    /// Default true on create.
    #[serde(default)]
    #[schema(value_type = bool)]
    pub enabled: Sent<bool>,
    #[serde(default)]
    #[schema(value_type = Option<Vec<String>>)]
    pub tags: Sent<Vec<String>>,
    #[serde(default)]
    #[schema(value_type = Option<BTreeMap<String, Value>>)]
    pub options: Sent<Obj>,
    #[serde(flatten)]
    #[schema(value_type = BTreeMap<String, Value>)]
    pub extra: Obj,
}

#[derive(Deserialize, ToSchema)]
pub struct ProjectCreate {
    #[serde(default)]
    #[schema(value_type = String, required = true)]
    pub name: Sent<String>,
    #[serde(flatten)]
    pub fields: ProjectFields,
}

member_requests! {
    ProjectCreateRequest { project: ProjectCreate }
}

#[derive(Deserialize, ToSchema)]
pub struct ProjectUpdate {
    #[serde(default)]
    #[schema(value_type = String)]
    pub name: Sent<String>,
    #[serde(flatten)]
    pub fields: ProjectFields,
}

member_requests! {
    ProjectUpdateRequest { project: ProjectUpdate }
}

/// A domain's configuration: `{"identity": {...}, "ldap": {...}}` with Keystone's whitelisted
/// options (a group, or a single option, for the narrower paths).
#[derive(Serialize, ToSchema)]
pub struct DomainConfig {
    #[schema(value_type = Object)]
    pub config: Value,
}

/// A domain's new configuration: `{"identity": {...}, "ldap": {...}}` with Keystone's
/// whitelisted options (a group or a single option for the narrower paths).
#[derive(Deserialize, ToSchema)]
pub struct DomainConfigEnvelope {
    #[serde(default)]
    #[schema(value_type = Object, required = true)]
    pub config: Sent<Value>,
}

/// A project's tags.
#[derive(Serialize, ToSchema)]
pub struct TagList {
    pub tags: Vec<String>,
}

/// `PUT /v3/projects/{id}/tags`: the new tag list (other attributes are ignored).
#[derive(Deserialize, ToSchema)]
pub struct ProjectTags {
    #[serde(default)]
    #[schema(value_type = Vec<String>, required = true)]
    pub tags: Sent<Vec<String>>,
}
