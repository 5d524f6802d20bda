//! The running raft member: startup, cluster formation, and the client-facing operations
//! (proposals, read barriers, membership changes) with forwarding to the leader.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context};
use idnode_storage::Engine;
use openraft::error::{InitializeError, RaftError};
use openraft::metrics::WaitError;
use openraft::{BasicNode, ServerState};
use prometheus_client::metrics::counter::Counter;
use tokio::time::Instant;

use crate::auth::{Credential, Gate};
use crate::client::PeerClient;
use crate::consistency::Standing;
use crate::digests::Digests;
use crate::freshness::Freshness;
use crate::log_store::LogStore;
use crate::network::Network;
use crate::state_machine::{SmLinks, SmStats, StateMachine};
use crate::status::{self, ClusterStatus, Readiness};
use crate::types::{Proposal, Raft, TypeConfig};
use crate::wire::{LeaderReply, LeaderRequest};
use crate::{ProposeError, RaftOptions, StateApp, COLUMN_FAMILIES};

pub(crate) type Metrics = openraft::RaftMetrics<u64, BasicNode>;

/// Grace for the local apply after a write committed right at the deadline.
const APPLY_GRACE: Duration = Duration::from_millis(200);
/// How often a node waiting to apply looks whether it has been cut off meanwhile.
const SILENCE_POLL: Duration = Duration::from_millis(100);

pub struct RaftNode {
    pub(crate) id: u64,
    pub(crate) opts: RaftOptions,
    pub(crate) raft: Raft,
    pub(crate) engine: Arc<Engine>,
    /// Checks incoming peer and operator requests (signed for this member).
    pub(crate) gate: Arc<Gate>,
    pub(crate) client: PeerClient,
    pub(crate) committed: Arc<AtomicU64>,
    pub(crate) sm_stats: Arc<SmStats>,
    pub(crate) digests: Arc<Digests>,
    pub(crate) standing: Mutex<Standing>,
    pub(crate) proposals: Counter,
    pub(crate) forwarded: Counter,
    pub(crate) freshness: Arc<Freshness>,
    /// When a leader was last heard, for elections that do not wait out fixed timers.
    pub(crate) contact: Arc<crate::election::Contact>,
    /// For the leader's check of proposals before they enter the log.
    pub(crate) app: Arc<dyn StateApp>,
    /// The state machine's shared half (apply lock, snapshot column families).
    pub(crate) sm: Arc<crate::state_machine::SmShared>,
    /// Checked proposals on their way into the log, batched (group commit).
    pub(crate) batcher: crate::batcher::Batcher,
    /// Proposals a follower gathers for the leader (`forward_batch`).
    pub(crate) forwards: crate::forward_batch::ForwardQueue,
    /// Followers' credential checks waiting for a read index (`read_index`).
    pub(crate) read_indexes: crate::read_index::ReadIndexQueue,
    /// Which voters answered this member lately (`reach`).
    pub(crate) reach: Arc<crate::reach::Reach>,
    /// What every member that may be answering heard of (`watermark`).
    pub(crate) watermark: Arc<crate::watermark::Watermark>,
    /// The cluster-wide figures this node counts while it leads (`lease`).
    pub(crate) lease_buckets: crate::lease::LeaseBuckets,
    /// Leases asked for on this node, and those that failed (the caller counted its share).
    pub(crate) leases: Counter,
    pub(crate) lease_failures: Counter,
}

