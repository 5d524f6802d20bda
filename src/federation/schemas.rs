//! OpenAPI schemas of the OS-FEDERATION bodies. Schema only: the handlers read and build JSON
//! with Keystone's checks.
#![allow(dead_code)]

use utoipa::ToSchema;

use crate::http::openapi::{CollectionLinks, SelfLink};

/// An identity provider.
#[derive(ToSchema)]
pub struct IdentityProvider {
    id: String,
    /// The domain its users belong to; created for it when the create body names none.
    domain_id: String,
    /// Defaults to false.
    enabled: bool,
    description: Option<String>,
    /// The provider's entity ids, each held by one provider only.
    remote_ids: Vec<String>,
    /// Minutes group memberships from it stay valid; null for none.
    authorization_ttl: Option<i64>,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct IdentityProviderEnvelope {
    identity_provider: IdentityProvider,
}

#[derive(ToSchema)]
pub struct IdentityProviderList {
    identity_providers: Vec<IdentityProvider>,
    links: CollectionLinks,
}

#[derive(ToSchema)]
pub struct IdentityProviderBody {
    enabled: Option<bool>,
    description: Option<String>,
    remote_ids: Option<Vec<String>>,
    authorization_ttl: Option<i64>,
    /// Create only.
    domain_id: Option<String>,
}

#[derive(ToSchema)]
pub struct IdentityProviderRequest {
    identity_provider: IdentityProviderBody,
}

/// A protocol of an identity provider.
#[derive(ToSchema)]
pub struct Protocol {
    id: String,
    idp_id: String,
    mapping_id: String,
    remote_id_attribute: Option<String>,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct ProtocolEnvelope {
    protocol: Protocol,
}

#[derive(ToSchema)]
pub struct ProtocolList {
    protocols: Vec<Protocol>,
    links: CollectionLinks,
}

#[derive(ToSchema)]
pub struct ProtocolBody {
    /// An existing mapping (400 otherwise).
    mapping_id: String,
    remote_id_attribute: Option<String>,
}

#[derive(ToSchema)]
pub struct ProtocolRequest {
    protocol: ProtocolBody,
}

/// A mapping: rules in Keystone's attribute-mapping schema.
#[derive(ToSchema)]
pub struct Mapping {
    id: String,
    #[schema(value_type = Vec<Object>)]
    rules: Vec<serde_json::Value>,
    /// 1.0 (the default), 2.0 or 3.0.
    schema_version: String,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct MappingEnvelope {
    mapping: Mapping,
}

#[derive(ToSchema)]
pub struct MappingList {
    mappings: Vec<Mapping>,
    links: CollectionLinks,
}

#[derive(ToSchema)]
pub struct MappingBody {
    /// Required on create.
    #[schema(value_type = Option<Vec<Object>>)]
    rules: Option<Vec<serde_json::Value>>,
    schema_version: Option<String>,
}

#[derive(ToSchema)]
pub struct MappingRequest {
    mapping: MappingBody,
}

/// A service provider (another cloud).
#[derive(ToSchema)]
pub struct ServiceProvider {
    id: String,
    auth_url: String,
    sp_url: String,
    description: Option<String>,
    /// Defaults to false; enabled ones are listed in tokens.
    enabled: bool,
    /// Defaults to `ss:mem:`.
    relay_state_prefix: Option<String>,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct ServiceProviderEnvelope {
    service_provider: ServiceProvider,
}

#[derive(ToSchema)]
pub struct ServiceProviderList {
    service_providers: Vec<ServiceProvider>,
    links: CollectionLinks,
}

#[derive(ToSchema)]
pub struct ServiceProviderBody {
    /// Required on create.
    auth_url: Option<String>,
    /// Required on create.
    sp_url: Option<String>,
    description: Option<String>,
    enabled: Option<bool>,
    relay_state_prefix: Option<String>,
}

#[derive(ToSchema)]
pub struct ServiceProviderRequest {
    service_provider: ServiceProviderBody,
}
