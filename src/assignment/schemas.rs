//! Bodies of the role, role inference, grant and role assignment APIs. The request types are
//! the ones the handlers parse (fields as [`Sent`], so the handlers answer wrong types with
//! Keystone's messages); extra properties are accepted and echoed back.
#![allow(dead_code)]

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::http::body::Sent;
use crate::http::fields::Obj;
use crate::http::openapi::{CollectionLinks, SelfLink};

/// A role; global when `domain_id` is null, domain-specific otherwise.
#[derive(ToSchema)]
pub struct Role {
    id: String,
    name: String,
    domain_id: Option<String>,
    description: Option<String>,
    /// Resource options, e.g. `{"immutable": true}`.
    options: BTreeMap<String, Value>,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct RoleEnvelope {
    role: Role,
}

/// Roles, also the answer of a grant listing (roles granted directly on a target).
#[derive(ToSchema)]
pub struct RoleList {
    roles: Vec<Role>,
    links: CollectionLinks,
}

/// Other attributes are kept and echoed back.
#[derive(Deserialize, ToSchema)]
pub struct RoleCreate {
    /// Ignored: the id is generated.
    #[serde(default, rename = "id")]
    #[schema(value_type = Option<String>)]
    pub _id: Sent<Value>,
    #[serde(default)]
    #[schema(value_type = String, required = true)]
    pub name: Sent<String>,
    /// Makes the role domain-specific.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub domain_id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub description: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<BTreeMap<String, Value>>)]
    pub options: Sent<Obj>,
    #[serde(flatten)]
    #[schema(value_type = std::collections::BTreeMap<String, serde_json::Value>)]
    pub extra: Obj,
}

#[derive(Deserialize, ToSchema)]
pub struct RoleCreateRequest {
    #[serde(default)]
    #[schema(value_type = RoleCreate, required = true)]
    pub role: Sent<RoleCreate>,
}

/// Other attributes are kept and echoed back.
#[derive(Deserialize, ToSchema)]
pub struct RoleUpdate {
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
    #[schema(value_type = Option<BTreeMap<String, Value>>)]
    pub options: Sent<Obj>,
    /// Must be the current value when given: a role does not move.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub domain_id: Sent<String>,
    #[serde(flatten)]
    #[schema(value_type = std::collections::BTreeMap<String, serde_json::Value>)]
    pub extra: Obj,
}

#[derive(Deserialize, ToSchema)]
pub struct RoleUpdateRequest {
    #[serde(default)]
    #[schema(value_type = RoleUpdate, required = true)]
    pub role: Sent<RoleUpdate>,
}

/// A role as a member of an inference rule.
#[derive(ToSchema)]
pub struct RoleRef {
    id: String,
    name: String,
    /// Present for domain-specific roles.
    domain_id: Option<String>,
    links: SelfLink,
}

/// One rule: the prior role implies one role.
#[derive(ToSchema)]
pub struct InferenceRule {
    prior_role: RoleRef,
    implies: RoleRef,
}

#[derive(ToSchema)]
pub struct InferenceRuleEnvelope {
    role_inference: InferenceRule,
    links: SelfLink,
}

/// The rules of one prior role: `implies` is a list here.
#[derive(ToSchema)]
pub struct PriorRoleInferences {
    prior_role: RoleRef,
    implies: Vec<RoleRef>,
}

#[derive(ToSchema)]
pub struct PriorRoleInferencesEnvelope {
    role_inference: PriorRoleInferences,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct RoleInferenceList {
    role_inferences: Vec<PriorRoleInferences>,
    links: SelfLink,
}

/// A reference by id, with `name` (and the owning `domain`) when `include_names` is set.
#[derive(ToSchema)]
pub struct NamedRef {
    id: String,
    name: Option<String>,
    domain: Option<DomainRef>,
}

#[derive(ToSchema)]
pub struct DomainRef {
    id: String,
    name: Option<String>,
}

/// Exactly one of `project`, `domain` or `system`.
#[derive(ToSchema)]
pub struct AssignmentScope {
    project: Option<NamedRef>,
    domain: Option<DomainRef>,
    system: Option<SystemAll>,
    /// `projects` for an inherited grant (OS-INHERIT), or an assignment that comes from one.
    #[schema(rename = "OS-INHERIT:inherited_to")]
    inherited_to: Option<String>,
}

#[derive(ToSchema)]
pub struct SystemAll {
    all: bool,
}

#[derive(ToSchema)]
pub struct AssignmentLinks {
    /// The URL of the underlying grant.
    assignment: String,
    /// With `effective`: the group membership the assignment comes through.
    membership: Option<String>,
    /// With `effective`: the inference rule the role comes through.
    prior_role: Option<String>,
}

/// One role assignment: a role, exactly one of `user` or `group`, and a scope.
#[derive(ToSchema)]
pub struct RoleAssignment {
    role: NamedRef,
    user: Option<NamedRef>,
    group: Option<NamedRef>,
    scope: AssignmentScope,
    links: AssignmentLinks,
}

#[derive(ToSchema)]
pub struct RoleAssignmentList {
    role_assignments: Vec<RoleAssignment>,
    links: CollectionLinks,
}
