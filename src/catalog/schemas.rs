//! OpenAPI schemas of the region, service and endpoint bodies. Schema only: the handlers build
//! and read JSON directly. Extra properties are accepted and echoed back.
#![allow(dead_code)]

use utoipa::ToSchema;

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

#[derive(ToSchema)]
pub struct RegionCreate {
    /// Generated when absent (POST); must match the path when given (PUT).
    id: Option<String>,
    description: Option<String>,
    parent_region_id: Option<String>,
}

#[derive(ToSchema)]
pub struct RegionCreateRequest {
    region: RegionCreate,
}

#[derive(ToSchema)]
pub struct RegionUpdate {
    description: Option<String>,
    parent_region_id: Option<String>,
}

#[derive(ToSchema)]
pub struct RegionUpdateRequest {
    region: RegionUpdate,
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

#[derive(ToSchema)]
pub struct ServiceCreate {
    #[schema(rename = "type")]
    service_type: String,
    name: Option<String>,
    /// Default true.
    enabled: Option<bool>,
    description: Option<String>,
}

#[derive(ToSchema)]
pub struct ServiceCreateRequest {
    service: ServiceCreate,
}

#[derive(ToSchema)]
pub struct ServiceUpdate {
    #[schema(rename = "type")]
    service_type: Option<String>,
    name: Option<String>,
    enabled: Option<bool>,
    description: Option<String>,
}

#[derive(ToSchema)]
pub struct ServiceUpdateRequest {
    service: ServiceUpdate,
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

#[derive(ToSchema)]
pub struct EndpointCreate {
    /// `public`, `internal` or `admin`.
    interface: String,
    service_id: String,
    url: String,
    region_id: Option<String>,
    /// Deprecated alias of `region_id`.
    region: Option<String>,
    /// Default true.
    enabled: Option<bool>,
}

#[derive(ToSchema)]
pub struct EndpointCreateRequest {
    endpoint: EndpointCreate,
}

#[derive(ToSchema)]
pub struct EndpointUpdate {
    interface: Option<String>,
    service_id: Option<String>,
    url: Option<String>,
    region_id: Option<String>,
    region: Option<String>,
    enabled: Option<bool>,
}

#[derive(ToSchema)]
pub struct EndpointUpdateRequest {
    endpoint: EndpointUpdate,
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

#[derive(ToSchema)]
pub struct PolicyBody {
    /// Required on create.
    blob: Option<String>,
    /// Required on create; at most 255 characters.
    #[schema(rename = "type")]
    policy_type: Option<String>,
}

#[derive(ToSchema)]
pub struct PolicyRequest {
    policy: PolicyBody,
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

#[derive(ToSchema)]
pub struct EndpointGroupBody {
    /// Required on create.
    name: Option<String>,
    description: Option<String>,
    /// Required on create: a non-empty object.
    #[schema(value_type = Option<Object>)]
    filters: Option<serde_json::Value>,
}

#[derive(ToSchema)]
pub struct EndpointGroupRequest {
    endpoint_group: EndpointGroupBody,
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
