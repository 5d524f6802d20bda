//! Bodies of the region, service, endpoint, policy and endpoint group APIs. The request types
//! are the ones the handlers parse (fields as [`Sent`], so the handlers answer wrong types with
//! Keystone's messages); extra properties are accepted and echoed back.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::http::body::Sent;
use crate::http::fields::Obj;
use crate::http::openapi::SelfLink;
use crate::http::wrappers::{envelopes, member_requests};

/// A region; other attributes given at create or update are returned as top-level properties.
#[derive(Serialize, ToSchema)]
pub struct Region {
    // First: the region's own fields win a name both use (`to_json`).
    #[serde(flatten)]
    #[schema(value_type = BTreeMap<String, Value>)]
    pub extra: Obj,
    pub id: String,
    pub description: String,
    pub parent_region_id: Option<String>,
    pub links: SelfLink,
}

envelopes! {
    RegionEnvelope { region: Region }
}

envelopes! { schema_only:
    RegionList { regions: [Region] }
}

/// A region as sent to create or update it: other attributes are kept and echoed back; on
/// update, `null` clears a field.
#[derive(Deserialize, ToSchema)]
pub struct RegionBody {
    /// Create: generated when absent or empty (POST), must match the path when given (PUT).
    /// Update: must be the region's own id when given.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub description: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub parent_region_id: Sent<String>,
    #[serde(flatten)]
    #[schema(value_type = BTreeMap<String, Value>)]
    pub extra: Obj,
}

member_requests! {
    RegionRequest { region: RegionBody }
}

/// A catalog service. Disabled services and their endpoints are left out of token catalogs.
/// Other attributes given at create or update are returned as top-level properties.
#[derive(Serialize, ToSchema)]
pub struct Service {
    // First: the service's own fields win a name both use (`to_json`).
    #[serde(flatten)]
    #[schema(value_type = BTreeMap<String, Value>)]
    pub extra: Obj,
    pub id: String,
    #[serde(rename = "type")]
    #[schema(example = "identity")]
    pub service_type: String,
    pub name: String,
    pub enabled: bool,
    /// Absent when the service has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub links: SelfLink,
}

envelopes! {
    ServiceEnvelope { service: Service }
}

envelopes! { schema_only:
    ServiceList { services: [Service] }
}

/// What a service's create and update bodies share; other attributes are kept and echoed
/// back.
#[derive(Deserialize, ToSchema)]
pub struct ServiceFields {
    #[serde(default)]
    #[schema(value_type = String)]
    pub name: Sent<String>,
    /// Default true.
    #[serde(default)]
    #[schema(value_type = bool)]
    pub enabled: Sent<bool>,
    /// `null` clears it.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub description: Sent<String>,
    #[serde(flatten)]
    #[schema(value_type = BTreeMap<String, Value>)]
    pub extra: Obj,
}

#[derive(Deserialize, ToSchema)]
pub struct ServiceCreate {
    /// Ignored: the id is generated.
    #[serde(default, rename = "id")]
    #[schema(value_type = Option<String>)]
    pub _id: Sent<String>,
    #[serde(default, rename = "type")]
    #[schema(value_type = String, required = true)]
    pub service_type: Sent<String>,
    #[serde(flatten)]
    pub fields: ServiceFields,
}

member_requests! {
    ServiceCreateRequest { service: ServiceCreate }
}

#[derive(Deserialize, ToSchema)]
pub struct ServiceUpdate {
    /// Must be the service's own id when given.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub id: Sent<String>,
    #[serde(default, rename = "type")]
    #[schema(value_type = String)]
    pub service_type: Sent<String>,
    #[serde(flatten)]
    pub fields: ServiceFields,
}

member_requests! {
    ServiceUpdateRequest { service: ServiceUpdate }
}

/// A service endpoint; other attributes given at create or update are returned as top-level
/// properties.
#[derive(Serialize, ToSchema)]
pub struct Endpoint {
    // First: the endpoint's own fields win a name both use (`to_json`).
    #[serde(flatten)]
    #[schema(value_type = BTreeMap<String, Value>)]
    pub extra: Obj,
    pub id: String,
    /// `public`, `internal` or `admin`.
    pub interface: String,
    pub service_id: String,
    pub region_id: Option<String>,
    /// Deprecated alias of `region_id`.
    pub region: Option<String>,
    pub url: String,
    pub enabled: bool,
    pub links: SelfLink,
}

envelopes! {
    EndpointEnvelope { endpoint: Endpoint }
}

envelopes! { schema_only:
    EndpointList { endpoints: [Endpoint] }
}

/// What an endpoint's create and update bodies share; other attributes are kept and echoed
/// back.
#[derive(Deserialize, ToSchema)]
pub struct EndpointFields {
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub region_id: Sent<String>,
    /// Deprecated alias of `region_id`; names a region that is created when missing.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub region: Sent<String>,
    /// Default true.
    #[serde(default)]
    #[schema(value_type = bool)]
    pub enabled: Sent<bool>,
    #[serde(flatten)]
    #[schema(value_type = BTreeMap<String, Value>)]
    pub extra: Obj,
}

