//! The replicated commands. Part of the raft log, so append-only: new variants go at the
//! end, existing ones never change shape. Everything non-deterministic (ids, timestamps,
//! secrets, password hashes) is stamped by the service before the command is built.

use idnode_keys::{IndexKey, TokenKeyRing};
use serde::{Deserialize, Serialize};

use super::model::*;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Command {
    /// Data format 1 (no cluster index key): refused by apply, see `BootstrapCluster`.
    Bootstrap(Box<Bootstrap>),
    CreateProject(Project),
    UpdateProject(Project),
    DeleteProject {
        id: String,
    },
    CreateUser(User),
    UpdateUser(User),
    DeleteUser {
        id: String,
        now: i64,
    },
    /// Revokes tokens by audit id. `expires_at`: when the record may go (the token's expiry
    /// plus the `allow_expired` window, stamped by the service).
    RevokeToken {
        audit_ids: Vec<String>,
        expires_at: i64,
        now: i64,
    },
    CreateGroup(Group),
    UpdateGroup(Group),
    DeleteGroup {
        id: String,
    },
    AddGroupMember {
        group_id: String,
        user_id: String,
    },
    RemoveGroupMember {
        group_id: String,
        user_id: String,
    },
    /// Applies only while the stored hash is still `expected_hash` (the one the service
    /// verified the original password against), so concurrent changes cannot both win.
    ChangePassword {
        user_id: String,
        expected_hash: String,
        new_hash: String,
        now: i64,
    },
    CreateRole(Role),
    UpdateRole(Role),
    DeleteRole {
        id: String,
    },
    CreateImpliedRole {
        prior_role_id: String,
        implied_role_id: String,
    },
    DeleteImpliedRole {
        prior_role_id: String,
        implied_role_id: String,
    },
    CreateGrant(Assignment),
    DeleteGrant(Assignment),
    CreateRegion(Region),
    UpdateRegion(Region),
    DeleteRegion {
        id: String,
    },
    CreateService(Service),
    UpdateService(Service),
    DeleteService {
        id: String,
    },
    CreateEndpoint(Endpoint),
    UpdateEndpoint(Endpoint),
    DeleteEndpoint {
        id: String,
    },
    CreateCredential(Credential),
    UpdateCredential(Credential),
    DeleteCredential {
        id: String,
    },
    /// Bootstrap (data format 2): also installs the cluster's index key, before any name is
    /// indexed, so every replica hashes index terms alike.
    BootstrapCluster {
        index_key: IndexKey,
        bootstrap: Box<Bootstrap>,
    },
    /// Several commands applied as one: all or none.
    All(Vec<Command>),
    /// Creates (`create`: the id must be free) or replaces (it must exist) a document record,
    /// once every record in `requires` exists.
    PutDoc {
        doc: Doc,
        create: bool,
        requires: Vec<Ref>,
    },
    /// Deletes a document record with its children (see `DocKind::children`).
    DeleteDoc {
        kind: DocKind,
        id: String,
    },
    /// Notes a password the user now has (create, admin reset or self-service change): kept
    /// in its history (the last `keep`), `expires_at` becomes the user's
    /// `password_expires_at`, and failed attempts are forgotten.
    RecordPassword {
        user_id: String,
        hash: String,
        at: i64,
        self_service: bool,
        keep: u32,
        expires_at: Option<i64>,
    },
    /// A failed password check. Counting restarts when the previous lockout (`limit`
    /// failures, `lockout_micros` long) is over.
    RecordAuthFailure {
        user_id: String,
        at: i64,
        limit: u32,
        lockout_micros: i64,
    },
    /// A successful password check (or an administrator's update) ends a failure streak.
    ClearAuthFailures {
        user_id: String,
    },
    /// One use of a trust with limited uses (a token was issued for it): refused once none
    /// are left.
    UseTrust {
        id: String,
    },
    /// Changes only the fields a user update named; the others keep whatever they hold when
    /// it applies (so an update racing a password change cannot restore the old hash).
    PatchUser(UserPatch),
    /// The OAuth2 / OpenID Connect provider's state (see `state::oauth2`).
    OAuth2(super::oauth2::OAuth2Command),
    /// The provider registries: OIDC identity providers, Kubernetes cluster issuers, SPIFFE
    /// trust domains (see `state::providers`).
    Providers(super::providers::ProviderCommand),
    /// Mapping rulesets (see `state::mapping`).
    Mapping(super::mapping::MappingCommand),
    /// The shadow registry of virtual users (see `state::shadow`).
    Shadow(super::shadow::ShadowCommand),
    /// API keys (see `state::api_keys`).
    ApiKeys(super::api_keys::ApiKeyCommand),
    /// SCIM realms (see `state::scim`).
    Scim(super::scim::ScimCommand),
    /// Rotates the token key ring: staged → primary → secondary, `new_staged` staged, only
    /// the newest `max_secondary` secondaries kept. Command version 2.
    RotateTokenKeys {
        new_staged: [u8; 32],
        now: i64,
        max_secondary: u32,
    },
    /// Passkeys (see `state::passkeys`); command version 3.
    Passkeys(super::passkeys::PasskeyCommand),
    /// The next `batch` users' aliases from the new derivation of user ids to their ids (see
    /// `state::derived_ids`); command version 4.
    MigrateDerivedUserIds {
        batch: u32,
    },
    /// Token restrictions (see `state::restrictions`); command version 5.
    Restrictions(super::restrictions::RestrictionCommand),
    /// Unified limits (see `state::limits`); command version 8.
    Limits(super::limits::LimitCommand),
    /// A TOTP passcode of `step` (RFC 6238 time step) proved `user_id`: refused when that
    /// user already used a passcode of this step or a later one, so a code works once,
    /// cluster-wide. Command version 8.
    UseTotpStep {
        user_id: String,
        step: u64,
    },
    /// A login proved the password against `old_hash`, a format kept from Keystone: the user's
    /// hash becomes `new_hash` (argon2id of the same password), in the password history too.
    /// Nothing else moves (no token cut-off, no new history entry, no age), and nothing at all
    /// when the stored hash is no longer `old_hash` (a password change came first). Command
    /// version 10.
    RehashPassword {
        user_id: String,
        old_hash: String,
        new_hash: String,
    },
    /// The keys of a Keystone fernet key repository (each as its file holds it), with which
    /// tokens Keystone issued before the move keep validating until they expire; an empty list
    /// forgets them. Refused (writing nothing) when a key is not a fernet key or there are
    /// more than 32 (`apply::token::MAX_KEYSTONE_FERNET_KEYS`). Command version 10.
    SetKeystoneFernetKeys {
        keys: Vec<String>,
    },
    /// Records moved in from Keystone with their ids (see `state::import`): each judged alone,
    /// never overwriting; the answer says what became of each. Command version 11.
    Import {
        records: Vec<super::import::ImportRecord>,
    },
    /// Keystone's `[auth] methods`, in its order: bit `i` of a Keystone token's method mask is
    /// the `i`-th (`idnode_keys::keystone_fernet::method_names`). Empty: Keystone's defaults.
    /// Refused (writing nothing) beyond 64 methods or with an empty name. Command version 11.
    SetKeystoneAuthMethods {
        methods: Vec<String>,
    },
}

