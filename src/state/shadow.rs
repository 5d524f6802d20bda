//! The shadow registry (issue 9; spec: "Mapping ruleset model", `VirtualUserMetadata`, and the
//! virtual-user rows of "States and transitions"): the virtual users an `ephemeral` mapping
//! rule resolves workloads to, in the `shadow` column family, and the one command that
//! changes them.
//!
//! Why two ordered indexes: the lifecycle jobs (`crate::jobs`) must find "enabled and not
//! authenticated since T" and "disabled since before T" without scanning the registry, and
//! apply must do bounded work whatever the registry holds. An enabled record is listed under
//! its `last_authenticated_at`, a disabled one under its `disabled_at`; apply moves the entry
//! on every change, so exactly one index entry exists per record. Every time here is unix
//! seconds, stamped by the service (apply has no clock).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::ruleset::{Authorization, GroupStrategy};

/// Key layouts of the `shadow` column family.
pub mod keys {
    #[cfg_attr(not(test), expect(dead_code, reason = "tests list the registry"))]
    pub const RECORD_PREFIX: &[u8] = b"v/";
    pub fn record(user_id: &str) -> Vec<u8> {
        format!("v/{user_id}").into_bytes()
    }
    /// Enabled records by last authentication: `a/{time, order-preserving big-endian}{user_id}`.
    pub const ACTIVE_PREFIX: &[u8] = b"a/";
    /// The groups a `local` rule last synced a real user into: `l/{user_id}`, so the next
    /// sync removes the memberships it made and no longer grants, and only those.
    pub fn synced_groups(user_id: &str) -> Vec<u8> {
        format!("l/{user_id}").into_bytes()
    }
    /// Disabled records by the time they were disabled: `d/{time}{user_id}`.
    pub const DISABLED_PREFIX: &[u8] = b"d/";
    pub fn active(at: i64, user_id: &str) -> Vec<u8> {
        timed(ACTIVE_PREFIX, at, user_id)
    }
    pub fn disabled(at: i64, user_id: &str) -> Vec<u8> {
        timed(DISABLED_PREFIX, at, user_id)
    }
    fn timed(prefix: &[u8], at: i64, user_id: &str) -> Vec<u8> {
        let mut k = prefix.to_vec();
        k.extend_from_slice(&((at as u64) ^ (1 << 63)).to_be_bytes());
        k.extend_from_slice(user_id.as_bytes());
        k
    }
    /// The user id of an `a/` or `d/` index key.
    pub fn user_id_of(index_key: &[u8]) -> Option<String> {
        index_key.get(2 + 8..).map(|id| String::from_utf8_lossy(id).into_owned())
    }
}

/// Records a lifecycle command touches at most, whatever limit it names (bounded apply).
pub const MAX_BATCH: usize = 1000;

/// The id of a workload's virtual user: the first 128 bits of
/// SHA-256(`provider` NUL `unique_workload_id`), in hex (32 characters, the width of a
/// Keystone id). Deterministic, so every authentication of one workload through one provider
/// (domain or provider id, whatever the caller scopes uniqueness by) finds the same record,
/// on any node, without a lookup table. Not keyed: the id is an identifier, not a secret, and
/// the NUL keeps (`a`, `bc`) and (`ab`, `c`) apart.
pub fn virtual_user_id(domain_or_provider: &str, unique_workload_id: &str) -> String {
    let mut h = Sha256::new();
    h.update(domain_or_provider.as_bytes());
    h.update([0u8]);
    h.update(unique_workload_id.as_bytes());
    hex::encode(&h.finalize()[..16])
}

/// One group a virtual user's rule bound it to, as resolved at issuance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolvedGroupBinding {
    pub resolved_group_id: String,
    pub group_domain_id: String,
    pub strategy: GroupStrategy,
}

