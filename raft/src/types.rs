//! The concrete openraft type configuration: the crate carries opaque application commands, so
//! nothing here is generic.

use serde::{Deserialize, Serialize};

/// One application command. `request_id` lets the state machine recognise a retried proposal
/// (forwarding retries after a leader change) and answer it without applying it twice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    pub request_id: [u8; 16],
    pub payload: Vec<u8>,
}

/// What a normal log entry carries: an application command, or one of this crate's own
/// entries. Part of the log, so append-only like the application's commands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    App(Proposal),
    /// A consistency checkpoint: every member digests its state exactly as of this entry, so
    /// digests taken on different nodes at different times can be compared.
    Checkpoint,
    /// Raises the cluster version (see `version`): proposed by the leader once every voter
    /// advertises a binary that applies it.
    ClusterVersion(u32),
    /// Several application commands in one entry, applied in order exactly as consecutive
    /// `App` entries would be (`batcher`): one log append and one fsync on every member for
    /// all of them. Proposed only once the cluster version is at least [`BATCH_VERSION`].
    Batch(Vec<Proposal>),
}

/// The cluster version from which the leader proposes `Request::Batch` entries (a binary
/// that applies commands up to this version decodes them).
pub const BATCH_VERSION: u32 = 6;

/// The application's encoded outcome of one command.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reply(pub Vec<u8>);

openraft::declare_raft_types!(
    /// Raft types of idnode: u64 node ids, peers named by their listener address.
    pub TypeConfig:
        D = Request,
        R = Reply,
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = tokio::fs::File,
        AsyncRuntime = openraft::TokioRuntime,
);

pub type Entry = openraft::Entry<TypeConfig>;
pub type LogId = openraft::LogId<u64>;
pub type Vote = openraft::Vote<u64>;
pub type Membership = openraft::StoredMembership<u64, openraft::BasicNode>;
pub type SnapshotMeta = openraft::SnapshotMeta<u64, openraft::BasicNode>;
pub type StorageError = openraft::StorageError<u64>;
pub type Raft = openraft::Raft<TypeConfig>;
