//! `apply`: the only place invariants are enforced (it runs serialized, in log order, on
//! every node). Deterministic: no clock, no randomness, no I/O beyond the state.
//!
//! The files here share only leaves (`fatal.rs`, `scim_ownership.rs`, the state's `Tx`), never
//! this file: it dispatches to them.

mod api_keys;
mod assignment;
mod bootstrap;
mod catalog;
pub mod credential;
mod derived_ids;
mod doc;
mod endpoint_policy;
mod expiring;
mod fatal;
mod group;
mod identity;
mod import;
mod limits;
mod mappings;
mod oauth2;
mod oauth2_sessions;
mod passkeys;
mod password;
mod providers;
mod resource;
mod restrictions;
mod revokes;
mod role;
mod scim;
mod scim_ownership;
mod shadow;
mod token;
mod user_updated;
pub use passkeys::SELF_SERVICE_VERSION;
pub use token::KEYSTONE_KEYS_ROTATE_VERSION;
pub use user_updated::USER_UPDATED_VERSION;

pub use api_keys::MAX_USES as API_KEY_USES_PER_COMMAND;
pub use import::MAX_RECORDS as IMPORT_RECORDS_PER_COMMAND;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use idnode_raft::StateApp;
use idnode_storage::{Batch, Engine};

use super::cf::STATE_CFS;
use super::command::{Applied, ApplyError, ApplyResult, Command};
use super::index_key;
use super::oauth2::OAuth2Command;
use super::read::tx::Tx;
use fatal::Fatal;

/// The highest command version this binary applies (see `idnode_raft`'s `version` module and
/// docs/operations.md, "Rolling upgrades").
/// Version 6 adds no command: it is the raft layer's batched entries (`idnode_raft::BATCH_VERSION`).
/// Version 7 adds none either: from it every token cut-off moves forward (`cutoff`).
/// Version 8 adds unified limits (`Command::Limits`) and `UseTotpStep`.
/// Version 9 adds `ShadowCommand::ExpiringLogin` (expiring group memberships).
/// Version 10 adds `RehashPassword` (Keystone's password hashes replaced at login) and
/// `SetKeystoneFernetKeys` (Keystone's tokens validated).
/// Version 11 adds `Import` (`idnode import keystone`) and `SetKeystoneAuthMethods`.
/// Version 12 adds no command: idnode's own tokens may carry a Keystone federated login (a
/// re-scoped Keystone federated token) or an OAuth1 access token (the `oauth1` method), which
/// earlier binaries cannot open (`token::payload::KEYSTONE_DELEGATIONS_VERSION`); and a token
/// key rotation rotates out imported Keystone keys ([`KEYSTONE_KEYS_ROTATE_VERSION`]).
/// Version 13 adds no command: consistency checks compare running digests
/// (`idnode_raft::RUNNING_DIGEST_VERSION`), which earlier binaries do not compute.
/// Version 14 adds no command: appends carry the watermark by which followers answer
/// credential checks without a read index (`idnode_raft::WATERMARK_VERSION`), on a peer route
/// earlier binaries do not serve.
/// Version 15 ([`SELF_SERVICE_VERSION`]) adds `PasskeyCommand::Rename` and
/// `OAuth2Command::RevokeSessions`; from it a refresh records its time (`fl/` in the oauth2
/// family) and the last passkey of a user without a password is not removed.
/// Version 16 ([`USER_UPDATED_VERSION`]) adds no command: from it a change of a user's
/// information records its time (`u/` in the passwords family), which earlier binaries do not,
/// and followers ask the leader for leases of the cluster-wide rate limits
/// (`idnode_raft::LEASE_VERSION`), a peer request earlier leaders do not decode.
pub const COMMAND_VERSION: u32 = 16;
const _: () = assert!(COMMAND_VERSION >= SELF_SERVICE_VERSION);
const _: () = assert!(COMMAND_VERSION >= USER_UPDATED_VERSION);
const _: () = assert!(COMMAND_VERSION >= super::cutoff::STRICT_VERSION);
const _: () = assert!(COMMAND_VERSION >= idnode_raft::BATCH_VERSION);
const _: () = assert!(COMMAND_VERSION >= idnode_raft::RUNNING_DIGEST_VERSION);
const _: () = assert!(COMMAND_VERSION >= idnode_raft::WATERMARK_VERSION);
const _: () = assert!(COMMAND_VERSION >= idnode_raft::LEASE_VERSION);
const _: () = assert!(COMMAND_VERSION >= KEYSTONE_KEYS_ROTATE_VERSION);

