//! OpenAPI schemas of the domain and project bodies. Schema only: the handlers build and read
//! JSON directly; these types describe it. Extra properties are accepted and echoed back.
#![allow(dead_code)]

use std::collections::BTreeMap;

use serde_json::Value;
use utoipa::ToSchema;

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

#[derive(ToSchema)]
pub struct DomainCreate {
    /// An explicit id; generated when absent.
    id: Option<String>,
    name: String,
    description: Option<String>,
    /// Default true.
    enabled: Option<bool>,
    options: Option<BTreeMap<String, Value>>,
}

#[derive(ToSchema)]
pub struct DomainCreateRequest {
    domain: DomainCreate,
}

#[derive(ToSchema)]
pub struct DomainUpdate {
    name: Option<String>,
    description: Option<String>,
    enabled: Option<bool>,
    options: Option<BTreeMap<String, Value>>,
}

#[derive(ToSchema)]
pub struct DomainUpdateRequest {
    domain: DomainUpdate,
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

#[derive(ToSchema)]
pub struct ProjectCreate {
    name: String,
    /// Default: the parent's domain, else the caller's domain scope, else `default`. Not allowed with `is_domain`.
    domain_id: Option<String>,
    parent_id: Option<String>,
    description: Option<String>,
    /// Default true.
    enabled: Option<bool>,
    /// Default false; true creates a project acting as a domain.
    is_domain: Option<bool>,
    tags: Option<Vec<String>>,
    options: Option<BTreeMap<String, Value>>,
}

#[derive(ToSchema)]
pub struct ProjectCreateRequest {
    project: ProjectCreate,
}

#[derive(ToSchema)]
pub struct ProjectUpdate {
    name: Option<String>,
    description: Option<String>,
    enabled: Option<bool>,
    tags: Option<Vec<String>>,
    options: Option<BTreeMap<String, Value>>,
}

#[derive(ToSchema)]
pub struct ProjectUpdateRequest {
    project: ProjectUpdate,
}

/// A domain's configuration: `{"identity": {...}, "ldap": {...}}` with Keystone's whitelisted
/// options (a group or a single option for the narrower paths).
#[derive(ToSchema)]
pub struct DomainConfigEnvelope {
    #[schema(value_type = Object)]
    config: serde_json::Value,
}
