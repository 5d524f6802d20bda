//! OpenAPI schemas of the role, role inference, grant and role assignment bodies. Schema only:
//! the handlers build and read JSON directly. Extra properties are accepted and echoed back.
#![allow(dead_code)]

use std::collections::BTreeMap;

use serde_json::Value;
use utoipa::ToSchema;

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

#[derive(ToSchema)]
pub struct RoleCreate {
    name: String,
    /// Makes the role domain-specific.
    domain_id: Option<String>,
    description: Option<String>,
    options: Option<BTreeMap<String, Value>>,
}

#[derive(ToSchema)]
pub struct RoleCreateRequest {
    role: RoleCreate,
}

#[derive(ToSchema)]
pub struct RoleUpdate {
    name: Option<String>,
    description: Option<String>,
    options: Option<BTreeMap<String, Value>>,
}

#[derive(ToSchema)]
pub struct RoleUpdateRequest {
    role: RoleUpdate,
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
