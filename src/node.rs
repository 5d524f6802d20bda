//! Wiring: key material, storage, raft, listeners, bootstrap, shutdown.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::serve::ListenerExt;
use idnode_keys::{DataKeys, Kek, KekSource, PasswordHasher, TokenKeyRing};
use idnode_raft::{RaftNode, RaftOptions};
use idnode_storage::Engine;
use prometheus_client::registry::Registry;
use serde_json::Value;
use tokio::net::TcpListener;

use crate::config::Config;
use crate::http::error::{ApiError, ApiResult};
use crate::http::guard::ListenerLimits;
use crate::http::metrics::Metrics;
use crate::http::tls::{Admit, ServerTls, TlsListener};
use crate::identity::hash_pool::HashPool;
use crate::state::apply::IdentityApp;
use crate::state::command::ApplyResult;
use crate::state::{Applied, ApplyError, Command, Reader, Reply, STATE_CFS};
use crate::token::{footprint, AppliedCache, ValidToken};

/// Byte budgets of the per-node token caches. A validated token carries its user, projects and
/// roles (free-form attributes up to 64 KiB each), a body its catalog: counted in entries
/// alone, 100,000 of them could hold gigabytes.
const TOKEN_CACHE_BYTES: usize = 64 << 20;
const TOKEN_BODIES_BYTES: usize = 128 << 20;

/// Everything a request handler needs, shared by all handlers of a node.
pub struct Node {
    pub cfg: Config,
    pub engine: Arc<Engine>,
    pub raft: Arc<RaftNode>,
    pub app: Arc<IdentityApp>,
    /// argon2id hashing and verification, off the async runtime.
    pub passwords: HashPool,
    /// Verified against when a user does not exist, so that answer takes as long as a real
    /// failed login.
    pub dummy_hash: String,
    pub token_cache: AppliedCache<String, Arc<ValidToken>>,
    pub ring_cache: AppliedCache<(), Arc<TokenKeyRing>>,
    pub catalog_cache: AppliedCache<(), Arc<Value>>,
    /// Serialized token objects per (token, nocatalog), for the validation they came from.
    pub token_bodies: AppliedCache<(String, bool), (Arc<ValidToken>, axum::body::Bytes)>,
    pub metrics: Metrics,
    pub registry: Registry,
    /// Signed requests already exchanged for a token (`/v3/sigtokens`), per node.
    pub signed_requests: crate::credential::replay::ReplayGuard,
    /// Per-source limits on token issue, password change and signed-request tokens.
    pub rate_limits: crate::http::ratelimit::RateLimits,
    /// The OAuth2 / OpenID Connect provider's per-node state (parsed keys, metrics).
    pub oauth2: crate::oauth2::Provider,
    /// The audit pipeline: `node.audit.emit(event)` never blocks (`docs/audit.md`).
    pub audit: crate::audit::Audit,
    /// Logins through mapping rulesets (key sets, regexes, rulesets, per-provider limits).
    pub mapped: crate::mapped_auth::MappedAuth,
    /// API key uses not yet reported through raft (`api_keys::auth`).
    pub api_key_usage: crate::api_keys::auth::Usage,
    /// SCIM's per-provider write quota and key grants (`scim`).
    pub scim: crate::scim::Scim,
    /// This node's KEK and data keys at run time, and the re-sealer (`rotation::dek`).
    pub node_keys: Arc<crate::rotation::dek::NodeKeys>,
    /// The WebAuthn relying party (`passkey`), or why passkeys are off.
    pub passkeys: crate::passkey::RelyingParty,
}

impl Node {
    /// Replicates a command and returns what apply decided, whatever its shape (for callers
    /// that do not look at it; the others use [`Node::propose_as`]).
    pub async fn propose(&self, cmd: impl Into<Command>) -> ApiResult<Applied> {
        self.propose_as(cmd).await
    }

    /// Like [`Node::propose`], also returning the command's log index.
    pub async fn propose_at(&self, cmd: impl Into<Command>) -> ApiResult<(u64, Applied)> {
        self.propose_at_as(cmd).await
    }

    /// Replicates a command and returns what apply decided as the command's reply type `R`
    /// (`propose_as::<Region>(Command::CreateRegion(r))`).
    pub async fn propose_as<R: Reply>(&self, cmd: impl Into<Command>) -> ApiResult<R> {
        self.propose_at_as(cmd).await.map(|(_, reply)| reply)
    }