/// The fields of a user that an update names (`None`: left as stored).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct UserPatch {
    pub id: String,
    pub name: Option<String>,
    pub enabled: Option<bool>,
    pub default_project_id: Option<Option<String>>,
    pub options: Option<String>,
    pub federated: Option<Vec<FederatedIdentity>>,
    /// `Some(None)` clears the password (a user without one cannot log in with one).
    pub password_hash: Option<Option<String>>,
    /// Extra attributes the request set (a JSON object), merged over the stored ones.
    pub extra: Option<String>,
    /// The service's clock when it built the patch: tokens issued before it die when the
    /// password is set or the user is disabled.
    pub now: i64,
}

/// Everything `idnode bootstrap` creates, in one atomic command.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Bootstrap {
    pub domain: Project,
    pub project: Project,
    pub user: User,
    /// admin, manager, member, reader, service (admin first).
    pub roles: Vec<Role>,
    /// (prior, implied) role ids.
    pub implied: Vec<(String, String)>,
    pub assignments: Vec<Assignment>,
    pub region: Region,
    pub service: Service,
    pub endpoints: Vec<Endpoint>,
    pub token_keys: TokenKeyRing,
    pub at: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Applied {
    Done,
    Project(Project),
    User(User),
    /// `fresh` is false when the cluster had already been bootstrapped.
    Bootstrapped {
        fresh: bool,
    },
    Group(Group),
    Role(Role),
    Region(Region),
    Service(Service),
    Endpoint(Endpoint),
    Credential(Credential),
    Doc(Doc),
    OAuth2(super::oauth2::OAuth2Applied),
    Providers(super::providers::ProviderApplied),
    Mapping(super::mapping::MappingApplied),
    Shadow(super::shadow::ShadowApplied),
    ApiKeys(super::api_keys::ApiKeyApplied),
    Scim(super::scim::ScimApplied),
    Passkeys(super::passkeys::PasskeyApplied),
    Restrictions(super::restrictions::RestrictionApplied),
    Limits(super::limits::LimitApplied),
    /// What became of each record of a `Command::Import`, in order.
    Imported(Vec<super::import::ImportOutcome>),
}

/// Invariant violations found by apply; the service maps them to HTTP errors.
#[derive(Debug, Clone, Serialize, Deserialize, thiserror::Error)]
pub enum ApplyError {
    #[error("Could not find {kind}: {id}.")]
    NotFound { kind: String, id: String },
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Forbidden(String),
    /// A refusal with the spec's HTTP status and `detail` key (mapping administration,
    /// Errors item 7), the key without its `detail.` prefix.
    #[error("{message}")]
    Detailed { status: u16, key: String, message: String },
}

pub type ApplyResult = Result<Applied, ApplyError>;

pub fn not_found(kind: &str, id: &str) -> ApplyError {
    ApplyError::NotFound { kind: kind.to_string(), id: id.to_string() }
}

/// Keystone's `RoleAssignmentNotFound`: "Could not find role assignment with role: R, user or
/// group: A, project, domain, or system: T."
pub fn grant_not_found(a: &Assignment) -> ApplyError {
    let target = match &a.target {
        Target::Project(id) | Target::Domain(id) => id.as_str(),
        Target::System => "system",
    };
    not_found(
        "role assignment with role",
        &format!("{}, user or group: {}, project, domain, or system: {target}", a.role_id, a.actor_id),
    )
}
