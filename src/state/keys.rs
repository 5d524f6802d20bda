//! Key layouts. Ids are random (uuid hex) and safe to keep in keys; names are only ever
//! indexed through keyed hashes (see `names`/`members` column families).

use super::model::{ActorKind, Assignment, DocKind, Target};

pub const META_BOOTSTRAP: &[u8] = b"bootstrap";
pub const META_TOKEN_KEYS: &[u8] = b"token_keys";
/// A Keystone fernet key repository imported so Keystone's tokens keep validating
/// (`Command::SetKeystoneFernetKeys`).
pub const META_KEYSTONE_FERNET: &[u8] = b"keystone_fernet_keys";
pub const META_KEYSTONE_AUTH_METHODS: &[u8] = b"keystone_auth_methods";
/// The cluster's index key (see `index_key.rs`).
pub const META_INDEX_KEY: &[u8] = b"index_key";

/// Revocations are keyed by audit id; their expiry index (`e/{expiry}{audit id}`, the expiry
/// as order-preserving big-endian) shares the column family (audit ids never hold a `/`).
pub const REVOCATION_EXPIRY: &[u8] = b"e/";
pub fn revocation_expiry(expires_at: i64, audit_id: &str) -> Vec<u8> {
    let mut k = REVOCATION_EXPIRY.to_vec();
    k.extend_from_slice(&((expires_at as u64) ^ (1 << 63)).to_be_bytes());
    k.extend_from_slice(audit_id.as_bytes());
    k
}

/// Passwords cf: the last TOTP step a user proved (`t/{user id}`; plain keys there are user ids,
/// which never hold a `/`).
pub fn totp_step(user_id: &str) -> Vec<u8> {
    format!("t/{user_id}").into_bytes()
}

/// Passwords cf: when the user's information last changed (`u/{user id}`, unix micros; see
/// `apply::user_updated`). Kept apart from the user record, which cannot grow a field without
/// breaking the decoding of stored records and snapshots.
pub fn user_updated(user_id: &str) -> Vec<u8> {
    format!("u/{user_id}").into_bytes()
}

pub fn role(id: &str) -> Vec<u8> {
    format!("r/{id}").into_bytes()
}
pub const ROLE_PREFIX: &[u8] = b"r/";
pub fn implied(prior: &str, implied: &str) -> Vec<u8> {
    format!("i/{prior}/{implied}").into_bytes()
}
pub fn implied_prefix(prior: &str) -> Vec<u8> {
    format!("i/{prior}/").into_bytes()
}
pub const IMPLIED_PREFIX: &[u8] = b"i/";

/// Groups cf: groups (`g/{id}`) and memberships by group (`m/{group}/{user}`) and by user
/// (`u/{user}/{group}`).
pub fn group(id: &str) -> Vec<u8> {
    format!("g/{id}").into_bytes()
}
pub const GROUP_PREFIX: &[u8] = b"g/";
pub fn member(group: &str, user: &str) -> Vec<u8> {
    format!("m/{group}/{user}").into_bytes()
}
pub fn members_prefix(group: &str) -> Vec<u8> {
    format!("m/{group}/").into_bytes()
}
pub fn user_group(user: &str, group: &str) -> Vec<u8> {
    format!("u/{user}/{group}").into_bytes()
}
pub fn user_groups_prefix(user: &str) -> Vec<u8> {
    format!("u/{user}/").into_bytes()
}
/// Expiring memberships (`model::ExpiringMembership`), kept twice like permanent ones: by
/// user (`xu/{user}/{group}`, what reads and logins scan) and by group (`xm/{group}/{user}`,
/// so a deleted group takes them along).
pub fn expiring_of_user(user: &str, group: &str) -> Vec<u8> {
    format!("xu/{user}/{group}").into_bytes()
}
pub fn expiring_of_user_prefix(user: &str) -> Vec<u8> {
    format!("xu/{user}/").into_bytes()
}
pub fn expiring_of_group(group: &str, user: &str) -> Vec<u8> {
    format!("xm/{group}/{user}").into_bytes()
}
pub fn expiring_of_group_prefix(group: &str) -> Vec<u8> {
    format!("xm/{group}/").into_bytes()
}

