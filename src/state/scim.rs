//! SCIM realms and the resources they own (spec "SCIM realm and resource index", api-shapes
//! §11). A realm is one per provider coordinate (`domain_id`, `provider_id`) and names the
//! identity provider (`idp_id`, an OIDC provider of the registry) whose mapping ruleset grants
//! the realm's API keys their roles. Each SCIM user or group is an ordinary user or group of
//! the realm's domain plus an ownership record (`ScimResourceIndex`) saying which realm owns
//! it, its `externalId` and its monotonic `version` (the ETag). In the `scim` column family;
//! times are unix seconds stamped by the service.

use serde::{Deserialize, Serialize};

/// Key layouts of the `scim` column family. Domain and provider ids never hold `/`
/// (`providers::registry::handle`), so the prefixes below cannot run into each other.
pub mod keys {
    use crate::state::scim::Kind;

    pub const REALM_PREFIX: &[u8] = b"r/";
    pub const DEPROVISIONED_PREFIX: &[u8] = b"d/";
    pub fn realm(domain_id: &str, provider_id: &str) -> Vec<u8> {
        format!("r/{domain_id}/{provider_id}").into_bytes()
    }
    /// The ownership record of a user or group.
    pub fn index(kind: Kind, id: &str) -> Vec<u8> {
        format!("i/{}/{id}", kind.tag()).into_bytes()
    }
    /// A realm's live (not deprovisioned) resources of one kind, in id order: `o/…/{id}`.
    pub fn owned_prefix(domain_id: &str, provider_id: &str, kind: Kind) -> Vec<u8> {
        format!("o/{domain_id}/{provider_id}/{}/", kind.tag()).into_bytes()
    }
    pub fn owned(domain_id: &str, provider_id: &str, kind: Kind, id: &str) -> Vec<u8> {
        let mut k = owned_prefix(domain_id, provider_id, kind);
        k.extend_from_slice(id.as_bytes());
        k
    }
    /// Deprovisioned resources awaiting purge, every realm's (the janitor's worklist); the
    /// value is the resource's `deprovisioned_at`.
    pub fn deprovisioned(kind: Kind, id: &str) -> Vec<u8> {
        format!("d/{}/{id}", kind.tag()).into_bytes()
    }
}

/// Names-index namespaces of `externalId`s, unique per domain and kind, case-insensitive.
pub mod ns {
    pub const USER_EXTERNAL_ID: &str = "scim-user-external-id";
    pub const GROUP_EXTERNAL_ID: &str = "scim-group-external-id";
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScimRealm {
    pub domain_id: String,
    pub provider_id: String,
    pub idp_id: String,
    pub display_name: String,
    pub enabled: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

/// What a SCIM resource is (`resource_type` of the spec).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Kind {
    User,
    Group,
}

impl Kind {
    pub fn tag(self) -> &'static str {
        match self {
            Kind::User => "user",
            Kind::Group => "group",
        }
    }
    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "user" => Some(Kind::User),
            "group" => Some(Kind::Group),
            _ => None,
        }
    }
    pub fn external_ns(self) -> &'static str {
        match self {
            Kind::User => ns::USER_EXTERNAL_ID,
            Kind::Group => ns::GROUP_EXTERNAL_ID,
        }
    }
}

/// The ownership record (`ScimResourceIndex`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScimResourceIndex {
    pub domain_id: String,
    pub provider_id: String,
    pub kind: Kind,
    /// The user or group id, also the SCIM `id`.
    pub keystone_id: String,
    pub external_id: Option<String>,
    /// Starts at 1, one more on every change: the `ETag`.
    pub version: u64,
    pub deprovisioned_at: Option<i64>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl ScimResourceIndex {
    /// Whether `realm` owns this resource and it is still live (fencing: anything else is 404).
    pub fn live_in(&self, realm: &RealmRef) -> bool {
        self.domain_id == realm.domain_id && self.provider_id == realm.provider_id && self.deprovisioned_at.is_none()
    }
}

/// The realm a SCIM command acts for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RealmRef {
    pub domain_id: String,
    pub provider_id: String,
}

