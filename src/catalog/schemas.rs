//! Bodies of the region, service, endpoint, policy and endpoint group APIs. The request types
//! are the ones the handlers parse (fields as [`Sent`], so the handlers answer wrong types with
//! Keystone's messages); extra properties are accepted and echoed back.
#![allow(dead_code)]

use serde::Deserialize;
use utoipa::ToSchema;

use crate::http::body::Sent;
use crate::http::fields::Obj;
use crate::http::openapi::{CollectionLinks, SelfLink};

#[derive(ToSchema)]
pub struct Region {
    id: String,
    description: String,
    parent_region_id: Option<String>,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct RegionEnvelope {
    region: Region,
}

#[derive(ToSchema)]
pub struct RegionList {
    regions: Vec<Region>,
    links: CollectionLinks,
}

/// Other attributes are kept and echoed back.
#[derive(Deserialize, ToSchema)]
pub struct RegionCreate {
    /// Generated when absent or empty (POST); must match the path when given (PUT).
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
    #[schema(value_type = std::collections::BTreeMap<String, serde_json::Value>)]
    pub extra: Obj,
}

#[derive(Deserialize, ToSchema)]
pub struct RegionCreateRequest {
    #[serde(default)]
    #[schema(value_type = RegionCreate, required = true)]
    pub region: Sent<RegionCreate>,
}

/// Other attributes are kept and echoed back; `null` clears a field.
#[derive(Deserialize, ToSchema)]
pub struct RegionUpdate {
    /// Must be the region's own id when given.
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
    #[schema(value_type = std::collections::BTreeMap<String, serde_json::Value>)]
    pub extra: Obj,
}

#[derive(Deserialize, ToSchema)]
pub struct RegionUpdateRequest {
    #[serde(default)]
    #[schema(value_type = RegionUpdate, required = true)]
    pub region: Sent<RegionUpdate>,
}

/// A catalog service. Disabled services and their endpoints are left out of token catalogs.
#[derive(ToSchema)]
pub struct Service {
    id: String,
    #[schema(rename = "type", example = "identity")]
    service_type: String,
    name: String,
    enabled: bool,
    description: Option<String>,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct ServiceEnvelope {
    service: Service,
}

#[derive(ToSchema)]
pub struct ServiceList {
    services: Vec<Service>,
    links: CollectionLinks,
}

/// Other attributes are kept and echoed back.
#[derive(Deserialize, ToSchema)]
pub struct ServiceCreate {
    /// Ignored: the id is generated.
    #[serde(default, rename = "id")]
    #[schema(value_type = Option<String>)]
    pub _id: Sent<String>,
    #[serde(default, rename = "type")]
    #[schema(value_type = String, required = true)]
    pub service_type: Sent<String>,
    #[serde(default)]
    #[schema(value_type = String)]
    pub name: Sent<String>,
    /// Default true.
    #[serde(default)]
    #[schema(value_type = bool)]
    pub enabled: Sent<bool>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub description: Sent<String>,
    #[serde(flatten)]
    #[schema(value_type = std::collections::BTreeMap<String, serde_json::Value>)]
    pub extra: Obj,
}

#[derive(Deserialize, ToSchema)]
pub struct ServiceCreateRequest {
    #[serde(default)]
    #[schema(value_type = ServiceCreate, required = true)]
    pub service: Sent<ServiceCreate>,
}

/// Other attributes are kept and echoed back.
#[derive(Deserialize, ToSchema)]
pub struct ServiceUpdate {
    /// Must be the service's own id when given.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub id: Sent<String>,
    #[serde(default, rename = "type")]
    #[schema(value_type = String)]
    pub service_type: Sent<String>,
    #[serde(default)]
    #[schema(value_type = String)]
    pub name: Sent<String>,
    #[serde(default)]
    #[schema(value_type = bool)]
    pub enabled: Sent<bool>,
    /// `null` clears it.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub description: Sent<String>,
    #[serde(flatten)]
    #[schema(value_type = std::collections::BTreeMap<String, serde_json::Value>)]
    pub extra: Obj,
}

#[derive(Deserialize, ToSchema)]
pub struct ServiceUpdateRequest {
    #[serde(default)]
    #[schema(value_type = ServiceUpdate, required = true)]
    pub service: Sent<ServiceUpdate>,
}

/// A service endpoint.
#[derive(ToSchema)]
pub struct Endpoint {
    id: String,
    /// `public`, `internal` or `admin`.
    interface: String,
    service_id: String,
    region_id: Option<String>,
    /// Deprecated alias of `region_id`.
    region: Option<String>,
    url: String,
    enabled: bool,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct EndpointEnvelope {
    endpoint: Endpoint,
}

#[derive(ToSchema)]
pub struct EndpointList {
    endpoints: Vec<Endpoint>,
    links: CollectionLinks,
}

/// Other attributes are kept and echoed back.
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
    #[schema(value_type = std::collections::BTreeMap<String, serde_json::Value>)]
    pub extra: Obj,
}

#[derive(Deserialize, ToSchema)]
pub struct EndpointCreateRequest {
    #[serde(default)]
    #[schema(value_type = EndpointCreate, required = true)]
    pub endpoint: Sent<EndpointCreate>,
}

/// Other attributes are kept and echoed back.
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
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub region_id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub region: Sent<String>,
    #[serde(default)]
    #[schema(value_type = bool)]
    pub enabled: Sent<bool>,
    #[serde(flatten)]
    #[schema(value_type = std::collections::BTreeMap<String, serde_json::Value>)]
    pub extra: Obj,
}

#[derive(Deserialize, ToSchema)]
pub struct EndpointUpdateRequest {
    #[serde(default)]
    #[schema(value_type = EndpointUpdate, required = true)]
    pub endpoint: Sent<EndpointUpdate>,
}

/// A policy blob (`/v3/policies`): an opaque document for services; extra attributes are
/// kept and echoed.
#[derive(ToSchema)]
pub struct Policy {
    id: String,
    /// The policy document, a string.
    blob: String,
    /// Its media type, e.g. `application/json`.
    #[schema(rename = "type")]
    policy_type: String,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct PolicyEnvelope {
    policy: Policy,
}

#[derive(ToSchema)]
pub struct PolicyList {
    policies: Vec<Policy>,
    links: CollectionLinks,
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
    #[schema(value_type = std::collections::BTreeMap<String, serde_json::Value>)]
    pub extra: Obj,
}

#[derive(Deserialize, ToSchema)]
pub struct PolicyRequest {
    #[serde(default)]
    #[schema(value_type = PolicyBody, required = true)]
    pub policy: Sent<PolicyBody>,
}

/// An OS-EP-FILTER endpoint group: the endpoints whose fields equal every filter.
#[derive(ToSchema)]
pub struct EndpointGroup {
    id: String,
    name: String,
    description: Option<String>,
    /// Any of `service_id`, `region_id`, `interface` (public, internal or admin).
    #[schema(value_type = Object)]
    filters: serde_json::Value,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct EndpointGroupEnvelope {
    endpoint_group: EndpointGroup,
}

#[derive(ToSchema)]
pub struct EndpointGroupList {
    endpoint_groups: Vec<EndpointGroup>,
    links: CollectionLinks,
}

/// No other attributes are allowed.
#[derive(Deserialize, ToSchema)]
pub struct EndpointGroupBody {
    /// Must be the group's own id when given (update); ignored on create.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub id: Sent<serde_json::Value>,
    /// Required on create.
    #[serde(default)]
    #[schema(value_type = String)]
    pub name: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub description: Sent<serde_json::Value>,
    /// Required on create: a non-empty object.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub filters: Sent<serde_json::Value>,
    /// Ignored.
    #[serde(default, rename = "links")]
    #[schema(value_type = Option<Object>)]
    pub _links: Sent<serde_json::Value>,
    /// Anything else, refused.
    #[serde(flatten)]
    #[schema(ignore)]
    pub extra: Obj,
}

#[derive(Deserialize, ToSchema)]
pub struct EndpointGroupRequest {
    #[serde(default)]
    #[schema(value_type = EndpointGroupBody, required = true)]
    pub endpoint_group: Sent<EndpointGroupBody>,
}

#[derive(ToSchema)]
pub struct ProjectEndpointGroup {
    endpoint_group_id: String,
    project_id: String,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct ProjectEndpointGroupEnvelope {
    project_endpoint_group: ProjectEndpointGroup,
}
