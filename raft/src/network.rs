//! openraft's outgoing RPCs (append, vote, snapshot chunks) over the peer HTTP protocol.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use openraft::error::{Infallible, InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable};
use openraft::network::RPCOption;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse, VoteRequest,
    VoteResponse,
};
use openraft::{BasicNode, RaftNetwork, RaftNetworkFactory};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::client::{CallError, PeerClient};
use crate::election::Contact;
use crate::freshness::Freshness;
use crate::reach::Reach;
use crate::types::TypeConfig;
use crate::watermark::Watermark;
use crate::wire::{
    StampedAppend, StampedReply, WatermarkedAppend, PATH_APPEND_STAMPED, PATH_APPEND_WATERMARKED, PATH_SNAPSHOT,
    PATH_VOTE,
};

pub struct Network {
    pub(crate) client: PeerClient,
    pub(crate) freshness: Arc<Freshness>,
    pub(crate) watermark: Arc<Watermark>,
    /// This node's commit index (the log store's cell), for the watermark it publishes.
    pub(crate) committed: Arc<AtomicU64>,
    pub(crate) contact: Arc<Contact>,
    pub(crate) reach: Arc<Reach>,
    /// How long a member that learned its log is behind stays out of elections.
    pub(crate) behind_pause: Duration,
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerConnection;

    async fn new_client(&mut self, target: u64, node: &BasicNode) -> PeerConnection {
        PeerConnection {
            client: self.client.clone(),
            target,
            addr: node.addr.clone(),
            freshness: self.freshness.clone(),
            watermark: self.watermark.clone(),
            committed: self.committed.clone(),
            contact: self.contact.clone(),
            reach: self.reach.clone(),
            behind_pause: self.behind_pause,
        }
    }
}

pub struct PeerConnection {
    client: PeerClient,
    target: u64,
    addr: String,
    freshness: Arc<Freshness>,
    watermark: Arc<Watermark>,
    committed: Arc<AtomicU64>,
    contact: Arc<Contact>,
    reach: Arc<Reach>,
    behind_pause: Duration,
}

type RpcResult<T, E> = Result<T, RPCError<u64, BasicNode, RaftError<u64, E>>>;

impl PeerConnection {
    async fn rpc<Req, Resp, E>(&self, path: &str, req: &Req, ttl: Duration) -> RpcResult<Resp, E>
    where
        Req: Serialize,
        Resp: DeserializeOwned,
        E: std::error::Error + DeserializeOwned,
    {
        match self.client.call::<Req, Result<Resp, RaftError<u64, E>>>(self.target, &self.addr, path, req, ttl).await {
            Ok(Ok(resp)) => Ok(resp),
            Ok(Err(e)) => Err(RPCError::RemoteError(RemoteError::new(self.target, e))),
            Err(e @ CallError::Unreachable(_)) => Err(RPCError::Unreachable(Unreachable::new(&e))),
            Err(e) => Err(RPCError::Network(NetworkError::new(&e))),
        }
    }
}

impl RaftNetwork<TypeConfig> for PeerConnection {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<u64>, Infallible> {
        let sent = tokio::time::Instant::now();
        let echo = self.freshness.echo_for(self.target);
        let (term, commit) = (rpc.vote.leader_id().term, rpc.leader_commit.map_or(0, |l| l.index));
        let ttl = option.hard_ttl();
        let reply = if self.watermark.enabled() {
            let watermark = self.watermark.publish(term, self.committed.load(Ordering::Acquire));
            let req = WatermarkedAppend { echo, watermark, rpc };
            self.client.call::<_, StampedReply>(self.target, &self.addr, PATH_APPEND_WATERMARKED, &req, ttl).await
        } else {
            let req = StampedAppend { echo, rpc };
            self.client.call::<_, StampedReply>(self.target, &self.addr, PATH_APPEND_STAMPED, &req, ttl).await
        };
        match reply {
            Ok(StampedReply { stamp, result }) => {
                self.reach.answered(self.target);
                let accepted = matches!(&result, Ok(r) if !matches!(r, AppendEntriesResponse::HigherVote(_)));
                self.freshness.replied(self.target, sent, stamp, accepted);
                self.watermark.replied(term, self.target, commit, accepted);
                result.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
            }
            Err(e @ CallError::Unreachable(_)) => Err(RPCError::Unreachable(Unreachable::new(&e))),
            Err(e) => Err(RPCError::Network(NetworkError::new(&e))),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<TypeConfig>,
        option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<u64>, InstallSnapshotError> {
        self.rpc(PATH_SNAPSHOT, &rpc, option.hard_ttl()).await
    }

    async fn vote(&mut self, rpc: VoteRequest<u64>, option: RPCOption) -> RpcResult<VoteResponse<u64>, Infallible> {
        let resp: VoteResponse<u64> = self.rpc(PATH_VOTE, &rpc, option.hard_ttl()).await?;
        self.reach.answered(self.target);
        if !resp.vote_granted && resp.last_log_id > rpc.last_log_id {
            self.contact.behind(self.behind_pause);
        }
        Ok(resp)
    }
}
