//! Operator and cluster-wide calls on the peer listener: status, membership changes from any
//! node (forwarded to the leader), and "wait until you applied N" so a node can make a write
//! visible everywhere before it answers (token revocation).

use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use serde::{Deserialize, Serialize};

use crate::auth::Credential;
use crate::client::{ClientTls, PeerClient};
use crate::consistency::{CheckRequest, PATH_CHECK};
use crate::{ClusterStatus, ConsistencyReport, RaftNode};

pub const PATH_STATUS: &str = "/cluster/status";
pub const PATH_ADMIN: &str = "/cluster/admin";
pub const PATH_APPLIED: &str = "/cluster/applied";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum AdminRequest {
    AddLearner { id: u64, addr: String },
    Promote { id: u64 },
    Remove { id: u64 },
}

/// Asks a node to wait (bounded) until it applied `index`; it answers its applied index.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppliedRequest {
    pub index: u64,
    pub wait_ms: u64,
}

impl RaftNode {
    pub(crate) async fn admin_request(&self, req: AdminRequest) -> Result<ClusterStatus, String> {
        let r = match req {
            AdminRequest::AddLearner { id, addr } => self.add_learner(id, addr).await,
            AdminRequest::Promote { id } => self.promote(id).await,
            AdminRequest::Remove { id } => self.remove(id).await,
        };
        r.map_err(|e| e.to_string())?;
        // Report the membership as it now stands, even when a follower served the call.
        self.linearizable_barrier().await.map_err(|e| e.to_string())?;
        Ok(self.status())
    }

    pub(crate) async fn applied_request(&self, req: AppliedRequest) -> u64 {
        let wait = Duration::from_millis(req.wait_ms.min(10_000));
        let _ = self.raft.wait(Some(wait)).applied_index_at_least(Some(req.index), "peer wait").await;
        self.applied_index()
    }

    /// Waits until every other member (voters and learners) applied `index`, or `timeout`
    /// passed: members that are down or slow are not waited for beyond it. Returns the ids
    /// that confirmed.
    pub async fn wait_cluster_applied(&self, index: u64, timeout: Duration) -> Vec<u64> {
        let status = self.status();
        let peers: Vec<_> =
            status.voters.iter().chain(status.learners.iter()).filter(|m| m.id != self.id).cloned().collect();
        let req = AppliedRequest { index, wait_ms: timeout.as_millis() as u64 };
        let calls = peers.iter().map(|m| {
            let client = self.client.clone();
            let req = req.clone();
            async move {
                let got: Result<u64, _> =
                    client.call(m.id, &m.addr, PATH_APPLIED, &req, timeout + Duration::from_millis(200)).await;
                matches!(got, Ok(applied) if applied >= index).then_some(m.id)
            }
        });
        join_all(calls).await.into_iter().flatten().collect()
    }
}

/// What `idnode cluster …` uses: any node's peer address plus the cluster secret.
pub struct AdminClient {
    client: PeerClient,
    addr: String,
}

impl AdminClient {
    /// `addr` is `HOST:PORT` (a scheme in front is accepted and dropped: `tls` decides it).
    pub fn new(addr: &str, secret: Option<&str>, tls: Option<&ClientTls>) -> anyhow::Result<Self> {
        if secret.is_none() {
            anyhow::bail!("set IDNODE_CLUSTER_SECRET to the cluster's secret");
        }
        let addr = addr.trim_start_matches("https://").trim_start_matches("http://").trim_end_matches('/');
        let client = PeerClient::new(Arc::new(Credential::from_secret(secret)), tls)?;
        Ok(AdminClient { client, addr: addr.to_string() })
    }

    /// The member id of the node called: requests are signed for it alone. Asked before each
    /// call (the address may name another node by the next call, e.g. behind a service name).
    async fn member(&self) -> anyhow::Result<u64> {
        Ok(self.client.member_id(&self.addr).await?)
    }

    pub async fn status(&self) -> anyhow::Result<ClusterStatus> {
        let to = self.member().await?;
        Ok(self.client.call(to, &self.addr, PATH_STATUS, &(), Duration::from_secs(5)).await?)
    }

    async fn admin(&self, req: AdminRequest) -> anyhow::Result<ClusterStatus> {
        let to = self.member().await?;
        let r: Result<ClusterStatus, String> =
            self.client.call(to, &self.addr, PATH_ADMIN, &req, Duration::from_secs(30)).await?;
        r.map_err(|e| anyhow::anyhow!(e))
    }

    pub async fn add_learner(&self, id: u64, addr: &str) -> anyhow::Result<ClusterStatus> {
        self.admin(AdminRequest::AddLearner { id, addr: addr.to_string() }).await
    }

    pub async fn promote(&self, id: u64) -> anyhow::Result<ClusterStatus> {
        self.admin(AdminRequest::Promote { id }).await
    }

    pub async fn remove(&self, id: u64) -> anyhow::Result<ClusterStatus> {
        self.admin(AdminRequest::Remove { id }).await
    }

    /// Has the node run a consistency check, members given `wait` to answer.
    pub async fn check(&self, wait: Duration) -> anyhow::Result<ConsistencyReport> {
        let req = CheckRequest { wait_ms: wait.as_millis() as u64 };
        let to = self.member().await?;
        let r: Result<ConsistencyReport, String> =
            self.client.call(to, &self.addr, PATH_CHECK, &req, wait + Duration::from_secs(15)).await?;
        r.map_err(|e| anyhow::anyhow!(e))
    }
}