pub fn region(id: &str) -> Vec<u8> {
    format!("g/{id}").into_bytes()
}
pub const REGION_PREFIX: &[u8] = b"g/";
pub fn service(id: &str) -> Vec<u8> {
    format!("s/{id}").into_bytes()
}
pub const SERVICE_PREFIX: &[u8] = b"s/";
pub fn endpoint(id: &str) -> Vec<u8> {
    format!("e/{id}").into_bytes()
}
pub const ENDPOINT_PREFIX: &[u8] = b"e/";

fn actor_part(kind: ActorKind, id: &str) -> String {
    match kind {
        ActorKind::User => format!("U{id}"),
        ActorKind::Group => format!("G{id}"),
    }
}

pub fn target_part(t: &Target) -> String {
    match t {
        Target::Project(id) => format!("P{id}"),
        Target::Domain(id) => format!("D{id}"),
        Target::System => "Sall".to_string(),
    }
}

/// The three orders an assignment is stored under: by actor, by target, by role.
pub fn assignment_keys(a: &Assignment) -> [Vec<u8>; 3] {
    let actor = actor_part(a.actor_kind, &a.actor_id);
    let target = target_part(&a.target);
    let inh = if a.inherited { "i" } else { "d" };
    [
        format!("a/{actor}/{target}/{}/{inh}", a.role_id).into_bytes(),
        format!("t/{target}/{actor}/{}/{inh}", a.role_id).into_bytes(),
        format!("r/{}/{actor}/{target}/{inh}", a.role_id).into_bytes(),
    ]
}

pub fn by_actor_prefix(kind: ActorKind, id: &str) -> Vec<u8> {
    format!("a/{}/", actor_part(kind, id)).into_bytes()
}
pub fn by_actor_target_prefix(kind: ActorKind, id: &str, t: &Target) -> Vec<u8> {
    format!("a/{}/{}/", actor_part(kind, id), target_part(t)).into_bytes()
}
pub fn by_target_prefix(t: &Target) -> Vec<u8> {
    format!("t/{}/", target_part(t)).into_bytes()
}
pub fn by_role_prefix(role_id: &str) -> Vec<u8> {
    format!("r/{role_id}/").into_bytes()
}

/// Name-index namespaces (each is hashed together with its term).
pub mod ns {
    pub const DOMAIN_NAME: &str = "domain-name";
    pub const PROJECT_NAME: &str = "project-name";
    pub const USER_NAME: &str = "user-name";
    pub const ROLE_NAME: &str = "role-name";
    pub const PROJECTS_OF_DOMAIN: &str = "projects-of-domain";
    pub const USERS_OF_DOMAIN: &str = "users-of-domain";
    pub const GROUP_NAME: &str = "group-name";
    pub const GROUPS_OF_DOMAIN: &str = "groups-of-domain";
    /// Federated `unique_id` -> user ids (exact match, not lower-cased).
    pub const USER_UNIQUE_ID: &str = "user-unique-id";
    pub const CREDENTIALS_OF_USER: &str = "credentials-of-user";
    pub const CREDENTIALS_OF_PROJECT: &str = "credentials-of-project";
}

/// Names compare case-insensitively, as with Keystone on its usual SQL collation.
pub fn name_term(scope: &str, name: &str) -> String {
    format!("{scope}/{}", name.to_lowercase())
}

/// Docs cf: `{kind tag}/{id}`.
pub fn doc(kind: DocKind, id: &str) -> Vec<u8> {
    format!("{}/{id}", kind.tag()).into_bytes()
}
pub fn doc_prefix(kind: DocKind) -> Vec<u8> {
    format!("{}/", kind.tag()).into_bytes()
}
/// The records of `kind` that belong to `parent` (ids `{parent}/...`).
pub fn doc_children_prefix(kind: DocKind, parent: &str) -> Vec<u8> {
    format!("{}/{parent}/", kind.tag()).into_bytes()
}
/// Names-index namespace of a kind's unique values.
pub fn doc_unique_ns(kind: DocKind) -> String {
    format!("doc-unique-{}", kind.tag())
}