#[derive(Deserialize, ToSchema)]
pub struct EndpointCreate {
    /// Ignored: the id is generated.
    #[serde(default, rename = "id")]
    #[schema(value_type = Option<String>)]
    pub _id: Sent<String>,
    /// `public`, `internal` or `admin`.
    #[serde(default)]
    #[schema(value_type = String, required = true)]
    pub interface: Sent<String>,
    #[serde(default)]
    #[schema(value_type = String, required = true)]
    pub service_id: Sent<String>,
    /// `scheme:rest`, at most 225 characters.
    #[serde(default)]
    #[schema(value_type = String, required = true)]
    pub url: Sent<String>,
    #[serde(flatten)]
    pub fields: EndpointFields,
}

member_requests! {
    EndpointCreateRequest { endpoint: EndpointCreate }
}

#[derive(Deserialize, ToSchema)]
pub struct EndpointUpdate {
    /// Must be the endpoint's own id when given.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = String)]
    pub interface: Sent<String>,
    #[serde(default)]
    #[schema(value_type = String)]
    pub service_id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = String)]
    pub url: Sent<String>,
    #[serde(flatten)]
    pub fields: EndpointFields,
}

member_requests! {
    EndpointUpdateRequest { endpoint: EndpointUpdate }
}

/// A policy blob (`/v3/policies`): an opaque document for services; extra attributes are
/// kept and echoed. The fields are the stored record's, as they were accepted.
#[derive(Serialize, ToSchema)]
pub struct Policy {
    // First: the policy's own fields win a name both use (`to_json`).
    #[serde(flatten)]
    #[schema(value_type = BTreeMap<String, Value>)]
    pub extra: Obj,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String)]
    pub id: Option<Value>,
    /// The policy document, a string.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String)]
    pub blob: Option<Value>,
    /// Its media type, e.g. `application/json`.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String)]
    pub policy_type: Option<Value>,
    pub links: SelfLink,
}

envelopes! {
    PolicyEnvelope { policy: Policy }
}

envelopes! { schema_only:
    PolicyList { policies: [Policy] }
}

/// Other attributes are kept and echoed back.
#[derive(Deserialize, ToSchema)]
pub struct PolicyBody {
    /// Required on create.
    #[serde(default)]
    #[schema(value_type = String)]
    pub blob: Sent<String>,
    /// Required on create; at most 255 characters.
    #[serde(default, rename = "type")]
    #[schema(value_type = String)]
    pub policy_type: Sent<String>,
    #[serde(flatten)]
    #[schema(value_type = BTreeMap<String, Value>)]
    pub extra: Obj,
}

member_requests! {
    PolicyRequest { policy: PolicyBody }
}

/// An OS-EP-FILTER endpoint group: the endpoints whose fields equal every filter. The fields
/// are the stored record's, as they were accepted.
#[derive(Serialize, ToSchema)]
pub struct EndpointGroup {
    // Nothing else is accepted at create or update; first: the group's own fields win (`to_json`).
    #[serde(flatten)]
    #[schema(ignore)]
    pub rest: Obj,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String)]
    pub id: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String)]
    pub name: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub description: Option<Value>,
    /// Any of `service_id`, `region_id`, `interface` (public, internal or admin).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Object)]
    pub filters: Option<Value>,
    pub links: SelfLink,
}

envelopes! {
    EndpointGroupEnvelope { endpoint_group: EndpointGroup }
}

envelopes! { schema_only:
    EndpointGroupList { endpoint_groups: [EndpointGroup] }
}

/// No other attributes are allowed.
#[derive(Deserialize, ToSchema)]
pub struct EndpointGroupBody {
    /// Must be the group's own id when given (update); ignored on create.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub id: Sent<Value>,
    /// Required on create.
    #[serde(default)]
    #[schema(value_type = String)]
    pub name: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub description: Sent<Value>,
    /// Required on create: a non-empty object.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub filters: Sent<Value>,
    /// Ignored.
    #[serde(default, rename = "links")]
    #[schema(value_type = Option<Object>)]
    pub _links: Sent<Value>,
    /// Anything else, refused.
    #[serde(flatten)]
    #[schema(ignore)]
    pub extra: Obj,
}

member_requests! {
    EndpointGroupRequest { endpoint_group: EndpointGroupBody }
}

#[derive(Serialize, ToSchema)]
pub struct ProjectEndpointGroup {
    pub endpoint_group_id: String,
    pub project_id: String,
    pub links: SelfLink,
}

envelopes! {
    ProjectEndpointGroupEnvelope { project_endpoint_group: ProjectEndpointGroup }
}
