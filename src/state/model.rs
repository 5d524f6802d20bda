//! Stored records. Encoded with postcard (not self-describing), so free-form JSON
//! (`extra`, `options`) is kept as JSON text. New fields go at the end with serde defaults
//! only through a new record version; never reorder.

use serde::{Deserialize, Serialize};

/// A project; a domain is a project with `is_domain` (as in Keystone).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Project {
    pub id: String,
    pub name: String,
    /// Owning domain; for a domain itself, its own id.
    pub domain_id: String,
    pub description: Option<String>,
    pub enabled: bool,
    pub is_domain: bool,
    pub parent_id: Option<String>,
    pub tags: Vec<String>,
    /// JSON object text of extra attributes echoed back to clients.
    pub extra: String,
    pub options: String,
    pub created_at: i64,
}

/// Serialized bytes a resource's `extra` attributes may take.
pub const MAX_EXTRA_BYTES: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct User {
    pub id: String,
    pub name: String,
    pub domain_id: String,
    pub enabled: bool,
    /// argon2id PHC string; None for a non-local user.
    pub password_hash: Option<String>,
    pub default_project_id: Option<String>,
    pub password_expires_at: Option<i64>,
    pub extra: String,
    pub options: String,
    pub created_at: i64,
    /// Tokens issued before this instant (unix micros) are invalid: set on password change,
    /// disable and delete, like Keystone's revocation by user.
    pub tokens_valid_after: i64,
    /// Federated identities (`federated` in Keystone's user API); their `unique_id`s are
    /// indexed for `GET /v3/users?unique_id=`.
    pub federated: Vec<FederatedIdentity>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FederatedIdentity {
    pub idp_id: String,
    pub protocols: Vec<FederatedProtocol>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FederatedProtocol {
    pub protocol_id: String,
    pub unique_id: String,
}

impl User {
    /// Every `unique_id` of the user's federated identities.
    pub fn unique_ids(&self) -> impl Iterator<Item = &str> {
        self.federated.iter().flat_map(|f| f.protocols.iter().map(|p| p.unique_id.as_str()))
    }
}

/// A group of users, owned by a domain; names are unique per domain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    pub id: String,
    pub name: String,
    pub domain_id: String,
    pub description: Option<String>,
    pub extra: String,
}

/// A user's membership of a group, stored under both orders (see keys.rs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Membership {
    pub group_id: String,
    pub user_id: String,
}

/// A group membership a federated login granted for a while (Keystone's
/// `expiring_user_group_membership`, kept for the `authorization_ttl`): it counts until
/// `expires_at`, and each later login through the same provider that still grants it moves
/// that on. Stored apart from permanent memberships, so an administrator's own grant of the
/// same group is never touched by it. Times are unix microseconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpiringMembership {
    pub group_id: String,
    pub user_id: String,
    /// The provider whose login granted it (`state::providers::Provider::id`).
    pub idp_id: String,
    pub last_verified: i64,
    pub expires_at: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Role {
    pub id: String,
    pub name: String,
    pub domain_id: Option<String>,
    pub description: Option<String>,
    pub extra: String,
    pub options: String,
}

/// Names of the global roles only a cloud administrator may hand out, or hold and still be
/// managed by others (the guard rails, `policy::guard`). The relationship-store driver keeps
/// their relations theirs alone (`openfga::tuples`).
pub const GUARDED_ROLE_NAMES: [&str; 2] = ["admin", "service"];