    /// Like [`Node::propose_as`], also returning the command's log index.
    pub async fn propose_at_as<R: Reply>(&self, cmd: impl Into<Command>) -> ApiResult<(u64, R)> {
        let (index, outcome) = self.propose_outcome(cmd).await?;
        Ok((index, outcome?))
    }

    /// Like [`Node::propose_at_as`], with apply's refusal as apply gave it (for callers that
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
        self.raft.ensure_fresh(FRESHNESS_WAIT).await.map_err(|e| {
            tracing::warn!(error = %e, "cannot catch up with the leader before checking a credential");
            ApiError::unavailable(
                "This node may have missed recent changes and cannot reach the cluster's leader to catch up. Try \
                 again, or use another node.",
            )
        })
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

/// Opens the node's key ring (under its KEK) and its storage engine with every column family;
/// returns the KEK too (kept to re-wrap the ring on rotations).
pub(crate) fn open_engine(cfg: &Config) -> anyhow::Result<(Arc<Engine>, Kek)> {
    std::fs::create_dir_all(&cfg.data_dir).with_context(|| format!("creating {}", cfg.data_dir.display()))?;
    let (kek, source) = crate::kek::load(cfg)?;
    if let KekSource::Generated(path) = &source {
        tracing::warn!(
            "generated a new key-encryption key at {}: anyone with this file and the data directory can read the data; \
             for production supply IDNODE_KEK or kek_file from a secret store and keep it apart from the data",
            path.display()
        );
    }
    let keys = Arc::new(DataKeys::open_or_create(&kek, &cfg.data_dir.join("keyring"))?);
    let cfs: Vec<&'static str> = idnode_raft::COLUMN_FAMILIES.iter().chain(STATE_CFS).copied().collect();
    Ok((Arc::new(Engine::open(&cfg.data_dir.join("db"), &cfs, keys)?), kek))
}

/// Opens keys, storage and raft for the configured data directory.
pub(crate) async fn open(cfg: Config) -> anyhow::Result<Arc<Node>> {
    crate::backup_cli::refuse_unfinished_restore(&cfg.data_dir)?;
    let (engine, kek) = open_engine(&cfg)?;
    let app = IdentityApp::new(Vec::new());
    let opts = RaftOptions {
        node_id: cfg.node_id,
        advertise_addr: cfg.advertise_peer(),
        cluster_secret: cfg.cluster_secret.clone(),
        heartbeat_ms: cfg.raft_heartbeat_ms,
        election_timeout_min_ms: cfg.raft_election_min_ms,
        election_timeout_max_ms: cfg.raft_election_max_ms,
        snapshot_logs_since_last: cfg.raft_snapshot_logs,
        max_in_snapshot_log_to_keep: cfg.raft_snapshot_catchup,
        peer_tls: cfg.peer_tls.as_ref().map(|t| t.client()).transpose()?,
        ..RaftOptions::default()
    };
    let raft = RaftNode::start(opts, engine.clone(), app.clone()).await?;
    // A directory that does not compile leaves the bundled defaults in force and fails /health.
    let _ = crate::policy::global().configure(cfg.policy_directory.clone());
    let rate_limits = crate::http::ratelimit::RateLimits::new(
        cfg.auth_rate_limit_per_second,
        cfg.auth_rate_limit_burst,
        (cfg.oauth2.rate_limit_per_second, cfg.oauth2.rate_limit_burst),
        cfg.api_trusted_proxies.clone(),
    );
    let mut registry = Registry::default();
    let metrics = Metrics::new(&mut registry);
    raft.register_metrics(&mut registry);
    let node_keys = crate::rotation::dek::NodeKeys::new(
        kek,
        cfg.data_dir.join("keyring"),
        engine.keys().clone(),
        cfg.keys_reseal_rate,
        &mut registry,
    );
    let oauth2 = crate::oauth2::Provider::new(cfg.oauth2.rate_limit_per_second, cfg.oauth2.rate_limit_burst);
    oauth2.metrics.register(&mut registry);
    let audit = crate::audit::Audit::start(crate::audit::AuditConfig {
        settings: cfg.audit.clone(),
        node_id: cfg.node_id,
        keys: engine.keys().clone(),
        retry_max: crate::audit::RETRY_MAX,
    })?;
    audit.metrics().register(&mut registry);
    let mapped = crate::mapped_auth::MappedAuth::new(&cfg.shadow_registry, &cfg.federation)?;
    let scim = crate::scim::Scim::new(&cfg.scim);
    let passkeys = crate::passkey::RelyingParty::new(&cfg.passkey)?;
    if let Some(why) = passkeys.disabled() {
        tracing::warn!("passkeys are off: {why}");
    }
    let hasher = PasswordHasher::new(cfg.password)?;
    let dummy_hash = hasher.hash(&idnode_keys::random_token(16))?;
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
    Ok(Arc::new(Node {
        cfg,
        engine,
        raft,
        app,
        passwords: HashPool::start(hasher, threads, 256)?,
        dummy_hash,
        token_cache: AppliedCache::with_budget(100_000, TOKEN_CACHE_BYTES, footprint::valid_token),
        ring_cache: AppliedCache::new(1),
        catalog_cache: AppliedCache::new(1),
        token_bodies: AppliedCache::with_budget(100_000, TOKEN_BODIES_BYTES, footprint::token_body),
        metrics,
        registry,
        signed_requests: crate::credential::replay::ReplayGuard::new(crate::credential::replay::CAPACITY),
        rate_limits,
        oauth2,
        audit,
        mapped,
        api_key_usage: crate::api_keys::auth::Usage::default(),
        scim,
        node_keys,
        passkeys,
    }))
}

async fn bind(addr: &str, what: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr).await.with_context(|| format!("binding the {what} listener on {addr}"))
}

