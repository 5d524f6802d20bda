//! Bodies of the domain, project and domain configuration APIs. The request types are the
//! ones the handlers parse (fields as [`Sent`], so the handlers answer wrong types with
//! Keystone's messages); extra properties are accepted and echoed back.
#![allow(dead_code)]

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::http::body::Sent;
use crate::http::fields::Obj;
use crate::http::openapi::{CollectionLinks, SelfLink};

/// A domain. Unknown properties given at create or update are returned as top-level properties.
#[derive(ToSchema)]
pub struct Domain {
    id: String,
    name: String,
    description: Option<String>,
    enabled: bool,
    /// Resource options, e.g. `{"immutable": true}`.
    options: BTreeMap<String, Value>,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct DomainEnvelope {
    domain: Domain,
}

#[derive(ToSchema)]
pub struct DomainList {
    domains: Vec<Domain>,
    links: CollectionLinks,
}

/// Other attributes are kept and echoed back.
#[derive(Deserialize, ToSchema)]
pub struct DomainCreate {
    /// An explicit id (letters, digits, `-`, `_`); generated when absent.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = String, required = true)]
    pub name: Sent<String>,
    /// Default `""`.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub description: Sent<String>,
    /// Default true.
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
    #[schema(value_type = std::collections::BTreeMap<String, serde_json::Value>)]
    pub extra: Obj,
}

#[derive(Deserialize, ToSchema)]
pub struct DomainCreateRequest {
    #[serde(default)]
    #[schema(value_type = DomainCreate, required = true)]
    pub domain: Sent<DomainCreate>,
}

/// Other attributes are kept and echoed back.
#[derive(Deserialize, ToSchema)]
pub struct DomainUpdate {
    /// Must be the domain's own id when given.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = String)]
    pub name: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub description: Sent<String>,
    /// `false` is refused for the caller's own domain.
    #[serde(default)]
    #[schema(value_type = bool)]
    pub enabled: Sent<bool>,
    #[serde(default)]
    #[schema(value_type = Option<BTreeMap<String, Value>>)]
    pub options: Sent<Obj>,
    /// Ignored.
    #[serde(default, rename = "domain_id")]
    #[schema(value_type = Option<String>)]
    pub _domain_id: Sent<Value>,
    /// Ignored.
    #[serde(default, rename = "is_domain")]
    #[schema(value_type = Option<bool>)]
    pub _is_domain: Sent<Value>,
    /// Ignored.
    #[serde(default, rename = "parent_id")]
    #[schema(value_type = Option<String>)]
    pub _parent_id: Sent<Value>,
    #[serde(flatten)]
    #[schema(value_type = std::collections::BTreeMap<String, serde_json::Value>)]
    pub extra: Obj,
}

#[derive(Deserialize, ToSchema)]
pub struct DomainUpdateRequest {
    #[serde(default)]
    #[schema(value_type = DomainUpdate, required = true)]
    pub domain: Sent<DomainUpdate>,
}

/// A project. Unknown properties given at create or update are returned as top-level properties.
#[derive(ToSchema)]
pub struct Project {
    id: String,
    name: String,
    domain_id: String,
    description: Option<String>,
    enabled: bool,
    is_domain: bool,
    parent_id: Option<String>,
    tags: Vec<String>,
    options: BTreeMap<String, Value>,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct ProjectEnvelope {
    project: Project,
}

#[derive(ToSchema)]
pub struct ProjectList {
    projects: Vec<Project>,
    links: CollectionLinks,
}

/// Other attributes are kept and echoed back.
#[derive(Deserialize, ToSchema)]
pub struct ProjectCreate {
    /// Ignored: the id is generated.
    #[serde(default, rename = "id")]
    #[schema(value_type = Option<String>)]
    pub _id: Sent<Value>,
    #[serde(default)]
    #[schema(value_type = String, required = true)]
    pub name: Sent<String>,
    /// Default: the parent's domain, else the caller's domain scope, else `default`. Not allowed with `is_domain`.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub domain_id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub parent_id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub description: Sent<String>,
    /// Default true.
    #[serde(default)]
    #[schema(value_type = bool)]
    pub enabled: Sent<bool>,
    /// Default false; true creates a project acting as a domain.
    #[serde(default)]
    #[schema(value_type = bool)]
    pub is_domain: Sent<bool>,
    #[serde(default)]
    #[schema(value_type = Option<Vec<String>>)]
    pub tags: Sent<Vec<String>>,
    #[serde(default)]
    #[schema(value_type = Option<BTreeMap<String, Value>>)]
    pub options: Sent<Obj>,
    #[serde(flatten)]
    #[schema(value_type = std::collections::BTreeMap<String, serde_json::Value>)]
    pub extra: Obj,
}

#[derive(Deserialize, ToSchema)]
pub struct ProjectCreateRequest {
    #[serde(default)]
    #[schema(value_type = ProjectCreate, required = true)]
    pub project: Sent<ProjectCreate>,
}

/// Other attributes are kept and echoed back.
#[derive(Deserialize, ToSchema)]
pub struct ProjectUpdate {
    /// Ignored.
    #[serde(default, rename = "id")]
    #[schema(value_type = Option<String>)]
    pub _id: Sent<Value>,
    #[serde(default)]
    #[schema(value_type = String)]
    pub name: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub description: Sent<String>,
    #[serde(default)]
    #[schema(value_type = bool)]
    pub enabled: Sent<bool>,
    #[serde(default)]
    #[schema(value_type = Option<Vec<String>>)]
    pub tags: Sent<Vec<String>>,
    #[serde(default)]
    #[schema(value_type = Option<BTreeMap<String, Value>>)]
    pub options: Sent<Obj>,
    /// Must be the current value when given: a project does not move.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub domain_id: Sent<String>,
    /// Must be the current value when given.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub parent_id: Sent<String>,
    /// Must be the current value when given.
    #[serde(default)]
    #[schema(value_type = bool)]
    pub is_domain: Sent<bool>,
    #[serde(flatten)]
    #[schema(value_type = std::collections::BTreeMap<String, serde_json::Value>)]
    pub extra: Obj,
}

#[derive(Deserialize, ToSchema)]
pub struct ProjectUpdateRequest {
    #[serde(default)]
    #[schema(value_type = ProjectUpdate, required = true)]
    pub project: Sent<ProjectUpdate>,
}

/// A domain's configuration: `{"identity": {...}, "ldap": {...}}` with Keystone's whitelisted
/// options (a group or a single option for the narrower paths).
#[derive(Deserialize, ToSchema)]
pub struct DomainConfigEnvelope {
    #[serde(default)]
    #[schema(value_type = Object, required = true)]
    pub config: Sent<Value>,
}

/// `PUT /v3/projects/{id}/tags`: the new tag list (other attributes are ignored).
#[derive(Deserialize, ToSchema)]
pub struct ProjectTags {
    #[serde(default)]
    #[schema(value_type = Vec<String>, required = true)]
    pub tags: Sent<Vec<String>>,
}