/// Create, or change a live resource (optionally only at one version: `If-Match`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Expect {
    Create,
    Change { if_match: Option<u64> },
}

/// A field a write sets (`Some`), clears (`Some(None)`) or leaves alone (`None`).
pub type Field<T> = Option<Option<T>>;

/// The SCIM user attributes a write sets; apply merges them over the stored user, so a
/// PATCH cannot lose a concurrent change to another attribute. On create `user_name` and
/// `external_id` are required.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserFields {
    pub user_name: Option<String>,
    pub external_id: Option<String>,
    pub active: Option<bool>,
    pub given_name: Field<String>,
    pub family_name: Field<String>,
    pub display_name: Field<String>,
    pub email: Field<String>,
    /// Whether the kept email was flagged primary (a list without a primary keeps its first,
    /// and says so).
    pub email_primary: Option<bool>,
}

/// How a group write changes its members (ids of users of the same realm).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Members {
    #[default]
    Keep,
    /// PUT and create: exactly these (memberships of users the realm does not own are left
    /// alone: an administrator's additions are not SCIM's to remove).
    Set(Vec<String>),
    /// PATCH: added, then removed.
    Change { add: Vec<String>, remove: Vec<String> },
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupFields {
    pub display_name: Option<String>,
    pub external_id: Field<String>,
    pub members: Members,
}

/// Most members one group write names (spec "Limits").
pub const MAX_MEMBERS_PER_WRITE: usize = 1000;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ScimCommand {
    /// Creates (`create`: the coordinate must be free, the domain exist) or replaces a realm;
    /// its `idp_id` must name a registered OIDC identity provider (404 otherwise).
    PutRealm { realm: Box<ScimRealm>, create: bool },
    /// Creates (with the id the service derived) or changes a realm's user.
    PutUser { realm: RealmRef, id: String, fields: Box<UserFields>, expect: Expect, at: i64 },
    /// Creates (with a server-assigned id) or changes a realm's group.
    PutGroup { realm: RealmRef, id: String, fields: Box<GroupFields>, expect: Expect, at: i64 },
    /// DELETE: a user is disabled (its tokens stop validating); a group loses its role
    /// assignments and is hidden, its membership kept.
    Deprovision { realm: RealmRef, kind: Kind, id: String, at: i64 },
    /// Hard-deletes a deprovisioned resource, and only one deprovisioned at or before
    /// `deprovisioned_by` when given (the janitor's retention).
    Purge { realm: RealmRef, kind: Kind, id: String, deprovisioned_by: Option<i64> },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ScimApplied {
    Realm(Box<ScimRealm>),
    /// The ownership record after a resource write.
    Resource(Box<ScimResourceIndex>),
}

/// Who derives a user id: SCIM (the provider is the realm's coordinate) or a mapped login
/// (the provider is the identity provider's id). Part of the derivation, so a SCIM realm and an
/// identity provider that happen to share an id still derive different users.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DerivedBy {
    Scim,
    Mapped,
}

impl DerivedBy {
    fn tag(self) -> &'static [u8] {
        match self {
            DerivedBy::Scim => b"scim",
            DerivedBy::Mapped => b"mapped",
        }
    }
}

/// The id of the user a provider creates for `subject` in a domain: hex SHA-256 over a
/// version tag and the length-prefixed who, domain, provider and subject. Every part is
/// length-prefixed, so no two different tuples share an input; the provider is included, so
/// two providers of one domain whose subjects are equal derive two users (docs/decisions.md).
pub fn derived_user_id(by: DerivedBy, domain_id: &str, provider_id: &str, subject: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"idnode derived user id v2");
    for part in [by.tag(), domain_id.as_bytes(), provider_id.as_bytes(), subject.as_bytes()] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part);
    }
    hex::encode(h.finalize())
}

/// The first release's derivation: `domain_id`, `"user"` and the subject run together, no
/// provider. Only read to recognise the users it created (`derived_ids`), never to create one.
pub fn legacy_derived_user_id(domain_id: &str, subject: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(domain_id.as_bytes());
    h.update(b"user");
    h.update(subject.as_bytes());
    hex::encode(h.finalize())
}