/// The identity state machine as the raft crate sees it.
pub struct IdentityApp {
    /// Moves on every applied run of entries and every installed snapshot: what the caches
    /// (`AppliedCache`) key their entries by, so any change of state empties them.
    version: AtomicU64,
    on_applied: Vec<Box<dyn Fn(u64) + Send + Sync>>,
}

impl IdentityApp {
    pub fn new(on_applied: Vec<Box<dyn Fn(u64) + Send + Sync>>) -> Arc<Self> {
        Arc::new(IdentityApp { version: AtomicU64::new(0), on_applied })
    }

    /// The version of the state local reads see. Not a log index: an installed snapshot
    /// replaces the state without applying an entry, and must still invalidate every cache.
    pub fn state_version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }
}

/// Applies one command against the committed state plus `batch`. Before the cluster has an
/// index key (bootstrap installs it) every other command is refused: nothing could index
/// names the way every replica will.
pub fn apply_to(engine: &Engine, batch: &mut Batch, cmd: Command) -> Result<ApplyResult, Fatal> {
    let index = match (index_key::hasher(engine)?, &cmd) {
        (Some(h), _) => h,
        (None, Command::BootstrapCluster { index_key, .. }) => Arc::new(index_key.hasher()),
        (None, _) => return Ok(Err(ApplyError::Invalid("the cluster is not bootstrapped yet".into()))),
    };
    // A refused command writes nothing, by construction: its writes since the savepoint go.
    batch.savepoint();
    let outcome = apply_command(&mut Tx { engine, batch, index }, cmd);
    match &outcome {
        Ok(Ok(_)) => batch.release(),
        _ => batch.rollback(),
    }
    outcome
}