impl RaftNode {
    pub async fn start(
        opts: RaftOptions,
        engine: Arc<Engine>,
        app: Arc<dyn StateApp>,
    ) -> anyhow::Result<Arc<RaftNode>> {
        for cf in COLUMN_FAMILIES.iter().chain(app.column_families()) {
            if !engine.column_families().contains(cf) {
                bail!("the engine was opened without column family {cf}");
            }
        }
        let config = Arc::new(opts.raft_config().context("raft options")?);
        let cred = Arc::new(Credential::from_secret(opts.cluster_secret.as_deref()));
        let gate = Arc::new(Gate::new(cred.clone(), opts.node_id));
        let client = PeerClient::new(cred, opts.peer_tls.as_ref())?;
        let log = LogStore::new(engine.clone());
        let committed = log.committed_cell();
        let log_volume = log.volume();
        let watermark = Arc::new(crate::watermark::Watermark::new(Duration::from_millis(opts.election_timeout_min_ms)));
        let mut links = SmLinks::new(opts.cluster_secret.as_deref());
        links.watermark = watermark.clone();
        let (sm_stats, digests) = (links.stats.clone(), links.digests.clone());
        let sm = StateMachine::new(engine.clone(), app.clone(), links)?;
        let sm_shared = sm.shared();
        let freshness = Arc::new(Freshness::new(Duration::from_millis(opts.election_timeout_min_ms)));
        let contact = Arc::new(crate::election::Contact::default());
        let reach = Arc::new(crate::reach::Reach::default());
        let network = Network {
            client: client.clone(),
            freshness: freshness.clone(),
            watermark: watermark.clone(),
            committed: committed.clone(),
            contact: contact.clone(),
            reach: reach.clone(),
            behind_pause: Duration::from_millis(2 * opts.election_timeout_max_ms),
        };
        let raft = Raft::new(opts.node_id, config, network, log, sm).await?;
        let batcher = crate::batcher::Batcher::start(raft.clone(), engine.clone());
        let (forwards, forward_rx) = crate::forward_batch::ForwardQueue::new();
        let (read_indexes, read_index_rx) = crate::read_index::ReadIndexQueue::new();
        let node = Arc::new(RaftNode {
            id: opts.node_id,
            opts,
            raft,
            engine,
            gate,
            client,
            committed,
            sm_stats,
            digests,
            standing: Mutex::new(Standing::default()),
            proposals: Counter::default(),
            forwarded: Counter::default(),
            freshness,
            contact,
            app,
            sm: sm_shared,
            batcher,
            forwards,
            read_indexes,
            reach,
            watermark,
            lease_buckets: crate::lease::LeaseBuckets::default(),
            leases: Counter::default(),
            lease_failures: Counter::default(),
        });
        node.watermark.set_enabled(node.cluster_version() >= crate::wire::WATERMARK_VERSION);
        node.spawn_membership_watch();
        node.spawn_forward_groups(forward_rx);
        node.spawn_read_index_rounds(read_index_rx);
        node.spawn_reach_probes();
        node.spawn_version_upgrades();
        node.spawn_fast_elections();
        node.spawn_snapshot_policy(log_volume);
        Ok(node)
    }

