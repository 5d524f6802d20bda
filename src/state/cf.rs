//! The column families of the identity state (the raft crate adds its own).

/// Projects, including projects acting as domains (`is_domain`), keyed by id.
pub const PROJECTS: &str = "projects";
pub const USERS: &str = "users";
/// Roles (`r/{id}`) and implication rules (`i/{prior}/{implied}`).
pub const ROLES: &str = "roles";
/// Role assignments under three key orders (by actor, by target, by role); see keys.rs.
pub const ASSIGNMENTS: &str = "assignments";
/// Regions (`g/`), services (`s/`) and endpoints (`e/`).
pub const CATALOG: &str = "catalog";
/// Revoked token audit ids with the expiry after which the entry can go.
pub const REVOCATIONS: &str = "revocations";
/// Singletons: bootstrap marker, token key ring, the cluster's index key.
pub const META: &str = "meta";
/// Unique name index: keyed hash of (namespace, scope/name) -> id.
pub const NAMES: &str = "names";
/// Non-unique index: keyed hash of (namespace, term) || id -> ().
pub const MEMBERS: &str = "members";
/// Groups and group memberships (both orders); see keys.rs.
pub const GROUPS: &str = "groups";
/// Credentials (`/v3/credentials`, signature credentials) keyed by id.
pub const CREDENTIALS: &str = "credentials";
/// Document records of the v3 extension APIs (`model::Doc`), keyed `{kind tag}/{id}`.
pub const DOCS: &str = "docs";
/// Password history and failed attempts of local users (`model::PasswordState`), by user id;
/// and per user, the last TOTP step (`t/`) and when the user's information last changed (`u/`).
pub const PASSWORDS: &str = "passwords";
/// The OAuth2 provider's records (`state::oauth2`): keys, clients, codes, device
/// grants, refresh families, consents, revoked access-token ids.
pub const OAUTH2: &str = "oauth2";
/// The provider registries (`state::providers`): OIDC identity providers, Kubernetes
/// cluster issuers, SPIFFE trust domains, and their unique `provider_id` handles.
pub const PROVIDERS: &str = "providers";
/// Mapping rulesets (`state::mapping`), keyed by mapping id.
pub const MAPPINGS: &str = "mappings";
/// The shadow registry of virtual users (`state::shadow`), with its lifecycle indexes.
pub const SHADOW: &str = "shadow";
/// API keys by `client_id`, and the keyed hashes of their secrets (`state::api_keys`).
pub const API_KEYS: &str = "api_keys";
/// SCIM realms (`state::scim`).
pub const SCIM: &str = "scim";
/// Passkeys and their pending ceremonies (`state::passkeys`).
pub const PASSKEYS: &str = "passkeys";
/// Token restrictions by id (`state::restrictions`).
pub const RESTRICTIONS: &str = "restrictions";
/// Registered limits (`g/{id}`) and project or domain limits (`l/{id}`) (`state::limits`).
pub const LIMITS: &str = "limits";

/// Column families of the identity state (the raft crate adds its own).
pub const STATE_CFS: &[&str] = &[
    PROJECTS,
    USERS,
    ROLES,
    ASSIGNMENTS,
    CATALOG,
    REVOCATIONS,
    META,
    NAMES,
    MEMBERS,
    GROUPS,
    CREDENTIALS,
    DOCS,
    PASSWORDS,
    OAUTH2,
    PROVIDERS,
    MAPPINGS,
    SHADOW,
    API_KEYS,
    SCIM,
    PASSKEYS,
    RESTRICTIONS,
    LIMITS,
];