/// Applies one command to a transaction; the outer error is fatal, the inner one is the
/// command's refusal (which is replicated like any outcome).
pub fn apply_command(tx: &mut Tx<'_>, cmd: Command) -> Result<ApplyResult, Fatal> {
    match cmd {
        Command::Bootstrap(_) => Ok(Err(ApplyError::Invalid(
            "bootstrap without a cluster index key (data format 1) is not applied by this version".into(),
        ))),
        Command::BootstrapCluster { index_key, bootstrap } => bootstrap::apply(tx, &index_key, *bootstrap),
        Command::CreateProject(p) => resource::create(tx, p),
        Command::UpdateProject(p) => resource::update(tx, p),
        Command::DeleteProject { id } => resource::delete(tx, &id),
        Command::CreateUser(u) => identity::create(tx, u),
        Command::UpdateUser(u) => identity::update(tx, u),
        Command::DeleteUser { id, now } => identity::delete(tx, &id, now),
        Command::RevokeToken { audit_ids, expires_at, now } => token::revoke(tx, audit_ids, expires_at, now),
        Command::CreateGroup(g) => group::create(tx, g),
        Command::UpdateGroup(g) => group::update(tx, g),
        Command::DeleteGroup { id } => group::delete(tx, &id),
        Command::AddGroupMember { group_id, user_id } => group::add_member(tx, &group_id, &user_id),
        Command::RemoveGroupMember { group_id, user_id } => group::remove_member(tx, &group_id, &user_id),
        Command::ChangePassword { user_id, expected_hash, new_hash, now } => {
            identity::change_password(tx, &user_id, &expected_hash, new_hash, now)
        }
        Command::CreateRole(r) => role::create(tx, r),
        Command::UpdateRole(r) => role::update(tx, r),
        Command::DeleteRole { id } => role::delete(tx, &id),
        Command::CreateImpliedRole { prior_role_id, implied_role_id } => {
            role::create_implied(tx, &prior_role_id, &implied_role_id)
        }
        Command::DeleteImpliedRole { prior_role_id, implied_role_id } => {
            role::delete_implied(tx, &prior_role_id, &implied_role_id)
        }
        Command::CreateGrant(a) => assignment::create_grant(tx, a),
        Command::DeleteGrant(a) => assignment::delete_grant(tx, a),
        Command::CreateRegion(r) => catalog::create_region(tx, r),
        Command::UpdateRegion(r) => catalog::update_region(tx, r),
        Command::DeleteRegion { id } => catalog::delete_region(tx, &id),
        Command::CreateService(s) => catalog::create_service(tx, s),
        Command::UpdateService(s) => catalog::update_service(tx, s),
        Command::DeleteService { id } => catalog::delete_service(tx, &id),
        Command::CreateEndpoint(e) => catalog::create_endpoint(tx, e),
        Command::UpdateEndpoint(e) => catalog::update_endpoint(tx, e),
        Command::DeleteEndpoint { id } => catalog::delete_endpoint(tx, &id),
        Command::CreateCredential(c) => credential::create(tx, c),
        Command::UpdateCredential(c) => credential::update(tx, c),
        Command::DeleteCredential { id } => credential::delete(tx, &id),
        Command::All(cmds) => all(tx, cmds),
        Command::PutDoc { doc, create, requires } => doc::put(tx, doc, create, &requires),
        Command::DeleteDoc { kind, id } => doc::delete(tx, kind, &id),
        Command::RecordPassword { user_id, hash, at, self_service, keep, expires_at } => {
            password::record(tx, &user_id, hash, at, self_service, keep, expires_at)
        }
        Command::RecordAuthFailure { user_id, at, limit, lockout_micros } => {
            password::failure(tx, &user_id, at, limit, lockout_micros)
        }
        Command::ClearAuthFailures { user_id } => password::clear_failures(tx, &user_id),
        Command::UseTrust { id } => doc::use_trust(tx, &id),
        Command::PatchUser(p) => identity::patch(tx, p),
        Command::OAuth2(c) => oauth2::apply(tx, c),
        Command::Providers(c) => providers::apply(tx, c),
        Command::Mapping(c) => mappings::apply(tx, c),
        Command::Shadow(c) => shadow::apply(tx, c),
        Command::ApiKeys(c) => api_keys::apply(tx, c),
        Command::Scim(c) => scim::apply(tx, c),
        Command::RotateTokenKeys { new_staged, now, max_secondary } => {
            token::rotate_keys(tx, new_staged, now, max_secondary)
        }
        Command::Passkeys(c) => passkeys::apply(tx, c),
        Command::MigrateDerivedUserIds { batch } => derived_ids::migrate(tx, batch),
        Command::Restrictions(c) => restrictions::apply(tx, c),
        Command::Limits(c) => limits::apply(tx, c),
        Command::UseTotpStep { user_id, step } => password::use_totp_step(tx, &user_id, step),
        Command::RehashPassword { user_id, old_hash, new_hash } => password::rehash(tx, &user_id, &old_hash, new_hash),
        Command::SetKeystoneFernetKeys { keys } => token::set_keystone_fernet_keys(tx, keys),
        Command::Import { records } => import::apply(tx, records),
        Command::SetKeystoneAuthMethods { methods } => token::set_keystone_auth_methods(tx, methods),
    }
}

/// Every command in order, as one: the first refusal refuses the whole (and `apply_to`
/// drops the writes of the steps before it). The outcome is the last one that carries a
/// record (bookkeeping steps answer `Done`).
fn all(tx: &mut Tx<'_>, cmds: Vec<Command>) -> Result<ApplyResult, Fatal> {
    let mut outcome = Applied::Done;
    for cmd in cmds {
        if matches!(cmd, Command::BootstrapCluster { .. } | Command::Bootstrap(_)) {
            return Ok(Err(ApplyError::Invalid("bootstrap cannot be part of a compound command".into())));
        }
        // An import keeps what its records wrote when a later one is refused: alone only.
        if matches!(cmd, Command::Import { .. }) {
            return Ok(Err(ApplyError::Invalid("an import cannot be part of a compound command".into())));
        }
        match apply_command(tx, cmd)? {
            Err(e) => return Ok(Err(e)),
            Ok(Applied::Done) => {}
            Ok(other) => outcome = other,
        }
    }
    Ok(Ok(outcome))
}

