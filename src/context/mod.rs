//! The core context every feature builds on: settings, the storage engine, raft, the applied
//! state machine, password hashing, metrics, audit and the node's keys, with the write path
//! (`propose`) and the freshness gate. It imports no feature; each feature keeps its own
//! per-node state beside it.

use std::sync::Arc;
use std::time::Duration;

use idnode_raft::RaftNode;
use idnode_storage::Engine;
use prometheus_client::registry::Registry;

use crate::config::Config;
use crate::http::error::{ApiError, ApiResult};
use crate::http::metrics::Metrics;
use crate::identity::hash_pool::HashPool;
use crate::state::apply::IdentityApp;
use crate::state::command::ApplyResult;
use crate::state::{Applied, ApplyError, Command, Reply};

/// The node's shared context, one per node.
pub struct Core {
    pub cfg: Config,
    pub engine: Arc<Engine>,
    pub raft: Arc<RaftNode>,
    pub app: Arc<IdentityApp>,
    /// argon2id hashing and verification, off the async runtime.
    pub passwords: HashPool,
    /// Verified against when a user does not exist, so that answer takes as long as a real
    /// failed login.
    pub dummy_hash: String,
    pub metrics: Metrics,
    pub registry: Registry,
    /// The audit pipeline: `core.audit.emit(event)` never blocks (`docs/audit.md`).
    pub audit: crate::audit::Audit,
    /// This node's KEK and data keys at run time, and the re-sealer (`rotation::dek`).
    pub node_keys: Arc<crate::rotation::dek::NodeKeys>,
    /// The relationship-store assignment driver, when `[assignment] driver = openfga`; role
    /// assignments are then read and written there instead of in the replicated state.
    pub fga: Option<Arc<crate::openfga::OpenFga>>,
}

impl Core {
    /// Replicates a command and returns what apply decided, whatever its shape (for callers
    /// that do not look at it; the others use [`Core::propose_as`]).
    pub async fn propose(&self, cmd: impl Into<Command>) -> ApiResult<Applied> {
        self.propose_as(cmd).await
    }

    /// Like [`Core::propose`], also returning the command's log index.
    pub async fn propose_at(&self, cmd: impl Into<Command>) -> ApiResult<(u64, Applied)> {
        self.propose_at_as(cmd).await
    }

    /// Replicates a command and returns what apply decided as the command's reply type `R`
    /// (`propose_as::<Region>(Command::CreateRegion(r))`).
    pub async fn propose_as<R: Reply>(&self, cmd: impl Into<Command>) -> ApiResult<R> {
        self.propose_at_as(cmd).await.map(|(_, reply)| reply)
    }

    /// Like [`Core::propose_as`], also returning the command's log index.
    pub async fn propose_at_as<R: Reply>(&self, cmd: impl Into<Command>) -> ApiResult<(u64, R)> {
        let (index, outcome) = self.propose_outcome(cmd).await?;
        Ok((index, outcome?))
    }

    /// Like [`Core::propose_at_as`], with apply's refusal as apply gave it (for callers that
    /// render refusals their own way, as SCIM does).
    pub async fn propose_outcome<R: Reply>(&self, cmd: impl Into<Command>) -> ApiResult<(u64, Result<R, ApplyError>)> {
        let cmd = cmd.into();
        // Free-form attributes are bounded here, where every create and update passes.
        crate::http::limits::check_command(&cmd)?;
        let bytes = postcard::to_allocvec(&cmd).map_err(ApiError::internal)?;
        let (index, reply) = self.raft.propose(bytes).await?;
        let outcome: ApplyResult = postcard::from_bytes(&reply).map_err(ApiError::internal)?;
        // Another shape than the caller's is a bug: a 500, whatever the command changed.
        let outcome = match outcome {
            Ok(applied) => Ok(crate::state::reply::expect::<R>(applied).map_err(ApiError::internal)?),
            Err(refused) => Err(refused),
        };
        Ok((index, outcome))
    }

    /// Waits (bounded) until every other reachable member applied `index`: what revokes a
    /// credential (token revoke, password change, disable, delete) is acknowledged only then,
    /// so no node that answers validates what the caller was told is gone. A member that does
    /// not answer in time has missed word from the leader, and its freshness gate makes it
    /// catch up before it validates anything (see `RaftNode::fresh`).
    pub async fn wait_cluster_applied(&self, index: u64) {
        let confirmed = self.raft.wait_cluster_applied(index, REVOKE_ACK_WAIT).await;
        tracing::debug!(index, ?confirmed, "revocation applied on these members");
    }

    /// The gate in front of every token validation and credential check: a node that may have
    /// missed entries (cut off, paused, just restarted) catches up with the leader first, or
    /// answers 503 rather than from the past (see `RaftNode::ensure_fresh`).
    pub async fn ensure_fresh(&self) -> ApiResult<()> {
        self.raft.ensure_fresh(FRESHNESS_WAIT).await.map_err(cannot_catch_up)?;
        self.settle().await
    }

    /// The gate for a check whose refusals confirm themselves (a token that names state not
    /// applied here is `Lagging` and takes a read barrier): a follower in contact with the
    /// leader answers from its own state, with no round trip (`RaftNode::ensure_fresh_local`).
    /// Call [`Self::settle`] once the answer is known, before sending it.
    pub async fn ensure_fresh_local(&self) -> ApiResult<()> {
        self.raft.ensure_fresh_local(FRESHNESS_WAIT).await.map_err(cannot_catch_up)
    }

    /// Holds an answer until every member that may be answering holds what it may show
    /// (`RaftNode::settle`): free unless a revocation is on its way.
    pub async fn settle(&self) -> ApiResult<()> {
        self.raft.settle(FRESHNESS_WAIT).await.map_err(cannot_catch_up)
    }

    /// Hashes a password off the async runtime.
    pub async fn hash_password(&self, password: String) -> ApiResult<String> {
        self.passwords.hash(password).await
    }

    /// Verifies a password off the async runtime.
    pub async fn verify_password(&self, password: String, phc: String) -> ApiResult<bool> {
        self.passwords.verify(password, phc).await
    }
}

/// How long a credential check waits for a stale node to catch up before it answers 503.
const FRESHNESS_WAIT: Duration = Duration::from_secs(3);

/// How long a revocation waits for the other members to apply it before it answers.
const REVOKE_ACK_WAIT: Duration = Duration::from_secs(2);

fn cannot_catch_up(e: idnode_raft::ProposeError) -> ApiError {
    tracing::warn!(error = %e, "cannot catch up with the leader before checking a credential");
    ApiError::unavailable(
        "This node may have missed recent changes and cannot reach the cluster's leader to catch up. Try again, or \
         use another node.",
    )
}