/// A bound listener, plain or behind TLS.
enum Listening {
    Plain(TcpListener),
    Tls(TlsListener),
}

impl Listening {
    /// `tcp` as is, or behind TLS with `config` (admitting only what `admit` accepts).
    fn new(
        tcp: TcpListener,
        config: Option<&Arc<rustls::ServerConfig>>,
        admit: Option<Admit>,
        what: &'static str,
    ) -> Self {
        match config {
            Some(c) => Listening::Tls(TlsListener::new(tcp, c.clone(), admit, what)),
            None => Listening::Plain(tcp),
        }
    }
}

/// Serves `router` on `listener` within `limits` (request timeout, requests in flight).
fn spawn_server(listener: Listening, router: axum::Router, limits: ListenerLimits, what: &'static str) {
    let router = crate::http::guard::bounded(router, limits);
    tokio::spawn(async move {
        let svc = router.into_make_service_with_connect_info::<SocketAddr>();
        let served = match listener {
            Listening::Plain(l) => axum::serve(l, svc).await,
            // axum gives the remote address as `ConnectInfo<SocketAddr>` for TCP listeners and
            // for tapped ones; the tap does nothing (nodelay is set before the handshake).
            Listening::Tls(l) => axum::serve(l.tap_io(|_| {}), svc).await,
        };
        if let Err(e) = served {
            tracing::error!("{what} listener stopped: {e}");
        }
    });
}

/// Serves the raft and admin routes; with peer TLS, only to callers whose certificate names
/// a current member.
fn spawn_peer_server(node: &Node, tcp: TcpListener, tls: &ServerTls) {
    let raft = node.raft.clone();
    let admit = crate::http::tls::member_check(move || raft.member_hosts());
    let listener = Listening::new(tcp, tls.peer.as_ref(), Some(admit), "peer");
    let limits = ListenerLimits::peer(&node.cfg, node.raft.peer_request_timeout());
    spawn_server(listener, node.raft.peer_router(), limits, "peer");
}