/// The spec's `VirtualUserMetadata`, plus `disabled_at` (what archive retention counts from).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VirtualUserMetadata {
    /// [`virtual_user_id`] of the provider and the workload.
    pub user_id: String,
    pub unique_workload_id: String,
    pub mapping_id: String,
    pub matched_rule_name: String,
    pub domain_id: Option<String>,
    pub resolved_user_name: String,
    pub is_system: bool,
    pub resolved_group_bindings: Vec<ResolvedGroupBinding>,
    /// The rule's authorizations at issuance, as JSON text: postcard cannot read the mapping
    /// model's tagged enums back (see `mapping::model`). Use [`Self::authorizations`].
    pub authorizations: String,
    pub ruleset_version: String,
    pub enabled: bool,
    pub created_at: i64,
    pub last_authenticated_at: i64,
    /// When the inactivity job disabled it; `None` while enabled.
    pub disabled_at: Option<i64>,
}

impl VirtualUserMetadata {
    #[cfg(test)]
    pub fn authorizations(&self) -> Result<Vec<Authorization>, serde_json::Error> {
        serde_json::from_str(&self.authorizations)
    }

    pub fn store_authorizations(list: &[Authorization]) -> Result<String, serde_json::Error> {
        serde_json::to_string(list)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ShadowCommand {
    /// A successful authentication through an `ephemeral` rule at `at`: creates the record
    /// (enabled, `created_at` = `last_authenticated_at` = `at`), or refreshes it with the new
    /// issuance snapshot and re-enables it, keeping its `is_system` and `created_at` (spec,
    /// "States and transitions"). Refused (writing nothing) for an empty id, an id already
    /// held by another workload, or an unknown mapping.
    Upsert { record: Box<VirtualUserMetadata>, at: i64 },
    /// Disables up to `limit` (at most [`MAX_BATCH`]) enabled records last authenticated
    /// before `before`, oldest first, stamping `disabled_at` = `at`; answers their ids.
    DisableInactive { before: i64, at: i64, limit: u32 },
    /// Deletes up to `limit` (at most [`MAX_BATCH`]) records disabled before `before`,
    /// oldest first; answers the deleted records (for the audit event).
    DeleteArchived { before: i64, limit: u32 },
    /// A successful authentication through a `local` rule: creates the user when its id is
    /// free (a name taken by another user is 409 `shadow_registry_conflict`), resolves each
    /// group (by id, else by name in its domain; `create_or_get` creates a missing one with
    /// `new_id`, `get` refuses with 403 `group_not_found`), then syncs: the user joins every
    /// group, and leaves those the previous sync joined that are no longer bound (memberships
    /// an administrator made are never touched). A disabled user stays disabled.
    LocalLogin { user: Box<crate::state::model::User>, groups: Vec<GroupRequest> },
    /// A successful authentication through a `local` rule of a ruleset with an
    /// `authorization_ttl` (Keystone's expiring group memberships): the user is found or
    /// created and the groups resolved as for `LocalLogin`, but the memberships are expiring
    /// ones, verified at `at` and lasting until `expires_at` (unix microseconds). The
    /// memberships a permanent sync made before are left, the user's expiring memberships
    /// through `idp_id` that the login no longer grants end, and any past `at` are dropped.
    ExpiringLogin {
        user: Box<crate::state::model::User>,
        groups: Vec<GroupRequest>,
        idp_id: String,
        at: i64,
        expires_at: i64,
    },
}

/// A group binding of a `local` rule, as the service resolved its templates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupRequest {
    pub group_id: Option<String>,
    pub name: String,
    pub domain_id: String,
    pub strategy: GroupStrategy,
    /// The id the group gets if this command creates it (generated by the service: apply
    /// has no randomness).
    pub new_id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ShadowApplied {
    /// The record as stored now.
    Record(Box<VirtualUserMetadata>),
    /// Ids of the records disabled.
    Disabled(Vec<String>),
    /// The records deleted, as they were.
    Deleted(Vec<VirtualUserMetadata>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_deterministic_and_separated() {
        let a = virtual_user_id("k8s-prod", "ns/sa");
        assert_eq!(a, virtual_user_id("k8s-prod", "ns/sa"));
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, virtual_user_id("k8s-dev", "ns/sa"));
        assert_ne!(virtual_user_id("a", "bc"), virtual_user_id("ab", "c"));
    }

    #[test]
    fn index_keys_order_by_time_and_name_the_user() {
        assert!(keys::active(-5, "x") < keys::active(3, "x"));
        assert!(keys::active(3, "z") < keys::active(4, "a"));
        assert_eq!(keys::user_id_of(&keys::disabled(7, "abc")), Some("abc".into()));
    }
}
