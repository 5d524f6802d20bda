//! Raft replication for idnode: openraft over the node's single encrypted RocksDB. The
//! application hands in opaque commands ([`Proposal`] payloads) and applies them through
//! [`StateApp`]; this crate owns the log, the state machine plumbing (position, membership,
//! dedup, snapshots), the peer HTTP protocol and leader forwarding.

// openraft's trait methods return its (large) StorageError; helpers return it unboxed too.
#![allow(clippy::result_large_err)]

mod admin;
mod auth;
mod backup;
mod batcher;
mod client;
mod consistency;
mod dedup;
mod digests;
mod election;
mod error;
mod forward;
mod forward_batch;
mod freshness;
mod leader;
mod leadership;
mod lease;
mod lease_call;
mod log_store;
mod member_id;
mod metrics;
mod network;
mod node;
mod operator_routes;
mod options;
mod peer_api;
mod reach;
mod read_index;
mod recent_log;
pub mod request_tag;
mod schema;
mod snapshot;
mod snapshot_policy;
mod state_machine;
mod status;
pub mod trace_context;
mod types;
mod version;
mod watermark;
mod watermark_gate;
mod wire;

use idnode_storage::{Batch, Engine};

pub use admin::{AdminClient, AdminRequest};
pub use auth::{sign_request, OnVerified, WINDOW_S as PEER_AUTH_WINDOW_S};
pub use backup::{
    read_header, restore_file, verify_file, BackupError, BackupHeader, BackupKey, PATH_BACKUP, TRAILER_LEN,
};
pub use client::{CallError, ClientTls};
pub use consistency::{ConsistencyReport, MemberDigest};
pub use digests::{CfDigest, DigestOutcome, Digests, RUNNING_DIGEST_VERSION};
pub use error::ProposeError;
pub use freshness::Freshness;
pub use idnode_storage as storage;
pub use lease::LeaseGrant;
pub use log_store::LogStore;
pub use member_id::PATH_MEMBER_ID;
pub use node::RaftNode;
pub use operator_routes::{MemberStatus, MoveLeader, OPS_CHECK, OPS_MEMBERSHIP, OPS_MOVE_LEADER, OPS_STATUS};
pub use options::RaftOptions;
pub use state_machine::{SmLinks, SmStats, StateMachine};
pub use status::{ClusterStatus, Member, PeerProgress, Readiness};
pub use types::{Proposal, Reply, Request, TypeConfig, BATCH_VERSION};
pub use version::{applied_cluster_version, MemberVersion, NodeVersion, BASE_VERSION};
pub use wire::{LEASE_VERSION, WATERMARK_VERSION};

/// The column families this crate needs; the root crate opens the engine with these plus the
/// application's own.
pub const COLUMN_FAMILIES: &[&str] = &[schema::CF_LOG, schema::CF_META, schema::CF_DEDUP];
/// The family of the dedup records (request id to outcome and log index) and the cluster version.
pub const DEDUP_FAMILY: &str = schema::CF_DEDUP;

/// The application's deterministic state machine.
pub trait StateApp: Send + Sync + 'static {
    /// Column families holding the application's state (all exported in snapshots).
    fn column_families(&self) -> &'static [&'static str];
    /// Deterministic apply of one command: read via `engine.read()` plus the batch overlay
    /// (`batch.get`), write into `batch`.
    /// Err = the command cannot be decoded/applied: the node stops loudly (raft fatal), it
    /// never skips a command (replicas would diverge).
    fn apply(&self, engine: &Engine, batch: &mut Batch, log_index: u64, payload: &[u8]) -> Result<Vec<u8>, String>;
    /// Checked by the leader before a proposal enters the log, with one decode of it: a
    /// payload apply could not decode would stop every replica, so it is refused here instead
    /// (Err: why). Ok: the cluster version it needs; the leader refuses it while the cluster
    /// runs a lower one (some voter could not apply it).
    fn check(&self, _payload: &[u8]) -> Result<u32, String> {
        Ok(BASE_VERSION)
    }
    /// The highest command version this binary applies (see `version`): raise it when a new
    /// kind of command appears, and make `check` name the new kind's version.
    fn command_version(&self) -> u32 {
        BASE_VERSION
    }
    /// Whether applying this proposal may make a credential check refuse what it accepted
    /// before (a revocation, a password change, a disable, a removed grant): such an entry is
    /// acknowledged, and shown by any member, only once every member that may be answering
    /// heard of it (`watermark`). When unsure, say yes: that only costs time.
    fn revokes(&self, _payload: &[u8]) -> bool {
        true
    }
    /// Called after entries up to `index` are in the state (for cache invalidation).
    fn applied(&self, _index: u64) {}
    /// Called after a snapshot replaced the state in `engine` (caches must be dropped).
    fn installed_snapshot(&self, _engine: &Engine) {}
}