/// `idnode serve`.
pub async fn serve(cfg: Config) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let peer = bind(&cfg.peer_listen, "peer").await?;
    let api = bind(&cfg.listen, "API").await?;
    let ops = bind(&cfg.ops_listen, "ops").await?;
    let tls = ServerTls::load(&cfg)?;
    let node = open(cfg).await?;
    spawn_peer_server(&node, peer, &tls);
    if node.cfg.form_cluster {
        node.raft.initialize(node.cfg.members()).await?;
    }
    let api = Listening::new(api, tls.api.as_ref(), None, "API");
    spawn_server(api, crate::http::router::api(node.clone()), ListenerLimits::api(&node.cfg), "API");
    let ops = Listening::new(ops, tls.api.as_ref(), None, "ops");
    spawn_server(ops, crate::http::ops::router(node.clone()), ListenerLimits::ops(), "ops");
    tracing::info!(
        node_id = node.cfg.node_id,
        api = %node.cfg.listen,
        ops = %node.cfg.ops_listen,
        peer = %node.cfg.peer_listen,
        https = tls.api.is_some(),
        peer_mtls = tls.peer.is_some(),
        "idnode started in {:?}",
        started.elapsed()
    );
    let bootstrapper = tokio::spawn(bootstrap_when_leader(node.clone()));
    let reloader = tokio::spawn(reload_policy_on_sighup());
    let housekeeper = tokio::spawn(forget_idle_rate_limits(node.clone()));
    let mut jobs = crate::jobs::spawn(&node);
    jobs.push(node.node_keys.spawn(node.engine.clone(), node.audit.metrics().spool_bytes.clone()));
    jobs.extend(crate::otlp::spawn(&node));
    let checker = match node.cfg.raft_consistency_check_interval_s {
        0 => None,
        s => Some(node.raft.spawn_consistency_checks(Duration::from_secs(s))),
    };
    shutdown_signal().await;
    tracing::info!("shutting down");
    bootstrapper.abort();
    reloader.abort();
    housekeeper.abort();
    jobs.iter().for_each(|j| j.abort());
    if let Some(c) = checker {
        c.abort();
    }
    // Events still queued reach the sink or the spool before the process goes.
    if !node.audit.flush(AUDIT_FLUSH_WAIT).await {
        tracing::warn!("audit events still queued at shutdown may be lost (sink and spool did not keep up)");
    }
    node.raft.shutdown().await;
    node.engine.flush()?;
    Ok(())
}

/// How long shutdown waits for the audit queue to reach the sink or the spool.
const AUDIT_FLUSH_WAIT: Duration = Duration::from_secs(5);

/// `idnode bootstrap`: start the node, make sure the cluster is bootstrapped, stop.
pub async fn bootstrap_only(cfg: Config) -> anyhow::Result<()> {
    let peer = bind(&cfg.peer_listen, "peer").await?;
    let tls = ServerTls::load(&cfg)?;
    let node = open(cfg).await?;
    spawn_peer_server(&node, peer, &tls);
    node.raft.initialize(node.cfg.members()).await?;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match crate::identity::bootstrap::run(&node).await {
            Ok(_) => break,
            Err(e) if tokio::time::Instant::now() < deadline => {
                tracing::debug!("bootstrap not yet possible: {}", e.message);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => anyhow::bail!("bootstrap failed: {}", e.message),
        }
    }
    node.raft.shutdown().await;
    node.engine.sync()?;
    Ok(())
}

/// The leader bootstraps a new cluster once; every other case is a no-op.
async fn bootstrap_when_leader(node: Arc<Node>) {
    loop {
        match node.engine.read().bootstrap_info() {
            Ok(Some(_)) => return,
            Ok(None) if node.raft.is_leader() => match crate::identity::bootstrap::run(&node).await {
                Ok(_) => return,
                Err(e) => tracing::warn!("bootstrap attempt failed: {}", e.message),
            },
            Ok(None) => {}
            Err(e) => tracing::error!("reading bootstrap state: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// SIGHUP reloads the policy set (bundled files plus `[policy] directory`).
async fn reload_policy_on_sighup() {
    #[cfg(unix)]
    {
        let mut hup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("cannot listen for SIGHUP, policy reload disabled: {e}");
                return;
            }
        };
        while hup.recv().await.is_some() {
            tracing::info!("SIGHUP: reloading the policy set");
            // File reads and compilation are blocking work.
            let _ = tokio::task::spawn_blocking(|| crate::policy::global().reload()).await;
        }
    }
}

/// Drops rate-limit buckets of sources that went quiet, once a minute.
async fn forget_idle_rate_limits(node: Arc<Node>) {
    loop {
        tokio::time::sleep(Duration::from_secs(60)).await;
        node.rate_limits.housekeep();
        node.oauth2.housekeep();
        node.mapped.housekeep();
    }
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = ctrl_c.await;
                return;
            }
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
