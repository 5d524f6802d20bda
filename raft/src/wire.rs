//! The peer protocol: paths and message types (bodies are postcard).

use serde::{Deserialize, Serialize};

use openraft::error::{Infallible, RaftError};
use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse};

use crate::freshness::Stamp;
use crate::types::{Proposal, TypeConfig};

/// An append with the latest stamp the target replied with.
#[derive(Debug, Serialize, Deserialize)]
pub struct StampedAppend {
    pub echo: Option<Stamp>,
    pub rpc: AppendEntriesRequest<TypeConfig>,
}

/// A stamped append that also carries the leader's watermark (`watermark`); sent only once
/// the cluster version is at least [`WATERMARK_VERSION`] (an older member would not decode
/// it). Answered with a [`StampedReply`].
#[derive(Debug, Serialize, Deserialize)]
pub struct WatermarkedAppend {
    pub echo: Option<Stamp>,
    pub watermark: Option<u64>,
    pub rpc: AppendEntriesRequest<TypeConfig>,
}

/// The cluster version from which members answer credential checks by the watermark.
pub const WATERMARK_VERSION: u32 = 14;

/// The cluster version from which members ask the leader for leases of cluster-wide figures
/// (`LeaderRequest::Lease`).
pub const LEASE_VERSION: u32 = 16;

/// An append's answer with the replier's clock.
#[derive(Debug, Serialize, Deserialize)]
pub struct StampedReply {
    pub stamp: Stamp,
    pub result: Result<AppendEntriesResponse<u64>, RaftError<u64, Infallible>>,
}

pub const PATH_APPEND: &str = "/raft/append";
/// Appends with the freshness stamps (see `freshness`); `PATH_APPEND` stays for older peers.
pub const PATH_APPEND_STAMPED: &str = "/raft/append-stamped";
/// Appends with the stamps and the watermark (`watermark`).
pub const PATH_APPEND_WATERMARKED: &str = "/raft/append-watermarked";
pub const PATH_VOTE: &str = "/raft/vote";
pub const PATH_SNAPSHOT: &str = "/raft/snapshot";
pub const PATH_LEADER: &str = "/raft/leader";

/// Work only the leader can do, forwarded by followers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum LeaderRequest {
    Propose(Proposal),
    ReadIndex,
    AddLearner {
        id: u64,
        addr: String,
    },
    Promote {
        id: u64,
    },
    Remove {
        id: u64,
    },
    /// Append a consistency checkpoint; answered with `Written`.
    Checkpoint,
    /// Proposals a follower gathered while earlier ones were on their way (`forward_batch`),
    /// answered with `WrittenMany`. Sent only once the cluster version is at least
    /// `BATCH_VERSION` (an older leader would not decode it).
    ProposeMany(Vec<Proposal>),
    /// Up to `want` tokens of the leader's bucket for `key`, which holds `per_minute` (a
    /// cluster-wide figure); answered with `Leased`. Sent only once the cluster version is at
    /// least [`LEASE_VERSION`].
    Lease {
        key: String,
        per_minute: u32,
        want: u32,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum LeaderReply {
    Written {
        index: u64,
        reply: Vec<u8>,
    },
    ReadIndex(u64),
    Done,
    /// Each proposal's outcome, in order: written at an index with its reply, or refused
    /// before it entered the log (why).
    WrittenMany(Vec<Result<(u64, Vec<u8>), String>>),
    /// Tokens granted (possibly 0), and with none, the milliseconds until the bucket holds one.
    Leased {
        granted: u32,
        retry_after_ms: u64,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum LeaderError {
    /// This node is not (or no longer) the leader; the caller refreshes and retries.
    NotLeader(Option<u64>),
    /// Transient (quorum not reached yet, leader stepping down): retry.
    Unavailable(String),
    /// The request itself is wrong: do not retry.
    Rejected(String),
    Fatal(String),
}

pub type LeaderResult = Result<LeaderReply, LeaderError>;
