//! Leader-side execution of forwarded work (proposals, read index, membership changes,
//! leases).

use std::collections::BTreeSet;

use futures::future::join_all;
use openraft::error::{ChangeMembershipError, CheckIsLeaderError, ClientWriteError, RaftError};
use openraft::{BasicNode, ChangeMembers};

use crate::types::Request;
use crate::wire::{LeaderError, LeaderReply, LeaderRequest, LeaderResult};
use crate::RaftNode;

impl RaftNode {
    /// A proposal into the log (with whatever else is waiting) once the application and the
    /// cluster version admit it.
    async fn propose_checked(&self, p: crate::types::Proposal) -> LeaderResult {
        let checked = match self.app.check(&p.payload) {
            Ok(need) => self.version_gate(need).await,
            Err(e) => Err(e),
        };
        if let Err(e) = checked {
            return Err(LeaderError::Rejected(format!("proposal refused before it entered the log: {e}")));
        }
        let revokes = self.watermark.enabled() && self.app.revokes(&p.payload);
        let written = self.batcher.propose(p).await;
        if let (true, Ok(LeaderReply::Written { index, .. })) = (revokes, &written) {
            // Acknowledged once every member that may be answering heard of it (`watermark`).
            let deadline = tokio::time::Instant::now() + self.opts.forward_timeout;
            self.wait_watermark(*index, deadline).await.map_err(|e| {
                LeaderError::Unavailable(format!("written at {index}, not yet known to every member: {e}"))
            })?;
        }
        written
    }

    /// The commit point a read must reach: from the lease when it holds (`leased_commit`),
    /// else confirmed with a quorum.
    async fn read_index_here(&self) -> LeaderResult {
        if let Some(index) = self.leased_commit() {
            return Ok(LeaderReply::ReadIndex(index));
        }
        match self.raft.get_read_log_id().await {
            Ok((read, _)) => Ok(LeaderReply::ReadIndex(read.map_or(0, |l| l.index))),
            Err(RaftError::APIError(CheckIsLeaderError::ForwardToLeader(f))) => {
                Err(LeaderError::NotLeader(f.leader_id))
            }
            Err(RaftError::APIError(CheckIsLeaderError::QuorumNotEnough(e))) => {
                Err(LeaderError::Unavailable(e.to_string()))
            }
            Err(RaftError::Fatal(e)) => Err(LeaderError::Fatal(e.to_string())),
        }
    }

    async fn write(&self, req: Request) -> LeaderResult {
        match self.raft.client_write(req).await {
            Ok(resp) => Ok(LeaderReply::Written { index: resp.log_id.index, reply: resp.data.0 }),
            Err(e) => Err(write_error(e)),
        }
    }

    /// Does leader work locally. Answers `NotLeader` rather than forwarding again, so a
    /// forwarded request never bounces between nodes.
    pub(crate) async fn execute(&self, req: LeaderRequest) -> LeaderResult {
        match req {
            LeaderRequest::Propose(p) => self.propose_checked(p).await,
            LeaderRequest::ProposeMany(ps) => {
                let results = join_all(ps.into_iter().map(|p| self.propose_checked(p))).await;
                let mut out = Vec::with_capacity(results.len());
                for r in results {
                    match r {
                        Ok(LeaderReply::Written { index, reply }) => out.push(Ok((index, reply))),
                        Ok(other) => return Err(LeaderError::Fatal(format!("unexpected proposal outcome {other:?}"))),
                        Err(LeaderError::Rejected(e)) => out.push(Err(e)),
                        // Not leader, unavailable: the follower sends the whole group again
                        // (the request ids make the written ones answer as they did).
                        Err(e) => return Err(e),
                    }
                }
                Ok(LeaderReply::WrittenMany(out))
            }
            LeaderRequest::Checkpoint => self.write(Request::Checkpoint).await,
            LeaderRequest::ReadIndex => self.read_index_here().await,
            LeaderRequest::Lease { key, per_minute, want } => self.lease_reply(&key, per_minute, want),
            LeaderRequest::AddLearner { id, addr } => {
                let res = self.raft.add_learner(id, BasicNode { addr }, false).await;
                res.map(|_| LeaderReply::Done).map_err(write_error)
            }
            LeaderRequest::Promote { id } => {
                self.promotable(id).await?;
                let res = self.raft.change_membership(ChangeMembers::AddVoterIds(BTreeSet::from([id])), false).await;
                res.map(|_| LeaderReply::Done).map_err(write_error)
            }
            LeaderRequest::Remove { id } => {
                let (voter, member) = self.with_metrics(|m| {
                    let ms = m.membership_config.membership();
                    (ms.voter_ids().any(|v| v == id), ms.get_node(&id).is_some())
                });
                let change = match (voter, member) {
                    (true, _) => ChangeMembers::RemoveVoters(BTreeSet::from([id])),
                    (false, true) => ChangeMembers::RemoveNodes(BTreeSet::from([id])),
                    (false, false) => return Ok(LeaderReply::Done),
                };
                let res = self.raft.change_membership(change, false).await;
                res.map(|_| LeaderReply::Done).map_err(write_error)
            }
        }
    }
}

impl RaftNode {
    /// A learner becomes a voter only when it runs a binary that applies the cluster's
    /// version: a voter that could not would hold the version back or stop.
    async fn promotable(&self, id: u64) -> Result<(), LeaderError> {
        let addr = self.with_metrics(|m| m.membership_config.membership().get_node(&id).map(|n| n.addr.clone()));
        let Some(addr) = addr else { return Ok(()) };
        let have = self.cluster_version();
        match self.ask_version(id, &addr).await {
            Some(v) if v.command_version >= have => Ok(()),
            Some(v) => Err(LeaderError::Rejected(format!(
                "node {id} runs idnode {} (command version {}), below the cluster version {have}: upgrade it first",
                v.binary, v.command_version
            ))),
            None => Err(LeaderError::Unavailable(format!("node {id} did not say which version it runs"))),
        }
    }
}

pub(crate) fn write_error(e: RaftError<u64, ClientWriteError<u64, BasicNode>>) -> LeaderError {
    match e {
        RaftError::APIError(ClientWriteError::ForwardToLeader(f)) => LeaderError::NotLeader(f.leader_id),
        RaftError::APIError(ClientWriteError::ChangeMembershipError(ChangeMembershipError::InProgress(p))) => {
            LeaderError::Unavailable(p.to_string())
        }
        RaftError::APIError(ClientWriteError::ChangeMembershipError(c)) => LeaderError::Rejected(c.to_string()),
        RaftError::Fatal(f) => LeaderError::Fatal(f.to_string()),
    }
}