impl Role {
    /// Whether this is one of the [`GUARDED_ROLE_NAMES`] (a domain's role of that name is not).
    pub fn is_guarded(&self) -> bool {
        self.domain_id.is_none() && GUARDED_ROLE_NAMES.contains(&self.name.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ActorKind {
    User,
    Group,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Target {
    Project(String),
    Domain(String),
    System,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Assignment {
    pub actor_kind: ActorKind,
    pub actor_id: String,
    pub target: Target,
    pub role_id: String,
    pub inherited: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Region {
    pub id: String,
    pub description: Option<String>,
    pub parent_region_id: Option<String>,
    pub extra: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Service {
    pub id: String,
    pub service_type: String,
    pub name: Option<String>,
    pub enabled: bool,
    pub description: Option<String>,
    pub extra: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Endpoint {
    pub id: String,
    pub interface: String,
    pub service_id: String,
    pub region_id: Option<String>,
    pub url: String,
    pub enabled: bool,
    pub extra: String,
}

/// A credential (`/v3/credentials`). The blob is the client's JSON text, kept verbatim; values
/// are sealed at rest like every other record. Signature (`ec2`) credentials have the hex
/// SHA-256 of their access key as id, so a signed request finds its credential by the key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Credential {
    pub id: String,
    pub user_id: String,
    pub project_id: Option<String>,
    pub cred_type: String,
    pub blob: String,
    pub extra: String,
}

/// Written once by bootstrap; its presence makes a second bootstrap a no-op.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BootstrapInfo {
    pub admin_user_id: String,
    pub admin_project_id: String,
    pub admin_role_id: String,
    pub at: i64,
}

/// A revoked token, found by any of its audit ids.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Revocation {
    pub expires_at: i64,
    pub revoked_at: i64,
}

/// The kinds of document records. Part of the log: new kinds go at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum DocKind {
    /// `/v3/policies`.
    Policy,
    /// OS-EP-FILTER endpoint groups.
    EndpointGroup,
    /// An endpoint group's project: id `{group_id}/{project_id}`.
    EndpointGroupProject,
    /// A project's endpoint (OS-EP-FILTER): id `{project_id}/{endpoint_id}`.
    ProjectEndpoint,
    /// OS-FEDERATION identity providers.
    IdentityProvider,
    /// An identity provider's protocol: id `{idp_id}/{protocol_id}`.
    FederationProtocol,
    /// OS-FEDERATION mappings.
    Mapping,
    /// OS-FEDERATION service providers.
    ServiceProvider,
    /// OS-OAUTH1 consumers.
    OAuthConsumer,
    /// A domain's configuration (id: the domain id).
    DomainConfig,
    /// An application credential: id `{user_id}/{credential_id}`.
    ApplicationCredential,
    /// An access rule of a user's application credentials: id `{user_id}/{rule_id}`.
    AccessRule,
    /// An OS-TRUST trust.
    Trust,
    /// An OS-OAUTH1 request token: id `{consumer_id}/{token_id}`.
    OAuthRequestToken,
    /// An OS-OAUTH1 access token: id `{consumer_id}/{token_id}`.
    OAuthAccessToken,
    /// An OS-ENDPOINT-POLICY association, keyed by what it applies to (one policy per key):
    /// id `endpoint/{endpoint_id}`, `service/{service_id}` or `service/{service_id}/{region_id}`.
    PolicyAssociation,
}

impl DocKind {
    /// Short key tag; stable (it is part of stored keys).
    pub fn tag(self) -> &'static str {
        match self {
            DocKind::Policy => "pol",
            DocKind::EndpointGroup => "epg",
            DocKind::EndpointGroupProject => "epgp",
            DocKind::ProjectEndpoint => "pep",
            DocKind::IdentityProvider => "idp",
            DocKind::FederationProtocol => "fedp",
            DocKind::Mapping => "map",
            DocKind::ServiceProvider => "sp",
            DocKind::OAuthConsumer => "oac",
            DocKind::DomainConfig => "dcfg",
            DocKind::ApplicationCredential => "ac",
            DocKind::AccessRule => "ar",
            DocKind::Trust => "tr",
            DocKind::OAuthRequestToken => "oart",
            DocKind::OAuthAccessToken => "oaat",
            DocKind::PolicyAssociation => "pola",
        }
    }

    /// The name error messages use (Keystone's).
    pub fn name(self) -> &'static str {
        match self {
            DocKind::Policy => "policy",
            DocKind::EndpointGroup => "endpoint group",
            DocKind::EndpointGroupProject => "project endpoint group",
            DocKind::ProjectEndpoint => "project endpoint",
            DocKind::IdentityProvider => "Identity Provider",
            DocKind::FederationProtocol => "Federation Protocol",
            DocKind::Mapping => "mapping",
            DocKind::ServiceProvider => "Service Provider",
            DocKind::OAuthConsumer => "Consumer",
            DocKind::DomainConfig => "domain config",
            DocKind::ApplicationCredential => "Application Credential",
            DocKind::AccessRule => "Access Rule",
            DocKind::Trust => "trust",
            DocKind::OAuthRequestToken => "Request token",
            DocKind::OAuthAccessToken => "Access token",
            DocKind::PolicyAssociation => "policy association",
        }
    }

    /// Kinds whose records belong to a record of this kind (ids `{parent_id}/...`) and go
    /// with it.
    pub fn children(self) -> &'static [DocKind] {
        match self {
            DocKind::EndpointGroup => &[DocKind::EndpointGroupProject],
            DocKind::IdentityProvider => &[DocKind::FederationProtocol],
            DocKind::OAuthConsumer => &[DocKind::OAuthRequestToken, DocKind::OAuthAccessToken],
            _ => &[],
        }
    }

    /// Kinds whose records name a record of this kind in a body field (kind, field) and go
    /// with it: for references that are not part of the id.
    pub fn referrers(self) -> &'static [(DocKind, &'static str)] {
        match self {
            DocKind::Policy => &[(DocKind::PolicyAssociation, "policy_id")],
            _ => &[],
        }
    }
}

/// A record of the v3 extension APIs whose only invariants are unique ids, unique values,
/// existing references and cascading deletes (policies, endpoint groups, federation
/// providers, OAuth1 consumers, ...): the service validates and renders the JSON, apply
/// keeps those invariants for every kind alike.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Doc {
    pub kind: DocKind,
    pub id: String,
    /// JSON object text as the API shows it (links are added when rendering).
    pub body: String,
    /// JSON object text the API never shows (secrets; sealed at rest like every value).
    pub private: String,
    /// Values no other record of this kind may hold (an identity provider's remote ids).
    pub unique: Vec<String>,
}

/// A record a command needs to exist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Ref {
    Doc(DocKind, String),
    Domain(String),
    Project(String),
    Endpoint(String),
    User(String),
    Role(String),
    Service(String),
    Region(String),
}

/// A local user's password bookkeeping for `[security_compliance]`: its recent hashes (newest
/// last, the current one included), when and by whom the current one was set, and failed
/// authentications since the last success.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PasswordState {
    pub history: Vec<String>,
    pub set_at: i64,
    /// Set by the user (self-service change) rather than by an administrator.
    pub self_service: bool,
    pub failures: u32,
    pub last_failure_at: i64,
}
