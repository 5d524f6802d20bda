//! Rolling upgrades: the cluster version, as etcd keeps one. Each binary applies commands up
//! to its own command version (`StateApp::command_version`) and advertises it on the peer
//! listener. The leader keeps the replicated cluster version at the lowest version its voters
//! advertise (it only ever rises), and never lets a command into the log that needs a higher
//! one (`StateApp::check`): while one voter still runs the old binary, new kinds of
//! commands are refused before they could stop it. A member that meets a cluster version
//! above its own (a learner left behind, an old binary restarted on a newer cluster's data)
//! stops and says why, as it does for a command it cannot decode.
//!
//! The version lives in the raft crate's replicated column family (beside the dedup table),
//! so snapshots, backups and consistency checks carry it like the rest of the state.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::join_all;
use idnode_storage::{Batch, Engine};
use serde::{Deserialize, Serialize};

use crate::schema::CF_DEDUP;
use crate::types::Request;
use crate::RaftNode;

/// The peer route a member advertises its versions on.
pub const PATH_VERSION: &str = "/cluster/version";
/// The cluster version of a cluster that never raised it.
pub const BASE_VERSION: u32 = 1;
/// Key of the cluster version in `CF_DEDUP` (the dedup records use the prefixes `r` and `i`).
const KEY_CLUSTER_VERSION: &[u8] = b"cluster_version";
/// How often the leader compares its voters' versions with the cluster version.
const CHECK_EVERY: Duration = Duration::from_secs(2);
/// How long a member may take to say its version.
const ASK_TIMEOUT: Duration = Duration::from_secs(1);

/// What a member runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeVersion {
    /// The idnode release (`CARGO_PKG_VERSION`).
    pub binary: String,
    /// The highest command version the binary applies.
    pub command_version: u32,
}

/// A member's versions as the node asked saw them (`None`: it did not answer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberVersion {
    pub id: u64,
    pub voter: bool,
    pub version: Option<NodeVersion>,
}

/// The cluster version as of `engine` plus `batch`.
pub(crate) fn stored(engine: &Engine, batch: Option<&Batch>) -> Result<u32, String> {
    if let Some(Some(v)) = batch.and_then(|b| b.get_t::<u32>(CF_DEDUP, KEY_CLUSTER_VERSION)).transpose().ok().flatten()
    {
        return Ok(v);
    }
    let v: Option<u32> = engine.read().get_t(CF_DEDUP, KEY_CLUSTER_VERSION).map_err(|e| e.to_string())?;
    Ok(v.unwrap_or(BASE_VERSION))
}

/// The cluster version an entry applies under: what apply branches on when a command's
/// outcome changed between versions, so every replica switches at the same log index.
pub fn applied_cluster_version(engine: &Engine, batch: &Batch) -> Result<u32, String> {
    stored(engine, Some(batch))
}

/// Applies a `ClusterVersion` entry: raises the version, or stops this member (Err) when it
/// cannot apply what the cluster moved to.
pub(crate) fn apply(engine: &Engine, batch: &mut Batch, wanted: u32, supported: u32) -> Result<(), String> {
    if wanted > supported {
        return Err(format!(
            "the cluster moved to command version {wanted} but this binary applies commands up to version \
             {supported}: run the newer idnode on this node"
        ));
    }
    if wanted > stored(engine, Some(batch))? {
        batch.put_t(CF_DEDUP, KEY_CLUSTER_VERSION, &wanted).map_err(|e| e.to_string())?;
    }
    Ok(())
}

impl RaftNode {
    /// What this member runs.
    pub fn own_version(&self) -> NodeVersion {
        NodeVersion { binary: env!("CARGO_PKG_VERSION").to_string(), command_version: self.app.command_version() }
    }

    /// The replicated cluster version as this member applied it.
    pub fn cluster_version(&self) -> u32 {
        stored(&self.engine, None).unwrap_or(BASE_VERSION)
    }

    /// Every member's versions (voters and learners), asked now.
    pub async fn member_versions(&self) -> Vec<MemberVersion> {
        let status = self.status();
        let members = status.voters.iter().map(|m| (m, true)).chain(status.learners.iter().map(|m| (m, false)));
        let asks = members.map(|(m, voter)| async move {
            let version =
                if m.id == self.id { Some(self.own_version()) } else { self.ask_version(m.id, &m.addr).await };
            MemberVersion { id: m.id, voter, version }
        });
        join_all(asks).await
    }

    pub(crate) async fn ask_version(&self, id: u64, addr: &str) -> Option<NodeVersion> {
        self.client.call(id, addr, PATH_VERSION, &(), ASK_TIMEOUT).await.ok()
    }

    /// The leader's refusal of a proposal that needs a higher version than the cluster's. The
    /// version is first raised if every voter already runs a binary that applies it (a new
    /// cluster, or the moments after the last voter was upgraded).
    pub async fn version_gate(&self, need: u32) -> Result<(), String> {
        let mut have = self.cluster_version();
        if need > have {
            have = self.raise_cluster_version().await.unwrap_or(have);
        }
        if need > have {
            return Err(format!(
                "this request needs cluster version {need}, and the cluster runs version {have}: upgrade every voter \
                 to a binary that applies it (see `idnode cluster status`)"
            ));
        }
        Ok(())
    }

    /// Raises the cluster version to the lowest its voters advertise, when every voter
    /// answered and that is above the current one. Returns the version now in force.
    pub async fn raise_cluster_version(&self) -> Result<u32, String> {
        let current = self.cluster_version();
        let versions = self.member_versions().await;
        let mut lowest = u32::MAX;
        for m in versions.iter().filter(|m| m.voter) {
            match &m.version {
                Some(v) => lowest = lowest.min(v.command_version),
                None => return Ok(current),
            }
        }
        if lowest == u32::MAX || lowest <= current {
            return Ok(current);
        }
        self.raft.client_write(Request::ClusterVersion(lowest)).await.map_err(|e| e.to_string())?;
        tracing::info!(
            from = current,
            to = lowest,
            "raised the cluster version: every voter runs a binary that applies it"
        );
        Ok(lowest)
    }

    /// The leader's loop that raises the cluster version after voters were upgraded. Ends when
    /// the node is dropped.
    pub(crate) fn spawn_version_upgrades(self: &Arc<Self>) {
        let weak: Weak<RaftNode> = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(CHECK_EVERY).await;
                let Some(node) = weak.upgrade() else { return };
                node.watermark.set_enabled(node.cluster_version() >= crate::wire::WATERMARK_VERSION);
                // Below the cluster's version nothing can be raised: no call to the members.
                if node.is_leader() && node.cluster_version() < node.app.command_version() {
                    if let Err(e) = node.raise_cluster_version().await {
                        tracing::debug!(error = %e, "cluster version not raised");
                    }
                }
            }
        });
    }
}
