//! Bodies of the role, role inference, grant and role assignment APIs. The request types are
//! the ones the handlers parse (fields as [`Sent`], so the handlers answer wrong types with
//! Keystone's messages); extra properties are accepted and echoed back.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::http::body::Sent;
use crate::http::fields::Obj;
use crate::http::openapi::SelfLink;
use crate::http::wrappers::{envelopes, member_requests};

/// A role; global when `domain_id` is null, domain-specific otherwise. Other attributes given
/// at create or update are returned as top-level properties.
#[derive(Serialize, ToSchema)]
pub struct Role {
    // First: the role's own fields win a name both use (`to_json`).
    #[serde(flatten)]
    #[schema(value_type = BTreeMap<String, Value>)]
    pub extra: Obj,
    pub id: String,
    pub name: String,
    pub domain_id: Option<String>,
    pub description: Option<String>,
    /// Resource options, e.g. `{"immutable": true}`.
    #[schema(value_type = BTreeMap<String, Value>)]
    pub options: Value,
    pub links: SelfLink,
}

envelopes! {
    RoleEnvelope { role: Role }
    /// Roles, also the answer of a grant listing (roles granted directly on a target).
    RoleList { roles: [Role] }
}

/// What a role's create and update bodies share; other attributes are kept and echoed back.
#[derive(Deserialize, ToSchema)]
pub struct RoleFields {
    /// Ignored: the id is generated on create, and does not change.
    #[serde(default, rename = "id")]
    #[schema(value_type = Option<String>)]
    pub _id: Sent<Value>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub description: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<BTreeMap<String, Value>>)]
    pub options: Sent<Obj>,
    #[serde(flatten)]
    #[schema(value_type = BTreeMap<String, Value>)]
    pub extra: Obj,
}

#[derive(Deserialize, ToSchema)]
pub struct RoleCreate {
    #[serde(default)]
    #[schema(value_type = String, required = true)]
    pub name: Sent<String>,
    /// Makes the role domain-specific.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub domain_id: Sent<String>,
    #[serde(flatten)]
    pub fields: RoleFields,
}

member_requests! {
    RoleCreateRequest { role: RoleCreate }
}

#[derive(Deserialize, ToSchema)]
pub struct RoleUpdate {
    #[serde(default)]
    #[schema(value_type = String)]
    pub name: Sent<String>,
    /// Must be the current value when given: a role does not move.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub domain_id: Sent<String>,
    #[serde(flatten)]
    pub fields: RoleFields,
}

member_requests! {
    RoleUpdateRequest { role: RoleUpdate }
}

/// A role as a member of an inference rule.
#[derive(Serialize, ToSchema)]
pub struct RoleRef {
    pub id: String,
    pub name: String,
    /// Present for domain-specific roles.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain_id: Option<String>,
    pub links: SelfLink,
}

/// One rule: the prior role implies one role.
#[derive(Serialize, ToSchema)]
pub struct InferenceRule {
    pub prior_role: RoleRef,
    pub implies: RoleRef,
}

#[derive(Serialize, ToSchema)]
pub struct InferenceRuleEnvelope {
    pub role_inference: InferenceRule,
    pub links: SelfLink,
}

/// The rules of one prior role: `implies` is a list here.
#[derive(Serialize, ToSchema)]
pub struct PriorRoleInferences {
    pub prior_role: RoleRef,
    pub implies: Vec<RoleRef>,
}

#[derive(Serialize, ToSchema)]
pub struct PriorRoleInferencesEnvelope {
    pub role_inference: PriorRoleInferences,
    pub links: SelfLink,
}

#[derive(Serialize, ToSchema)]
pub struct RoleInferenceList {
    pub role_inferences: Vec<PriorRoleInferences>,
    pub links: SelfLink,
}

/// A reference by id, with `name` (and the owning `domain`) when `include_names` is set.
#[derive(Serialize, ToSchema, Default)]
pub struct NamedRef {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<DomainRef>,
}

#[derive(Serialize, ToSchema)]
pub struct DomainRef {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// Exactly one of `project`, `domain` or `system`.
#[derive(Serialize, ToSchema, Default)]
pub struct AssignmentScope {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<NamedRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<DomainRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system: Option<SystemAll>,
    /// `projects` for an inherited grant (OS-INHERIT), or an assignment that comes from one.
    #[serde(rename = "OS-INHERIT:inherited_to", skip_serializing_if = "Option::is_none")]
    pub inherited_to: Option<String>,
}

envelopes! {
    SystemAll { all: bool }
}

#[derive(Serialize, ToSchema)]
pub struct AssignmentLinks {
    /// The URL of the underlying grant.
    pub assignment: String,
    /// With `effective`: the group membership the assignment comes through.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub membership: Option<String>,
    /// With `effective`: the inference rule the role comes through.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prior_role: Option<String>,
}

/// One role assignment: a role, exactly one of `user` or `group`, and a scope.
#[derive(Serialize, ToSchema)]
pub struct RoleAssignment {
    pub role: NamedRef,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<NamedRef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<NamedRef>,
    pub scope: AssignmentScope,
    pub links: AssignmentLinks,
}

envelopes! {
    RoleAssignmentList { role_assignments: [RoleAssignment] }
}