/// The cluster version a command needs. Version 1 is every command of the first release with
/// a cluster version; each variant appended since names the version that brought it, here and
/// in `COMMAND_VERSION`.
fn required_version(cmd: &Command) -> u32 {
    match cmd {
        // Before `Passkeys(_)`: the first arm that matches decides.
        Command::Passkeys(super::passkeys::PasskeyCommand::Rename { .. })
        | Command::OAuth2(OAuth2Command::RevokeSessions { .. }) => SELF_SERVICE_VERSION,
        Command::RotateTokenKeys { .. } => 2,
        Command::Passkeys(_) => 3,
        Command::OAuth2(OAuth2Command::StartDeviceAt { .. } | OAuth2Command::ReplaceClient { .. }) => 4,
        Command::MigrateDerivedUserIds { .. } => 4,
        Command::Restrictions(_) => 5,
        Command::Limits(_) => 8,
        Command::UseTotpStep { .. } => 8,
        Command::RehashPassword { .. } | Command::SetKeystoneFernetKeys { .. } => 10,
        Command::Import { .. } | Command::SetKeystoneAuthMethods { .. } => 11,
        Command::Shadow(super::shadow::ShadowCommand::ExpiringLogin { .. }) => 9,
        _ => idnode_raft::BASE_VERSION,
    }
}

impl StateApp for IdentityApp {
    fn column_families(&self) -> &'static [&'static str] {
        STATE_CFS
    }

    fn apply(&self, engine: &Engine, batch: &mut Batch, _log_index: u64, payload: &[u8]) -> Result<Vec<u8>, String> {
        let cmd: Command = postcard::from_bytes(payload)
            .map_err(|e| format!("cannot decode replicated command (is this binary older than the cluster?): {e}"))?;
        // `apply_to` drops a refused command's writes, so it leaves no trace in the state.
        let outcome = apply_to(engine, batch, cmd).map_err(|e| e.to_string())?;
        postcard::to_allocvec(&outcome).map_err(|e| e.to_string())
    }

    /// A proposal must decode as exactly one command (no trailing bytes) of a kind this
    /// version applies; anything else would stop every replica when it applied. The same
    /// decode names the cluster version it needs.
    fn check(&self, payload: &[u8]) -> Result<u32, String> {
        match postcard::take_from_bytes::<Command>(payload) {
            Ok((_, rest)) if !rest.is_empty() => Err(format!("{} trailing bytes after the command", rest.len())),
            Ok((Command::Bootstrap(_), _)) => Err("bootstrap without a cluster index key is not accepted".into()),
            Ok((cmd, _)) => Ok(required_version(&cmd)),
            Err(e) => Err(format!("not a command this version knows: {e}")),
        }
    }

    fn command_version(&self) -> u32 {
        COMMAND_VERSION
    }

    /// A payload that does not decode counts as revoking (it would stop the node anyway).
    fn revokes(&self, payload: &[u8]) -> bool {
        postcard::from_bytes::<Command>(payload).map_or(true, |cmd| revokes::revokes(&cmd))
    }

    fn applied(&self, index: u64) {
        self.version.fetch_add(1, Ordering::AcqRel);
        for f in &self.on_applied {
            f(index);
        }
    }

    fn installed_snapshot(&self, engine: &Engine) {
        // The snapshot's state is the authority for the index key from now on.
        index_key::forget(engine);
        self.version.fetch_add(1, Ordering::AcqRel);
        for f in &self.on_applied {
            f(u64::MAX);
        }
    }
}

#[cfg(test)]
mod tests;