    /// Forms the cluster (like etcd's --initial-cluster). Idempotent: a node whose data dir is
    /// already initialized, or that already learned the membership from a peer, ignores it.
    pub async fn initialize(&self, members: BTreeMap<u64, String>) -> anyhow::Result<()> {
        if !members.contains_key(&self.id) {
            bail!("node {} is not among the initial members {:?}", self.id, members.keys());
        }
        if self.raft.is_initialized().await? {
            return Ok(());
        }
        let nodes: BTreeMap<u64, BasicNode> = members.into_iter().map(|(id, addr)| (id, BasicNode { addr })).collect();
        match self.raft.initialize(nodes).await {
            Ok(()) | Err(RaftError::APIError(InitializeError::NotAllowed(_))) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Replicates a command under a fresh request id; see [`RaftNode::propose_with_id`].
    pub async fn propose(&self, payload: Vec<u8>) -> Result<(u64, Vec<u8>), ProposeError> {
        self.propose_with_id(idnode_keys::random_bytes::<16>(), payload).await
    }

    /// Replicates a command (forwarded to the leader when needed, retried with the same
    /// request id, so it applies at most once) and returns once this node has applied it.
    pub async fn propose_with_id(
        &self,
        request_id: [u8; 16],
        payload: Vec<u8>,
    ) -> Result<(u64, Vec<u8>), ProposeError> {
        self.proposals.inc();
        let span = crate::traced_span!("raft.propose", raft.index = tracing::field::Empty);
        let work = async {
            let deadline = Instant::now() + self.opts.forward_timeout;
            match self.propose_on_leader(Proposal { request_id, payload }, deadline).await? {
                LeaderReply::Written { index, reply } => {
                    tracing::Span::current().record("raft.index", crate::trace_context::attr_index(index));
                    self.wait_applied(index, deadline).await?;
                    Ok((index, reply))
                }
                other => Err(ProposeError::Rejected(format!("unexpected leader reply {other:?}"))),
            }
        };
        tracing::Instrument::instrument(work, span).await
    }

    /// Linearizable read barrier: the leader names its commit point, from its lease or after
    /// confirming its leadership with a quorum (`read_index_here`); this node then waits until
    /// it has applied that far.
    pub async fn linearizable_barrier(&self) -> Result<(), ProposeError> {
        let deadline = Instant::now() + self.opts.forward_timeout;
        let index = self.read_index(deadline).await?;
        self.wait_applied(index, deadline).await?;
        self.freshness.barrier_passed(index);
        Ok(())
    }

    /// Whether this node may answer from its own state (see `freshness`): it heard a leader
    /// (or, leading, a quorum heard it) within the minimum election timeout, and it applied
    /// everything it knows to be committed.
    pub fn fresh(&self) -> bool {
        let (silence, needed) = self.standing_now();
        silence.is_some_and(|s| s < self.freshness.window()) && self.applied_index() >= needed
    }

    /// (how long since this node last certainly heard a leader or, leading, a quorum heard
    /// it, `None` if never; the index to have applied).
    pub(crate) fn standing_now(&self) -> (Option<Duration>, u64) {
        let committed = self.committed.load(Ordering::Acquire);
        self.with_metrics(|m| {
            if m.state == ServerState::Leader && m.current_leader == Some(self.id) {
                let voters: Vec<u64> = m.membership_config.membership().voter_ids().collect();
                (self.freshness.leader_silence(self.id, &voters), committed)
            } else {
                let (silence, heard) = self.freshness.follower_silence();
                (silence, committed.max(heard))
            }
        })
    }

    /// The leader's commit index when it may vouch for it from its lease, as it does for its
    /// own credential checks: a quorum accepted its appends within the window (so no other
    /// leader can have committed since), and it applied an entry of its own term (so it knows of
    /// every commit before it). `None`: confirm with a quorum instead (`get_read_log_id`).
    pub(crate) fn leased_commit(&self) -> Option<u64> {
        let committed = self.committed.load(Ordering::Acquire);
        self.with_metrics(|m| {
            let leading = m.state == ServerState::Leader && m.current_leader == Some(self.id);
            let own_term = m.last_applied.is_some_and(|l| l.leader_id.term == m.current_term);
            if !leading || !own_term {
                return None;
            }
            let voters: Vec<u64> = m.membership_config.membership().voter_ids().collect();
            let silence = self.freshness.leader_silence(self.id, &voters)?;
            (silence < self.freshness.window()).then_some(committed)
        })
    }

    /// How long a node may go without word from a leader (or, leading, from a quorum) and
    /// still try to catch up before answering: the maximum election timeout, when the members
    /// start electing a new leader (`election`). A node still silent then answers 503 at once
    /// rather than after a barrier's wait, unless it can reach a quorum (`cut_off`).
    fn silence_limit(&self) -> Duration {
        Duration::from_millis(self.opts.election_timeout_max_ms)
    }

    /// Whether a waiting credential check should give up (503): this node has been silent for
    /// [`Self::silence_limit`] and cannot reach a quorum of voters either (`reach`). A member
    /// that can is on the side that elects the next leader, and waits for it (within the
    /// check's limit) as a write through it does.
    fn cut_off(&self) -> bool {
        self.standing_now().0.is_none_or(|s| s >= self.silence_limit()) && !self.quorum_in_reach()
    }

    /// Makes sure this node does not answer from the past. A leader within its lease only
    /// waits to apply its commit index. Any other node takes a read index (`read_index`): a
    /// follower in contact learns of a commit up to a heartbeat late, and a change another
    /// member already shows must not be missing here; a leader just elected may not yet know
    /// what the previous one committed. Err when that cannot finish within `limit`, or once the
    /// node is cut off (`cut_off`): the caller answers 503.
    pub async fn ensure_fresh(&self, limit: Duration) -> Result<(), ProposeError> {
        let (silence, needed) = self.standing_now();
        let deadline = Instant::now() + limit;
        let in_contact = silence.is_some_and(|s| s < self.freshness.window());
        if in_contact {
            if let Some(committed) = self.leased_commit() {
                return self.wait_applied_while_heard(committed.max(needed), deadline).await;
            }
        } else {
            self.freshness.barriers.fetch_add(1, Ordering::Relaxed);
        }
        let index = match silence {
            // Never heard a leader (just started, or its cluster is still electing the first
            // one): it has no silence to judge by, and waits the whole limit.
            None => self.read_index(deadline).await?,
            Some(_) => self.while_heard(self.read_index(deadline)).await?,
        };
        self.freshness.barrier_passed(index);
        if in_contact {
            self.wait_applied_while_heard(index.max(needed), deadline).await
        } else {
            self.wait_applied(index.max(needed), deadline).await
        }
    }

    /// Keeps the freshness gate's view of the voters current: a leader vouches for its
    /// followers only while a quorum of them hears it.
    fn spawn_membership_watch(&self) {
        let mut rx = self.raft.metrics();
        let (freshness, me) = (self.freshness.clone(), self.id);
        tokio::spawn(async move {
            let mut seen: Option<Vec<u64>> = None;
            loop {
                let voters: Vec<u64> = rx.borrow_and_update().membership_config.membership().voter_ids().collect();
                if seen.as_ref() != Some(&voters) {
                    freshness.set_membership(me, voters.clone());
                    seen = Some(voters);
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        });
    }

    /// Adds a learner (returns once the membership change committed, not once it caught up).
    pub async fn add_learner(&self, id: u64, addr: String) -> Result<(), ProposeError> {
        self.admin(LeaderRequest::AddLearner { id, addr }).await
    }

    /// Turns a learner into a voter.
    pub async fn promote(&self, id: u64) -> Result<(), ProposeError> {
        self.admin(LeaderRequest::Promote { id }).await
    }

    /// Removes a voter or learner from the cluster (removing a non-member succeeds).
    pub async fn remove(&self, id: u64) -> Result<(), ProposeError> {
        self.admin(LeaderRequest::Remove { id }).await
    }

    async fn admin(&self, req: LeaderRequest) -> Result<(), ProposeError> {
        let deadline = Instant::now() + self.opts.forward_timeout;
        self.leader_call(req, deadline).await.map(|_| ())
    }

    /// Runs `f` on the current raft metrics without cloning them.
    pub(crate) fn with_metrics<T>(&self, f: impl FnOnce(&Metrics) -> T) -> T {
        let rx = self.raft.metrics();
        let m = rx.borrow();
        f(&m)
    }

    pub fn status(&self) -> ClusterStatus {
        let committed = self.committed.load(Ordering::Acquire);
        let mut status = self.with_metrics(|m| status::status(m, committed));
        status.cluster_version = self.cluster_version();
        status
    }

    /// Ready to serve: see `status::readiness`; also not ready while a consistency check
    /// found this node's state different from the cluster's, or found the members disagreeing
    /// with no majority to tell which side is right (a tie).
    pub fn readiness(&self) -> Readiness {
        let committed = self.committed.load(Ordering::Acquire);
        let mut r = self.with_metrics(|m| status::readiness(m, committed));
        if let Some(reason) = self.divergence() {
            r.ok = false;
            r.reasons.push(reason);
        }
        if let Some(reason) = self.consistency_tie() {
            r.ok = false;
            r.reasons.push(reason);
        }
        let quarantined = self.engine.quarantined();
        if !quarantined.is_empty() {
            r.ok = false;
            r.reasons.push(format!("quarantined column families: {}", quarantined.join(", ")));
        }
        if self.sm_stats.installing.load(Ordering::Acquire) {
            r.ok = false;
            r.reasons.push("replacing its state with a snapshot from the leader".to_string());
        }
        r
    }

    pub fn applied_index(&self) -> u64 {
        self.with_metrics(|m| m.last_applied.map_or(0, |l| l.index))
    }

    /// The hosts (names or addresses, without ports) of every voter and learner this node
    /// knows; empty before it learned any membership (a node waiting to be added).
    pub fn member_hosts(&self) -> Vec<String> {
        self.with_metrics(|m| {
            m.membership_config.nodes().map(|(_, n)| crate::status::host_of(&n.addr).to_string()).collect()
        })
    }

    /// How many members (voters and learners) serve the cluster: what the cluster-wide rate
    /// limits divide their figures by. At least 1 (a node that knows no membership yet).
    pub fn member_count(&self) -> usize {
        self.with_metrics(|m| m.membership_config.nodes().count()).max(1)
    }

    pub fn is_leader(&self) -> bool {
        self.with_metrics(|m| m.state == ServerState::Leader && m.current_leader == Some(self.id))
    }

    pub fn leader_id(&self) -> Option<u64> {
        self.with_metrics(|m| m.current_leader)
    }

    pub fn committed_index(&self) -> u64 {
        self.committed.load(Ordering::Acquire)
    }

    pub async fn shutdown(&self) {
        if let Err(e) = self.raft.shutdown().await {
            tracing::warn!(error = %e, "raft shutdown");
        }
    }

    /// Escape hatch (tests, diagnostics).
    pub fn raft(&self) -> &openraft::Raft<TypeConfig> {
        &self.raft
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Waits until this node applied `index` (read-your-writes), bounded by `deadline`.
    /// [`Self::wait_applied`] for a node in contact with the leader, which gives up (503)
    /// once the node has gone [`Self::silence_limit`] without word from a leader: committed
    /// entries it has heard of may never reach it across a cut made meanwhile, and waiting out
    /// the caller's whole limit kept a cut-off member from answering for seconds.
    pub(crate) async fn wait_applied_while_heard(&self, index: u64, deadline: Instant) -> Result<(), ProposeError> {
        if self.applied_index() >= index {
            return Ok(());
        }
        self.while_heard(self.wait_applied(index, deadline)).await
    }

    /// Runs `work` unless this node is cut off first (`cut_off`; then `NoLeader`: the caller
    /// answers 503 rather than wait out its whole limit).
    pub(crate) async fn while_heard<T>(
        &self,
        work: impl Future<Output = Result<T, ProposeError>>,
    ) -> Result<T, ProposeError> {
        if self.cut_off() {
            return Err(ProposeError::NoLeader);
        }
        let cut_off = async {
            loop {
                tokio::time::sleep(SILENCE_POLL).await;
                if self.cut_off() {
                    return;
                }
            }
        };
        tokio::select! {
            done = work => done,
            () = cut_off => Err(ProposeError::NoLeader),
        }
    }

    async fn wait_applied(&self, index: u64, deadline: Instant) -> Result<(), ProposeError> {
        if self.applied_index() >= index {
            return Ok(());
        }
        let wait = deadline.saturating_duration_since(Instant::now()).max(APPLY_GRACE);
        match self.raft.wait(Some(wait)).applied_index_at_least(Some(index), "read-your-writes").await {
            Ok(_) => Ok(()),
            Err(WaitError::Timeout(..)) => Err(ProposeError::Timeout),
            Err(WaitError::ShuttingDown) => Err(ProposeError::Fatal("raft is shutting down".into())),
        }
    }
}
