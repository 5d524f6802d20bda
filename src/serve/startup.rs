//! Startup wiring: key material, storage, raft, the per-node states, listeners, background
//! tasks, bootstrap and shutdown.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::serve::ListenerExt;
use idnode_keys::PasswordHasher;
use idnode_raft::{RaftNode, RaftOptions};
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;

use crate::config::Config;
use crate::context::Core;
use crate::http::access::AccessLog;
use crate::http::guard::{self, ListenerLimits};
use crate::http::metrics::Metrics;
use crate::http::peer_gate::{self, GatedListener, PeerConn, Strangers};
use crate::http::tls::{Admit, ServerTls, TlsListener};
use crate::identity::hash_pool::HashPool;
use crate::openfga::settings::AssignmentDriver;
use crate::serve::node::Node;
use crate::state::apply::IdentityApp;
use crate::state::Reader;
use crate::token::Tokens;

use super::engine::{open_engine, refuse_unfinished_restore};

/// Opens keys, storage and raft for the configured data directory.
pub(crate) async fn open(cfg: Config) -> anyhow::Result<Arc<Node>> {
    refuse_unfinished_restore(&cfg.data_dir)?;
    // main installs it; nodes the tests open get it here, before their first JWT.
    idnode_keys::install_jwt_backend();
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
        snapshot_log_ratio: cfg.raft_snapshot_log_ratio,
        max_in_snapshot_log_to_keep: cfg.raft_snapshot_catchup,
        peer_tls: cfg.peer_tls.as_ref().map(|t| t.client()).transpose()?,
        ..RaftOptions::default()
    };
    let raft = RaftNode::start(opts, engine.clone(), app.clone()).await?;
    // A directory that does not compile leaves the bundled defaults in force and fails /ready.
    let _ = crate::policy::global().configure(cfg.policy_directory.clone());
    let rate_limits = crate::http::ratelimit::RateLimits::new(
        cfg.auth_rate_limit_per_second,
        cfg.auth_rate_limit_burst,
        (cfg.oauth2.rate_limit_per_second, cfg.oauth2.rate_limit_burst),
        cfg.api_trusted_proxies.clone(),
    );
    let mut registry = Registry::default();
    super::logging::register(&mut registry);
    crate::build_info::register(&mut registry);
    super::host_metrics::register(&mut registry, &cfg);
    let metrics = Metrics::new(&mut registry);
    crate::policy::global().metrics.register(&mut registry);
    raft.register_metrics(&mut registry);
    let node_keys = crate::rotation::dek::NodeKeys::new(
        kek,
        cfg.data_dir.join("keyring"),
        engine.keys().clone(),
        cfg.keys_reseal_rate,
        &mut registry,
    );
    let oauth2 =
        crate::oauth2::Provider::new(cfg.oauth2.rate_limit_per_second, cfg.oauth2.rate_limit_burst, &metrics.caches);
    oauth2.metrics.register(&mut registry);
    let audit = crate::audit::Audit::start(crate::audit::AuditConfig {
        settings: cfg.audit.clone(),
        node_id: cfg.node_id,
        keys: engine.keys().clone(),
        retry_max: crate::audit::RETRY_MAX,
    })?;
    audit.metrics().register(&mut registry);
    let mapped = crate::mapped_auth::MappedAuth::new(&cfg.shadow_registry, &cfg.federation, &metrics.caches)?;
    let scim = crate::scim::Scim::new(&cfg.scim, &metrics.caches);
    let assignments = crate::assignment::Assignments::new(&metrics.caches);
    let passkeys = crate::passkey::RelyingParty::new(&cfg.passkey)?;
    if let Some(why) = passkeys.disabled() {
        tracing::warn!("passkeys are off: {why}");
    }
    let fga = match &cfg.assignment {
        AssignmentDriver::Raft => None,
        AssignmentDriver::OpenFga(settings) => {
            let client = crate::openfga::client::Client::new(
                (**settings).clone(),
                crate::openfga::client::FgaMetrics::new(&mut registry),
            )?;
            Some(Arc::new(crate::openfga::OpenFga::new(client)))
        }
    };
    let hasher = PasswordHasher::new(cfg.password)?;
    let dummy_hash = hasher.hash(&idnode_keys::random_token(16))?;
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
    let core = Arc::new(Core {
        cfg,
        engine,
        raft,
        app,
        passwords: HashPool::start(hasher, threads, 256)?,
        dummy_hash,
        metrics,
        registry,
        audit,
        node_keys,
        fga,
    });
    Ok(Arc::new(Node {
        tokens: Arc::new(Tokens::new(core)),
        signed_requests: Arc::new(crate::credential::replay::ReplayGuard::new(crate::credential::replay::CAPACITY)),
        rate_limits,
        oauth2: Arc::new(oauth2),
        mapped: Arc::new(mapped),
        api_key_usage: Arc::default(),
        scim: Arc::new(scim),
        passkeys: Arc::new(passkeys),
        assignments: Arc::new(assignments),
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
/// `access`: the request-id and access-log layer, outside the bounds so a timeout's 503 is
/// named and logged too (the public API's; the ops listener answers probes and scrapes).
fn spawn_server(
    listener: Listening,
    router: axum::Router,
    limits: ListenerLimits,
    access: Option<AccessLog>,
    what: &'static str,
) {
    let router = crate::http::guard::bounded(router, limits);
    let router = match access {
        Some(access) => access.wrap(router),
        None => router,
    };
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
/// a current member; connections not yet authenticated are bounded (`peer_gate`).
fn spawn_peer_server(node: &Node, tcp: TcpListener, tls: &ServerTls) {
    let raft = node.raft.clone();
    let admit = crate::http::tls::member_check(move || raft.member_hosts());
    let listener = Listening::new(tcp, tls.peer.as_ref(), Some(admit), "peer");
    let limits = ListenerLimits::peer(node.cfg.api_max_concurrent_requests, node.raft.peer_request_timeout());
    // Timeout, then the credential check, then a request slot: a stranger is refused before
    // it could wait for (or hold) a slot. Outermost, the connection's hook for the check.
    let raft = &node.raft;
    let checked = raft.operator_only(guard::slotted(raft.peer_routes(), limits));
    let router = guard::within(checked.merge(raft.member_id_router()), limits)
        .layer(axum::middleware::from_fn(peer_gate::hand_over));
    let strangers = Strangers::new(peer_gate::PER_SOURCE, peer_gate::TOTAL, peer_gate::AUTH_WITHIN);
    tokio::spawn(async move {
        let svc = router.into_make_service_with_connect_info::<PeerConn>();
        let served = match listener {
            Listening::Plain(l) => axum::serve(GatedListener::new(l, strangers), svc).await,
            Listening::Tls(l) => axum::serve(GatedListener::new(l, strangers), svc).await,
        };
        if let Err(e) = served {
            tracing::error!("peer listener stopped: {e}");
        }
    });
}

/// `idnode serve`.
pub async fn serve(cfg: Config) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    crate::clock::watch_skew_file();
    let peer = bind(&cfg.peer_listen, "peer").await?;
    let api = bind(&cfg.listen, "API").await?;
    let ops = bind(&cfg.ops_listen, "ops").await?;
    let tls = load_tls(&cfg)?;
    let node = open(cfg).await?;
    spawn_peer_server(&node, peer, &tls);
    if node.cfg.form_cluster {
        node.raft.initialize(node.cfg.members()).await?;
    }
    let api = Listening::new(api, tls.api.as_ref(), None, "API");
    let api_limits = ListenerLimits::api(node.cfg.api_request_timeout_s, node.cfg.api_max_concurrent_requests);
    let access =
        AccessLog { enabled: node.cfg.log.access, trusted_proxies: Arc::new(node.cfg.api_trusted_proxies.clone()) };
    spawn_server(api, super::router::api(node.clone()), api_limits, Some(access), "API");
    let ops = Listening::new(ops, tls.api.as_ref(), None, "ops");
    spawn_server(ops, super::ops::router(node.clone()), ListenerLimits::ops(), None, "ops");
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
    let sweeper = tokio::spawn(forget_stale_answers(node.clone()));
    let trimmer = super::allocator::spawn_trimmer();
    let mut jobs = crate::jobs::spawn(&node.core);
    // Every node reports its own API key uses (not leader-gated: the uses are its own).
    jobs.push(tokio::spawn(crate::api_keys::auth::report_every(node.core.clone(), node.api_key_usage.clone())));
    jobs.push(node.node_keys.spawn(node.engine.clone(), node.audit.metrics().spool_bytes.clone()));
    // `[token] rotate_every`, `[oauth2] rotate_every`: leader-gated, off unless set.
    jobs.extend(crate::rotation::schedule::spawn(&node.core));
    jobs.extend(crate::oauth2::schedule::spawn(&node.core, &node.oauth2));
    let metrics_of = node.clone();
    jobs.extend(crate::otlp::spawn(&node.cfg, Box::new(move || metrics_of.metrics_text())));
    let checker = match node.cfg.raft_consistency_check_interval_s {
        0 => None,
        s => Some(node.raft.spawn_consistency_checks(Duration::from_secs(s))),
    };
    shutdown_signal().await;
    tracing::info!("shutting down");
    bootstrapper.abort();
    reloader.abort();
    housekeeper.abort();
    sweeper.abort();
    trimmer.abort();
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
    let tls = load_tls(&cfg)?;
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
    crate::identity::bootstrap::seed_store(&node)
        .await
        .map_err(|e| anyhow::anyhow!("writing the bootstrap grants to the OpenFGA store: {}", e.message))?;
    node.raft.shutdown().await;
    node.engine.sync()?;
    Ok(())
}

/// The leader bootstraps a new cluster once; then, with the relationship-store driver, each
/// node makes sure the bootstrap grants are in the store (`bootstrap::seed_store`).
async fn bootstrap_when_leader(node: Arc<Node>) {
    loop {
        match node.engine.read().bootstrap_info() {
            Ok(Some(_)) => break,
            // `bootstrap = import`: `idnode import keystone` bootstraps it (`bootstrap::adopt`).
            Ok(None) if node.raft.is_leader() && !node.cfg.bootstrap_by_import => {
                match crate::identity::bootstrap::run(&node).await {
                    Ok(_) => break,
                    Err(e) => tracing::warn!("bootstrap attempt failed: {}", e.message),
                }
            }
            Ok(None) => {}
            Err(e) => tracing::error!("reading bootstrap state: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    while let Err(e) = crate::identity::bootstrap::seed_store(&node).await {
        tracing::warn!("writing the bootstrap grants to the OpenFGA store: {}", e.message);
        tokio::time::sleep(Duration::from_secs(2)).await;
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
/// How often caches of answers drop what an older state computed.
const FORGET_STALE_EVERY: Duration = Duration::from_secs(2);

/// Entries of the applied-state caches die with the next write, but were only dropped by the
/// next insert: after a burst of logins and then writes that validate no token (SCIM, a fill),
/// megabytes of dead token bodies stayed resident (docs/benchmarks.md, issue 53).
async fn forget_stale_answers(node: Arc<Node>) {
    let mut every = tokio::time::interval(FORGET_STALE_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let applied = node.app.state_version();
        node.tokens.forget_before(applied);
        node.assignments.listings.forget_before(applied);
    }
}

async fn forget_idle_rate_limits(node: Arc<Node>) {
    loop {
        tokio::time::sleep(Duration::from_secs(60)).await;
        node.rate_limits.housekeep();
        node.oauth2.housekeep();
        node.mapped.housekeep();
        node.scim.write_limit.housekeep();
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

/// The listeners' TLS settings from `[idnode] tls_*` and `[cluster] peer_tls_*`.
fn load_tls(cfg: &Config) -> anyhow::Result<ServerTls> {
    let api = cfg.tls.as_ref().map(|t| (t.cert.as_path(), t.key.as_path()));
    let peer = cfg.peer_tls.as_ref().map(|t| (t.cert.as_path(), t.key.as_path(), t.ca.as_path()));
    ServerTls::load(api, peer)
}
