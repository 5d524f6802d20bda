//! In-process clusters of full identity nodes: each node has its own data dir and key-
//! encryption key, talks raft to the others over loopback, and serves its API router in
//! process (driven with `send`, no API sockets). Nodes can be stopped (the database is closed)
//! and restarted on their data dirs. Waits poll raft metrics with deadlines, never fixed sleeps.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::http::{Method, StatusCode};
use axum::Router;
use idnode_storage::Engine;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::{send, Reply};
use crate::config::{Config, Settings};
use crate::serve::node::Node;

pub const WAIT: Duration = Duration::from_secs(30);
const SECRET: &str = "in-process-cluster-secret";
pub const ADMIN_PASSWORD: &str = "secret";

struct Running {
    node: Arc<Node>,
    router: Router,
    stop_peer: oneshot::Sender<()>,
    peer: JoinHandle<()>,
}

/// What survives a restart: identity, peer address, data dir, key-encryption key.
struct Seat {
    id: u64,
    peer: SocketAddr,
    dir: PathBuf,
    kek: String,
    running: Option<Running>,
}

pub struct TestCluster {
    seats: Vec<Seat>,
    /// Extra `(section, key, value)` settings of every node.
    settings: Vec<(String, String, String)>,
    _dir: tempfile::TempDir,
}

impl TestCluster {
    /// `n` nodes formed into one cluster and bootstrapped.
    pub async fn start(n: usize, settings: &[(&str, &str, &str)]) -> TestCluster {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut listeners = Vec::new();
        for _ in 0..n {
            listeners.push(TcpListener::bind("127.0.0.1:0").await.expect("bind a peer port"));
        }
        let seats = listeners
            .iter()
            .enumerate()
            .map(|(i, l)| Seat {
                id: i as u64 + 1,
                peer: l.local_addr().expect("peer address"),
                dir: dir.path().join(format!("node{}", i + 1)),
                kek: base64::Engine::encode(
                    &base64::engine::general_purpose::STANDARD,
                    idnode_keys::random_bytes::<32>(),
                ),
                running: None,
            })
            .collect();
        let settings = settings.iter().map(|(s, k, v)| (s.to_string(), k.to_string(), v.to_string())).collect();
        let mut c = TestCluster { seats, settings, _dir: dir };
        for (i, l) in listeners.into_iter().enumerate() {
            c.run(i, l).await;
        }
        let leader = c.wait_leader().await;
        let deadline = tokio::time::Instant::now() + WAIT;
        while let Err(e) = crate::identity::bootstrap::run(c.node(leader)).await {
            assert!(tokio::time::Instant::now() < deadline, "bootstrap failed: {}", e.message);
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        c.wait_converged().await;
        c
    }

    fn config(&self, i: usize) -> Config {
        let seat = &self.seats[i];
        let members: Vec<String> = self.seats.iter().map(|s| format!("{}={}", s.id, s.peer)).collect();
        let mut s = Settings::default();
        for (k, v) in [
            ("node_id", seat.id.to_string()),
            ("initial_cluster", members.join(",")),
            ("data_dir", seat.dir.display().to_string()),
            ("kek", seat.kek.clone()),
            ("cluster_secret", SECRET.to_string()),
            ("admin_password", ADMIN_PASSWORD.to_string()),
            ("listen", "127.0.0.1:5000".to_string()),
            ("peer_listen", seat.peer.to_string()),
        ] {
            s.set("idnode", k, &v);
        }
        s.set("identity", "password_hash_memory_kib", "64");
        s.set("identity", "password_hash_iterations", "1");
        s.set("raft", "heartbeat_ms", "50");
        s.set("raft", "election_timeout_min_ms", "300");
        s.set("raft", "election_timeout_max_ms", "600");
        s.set("auth", "rate_limit_per_second", "0");
        for (section, key, value) in &self.settings {
            s.set(section, key, value);
        }
        Config::from_settings(&s).expect("config")
    }

    async fn run(&mut self, i: usize, listener: TcpListener) {
        // The last handle on a stopped node's database may be released on another thread:
        // `stop` sees it gone before RocksDB has closed, so the reopen retries briefly.
        let deadline = tokio::time::Instant::now() + WAIT;
        let node = loop {
            match crate::serve::startup::open(self.config(i)).await {
                Ok(node) => break node,
                Err(e) if tokio::time::Instant::now() < deadline => {
                    tracing::debug!("node {} not reopened yet: {e:#}", i + 1);
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Err(e) => panic!("open node {}: {e:#}", i + 1),
            }
        };
        let peer_router = node.raft.peer_router();
        let (stop_peer, stopped) = oneshot::channel::<()>();
        let peer = tokio::spawn(async move {
            let serve = axum::serve(listener, peer_router).with_graceful_shutdown(async move {
                let _ = stopped.await;
            });
            if let Err(e) = serve.await {
                tracing::warn!("test peer listener stopped: {e}");
            }
        });
        node.raft.initialize(node.cfg.members()).await.expect("initialize raft");
        let router = crate::serve::router::api(node.clone());
        self.seats[i].running = Some(Running { node, router, stop_peer, peer });
    }

    pub fn len(&self) -> usize {
        self.seats.len()
    }

    pub fn node(&self, i: usize) -> &Arc<Node> {
        &self.seats[i].running.as_ref().expect("node is running").node
    }

    /// Node `i`'s API router.
    pub fn router(&self, i: usize) -> &Router {
        &self.seats[i].running.as_ref().expect("node is running").router
    }

    pub fn is_running(&self, i: usize) -> bool {
        self.seats[i].running.is_some()
    }

    /// Stops node `i` as a crash would leave it for the others (raft and its listener go
    /// away) and closes its database; returns the index it had applied.
    pub async fn stop(&mut self, i: usize) -> u64 {
        let Running { node, router, stop_peer, peer } = self.seats[i].running.take().expect("node is running");
        let applied = node.raft.applied_index();
        node.raft.shutdown().await;
        let _ = stop_peer.send(());
        let _ = peer.await;
        let engine: Weak<Engine> = Arc::downgrade(&node.engine);
        drop(router);
        drop(node);
        let deadline = tokio::time::Instant::now() + WAIT;
        while engine.upgrade().is_some() {
            assert!(tokio::time::Instant::now() < deadline, "node {}'s database is still held", i + 1);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        applied
    }

    /// Starts node `i` again on its data dir and peer port.
    pub async fn restart(&mut self, i: usize) {
        let listener = TcpListener::bind(self.seats[i].peer).await.expect("rebind the peer port");
        self.run(i, listener).await;
    }

    /// Index of the running node every running node names as leader.
    pub async fn wait_leader(&self) -> usize {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let running: Vec<usize> = (0..self.len()).filter(|i| self.is_running(*i)).collect();
            let leaders: Vec<Option<u64>> = running.iter().map(|i| self.node(*i).raft.leader_id()).collect();
            if let Some(Some(l)) = leaders.first() {
                let idx = self.seats.iter().position(|s| s.id == *l);
                if let Some(idx) = idx.filter(|x| self.is_running(*x)) {
                    if leaders.iter().all(|x| *x == Some(*l)) && self.node(idx).raft.is_leader() {
                        return idx;
                    }
                }
            }
            assert!(tokio::time::Instant::now() < deadline, "no common leader: {leaders:?}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until every running node applied what the leader had committed when called.
    pub async fn wait_converged(&self) -> u64 {
        let leader = self.wait_leader().await;
        let target = self.node(leader).raft.committed_index();
        for i in (0..self.len()).filter(|i| self.is_running(*i)) {
            let raft = self.node(i).raft.raft();
            raft.wait(Some(WAIT))
                .applied_index_at_least(Some(target), "converged")
                .await
                .unwrap_or_else(|e| panic!("node {} did not apply {target}: {e}", i + 1));
        }
        target
    }

    /// One API request to node `i`.
    pub async fn call(&self, i: usize, method: Method, path: &str, token: Option<&str>, body: Option<Value>) -> Reply {
        let router = &self.seats[i].running.as_ref().expect("node is running").router;
        send(router, method, path, token, body).await
    }

    /// Creates an entity through node `i` (`kind` is the envelope key) and returns the answer.
    pub async fn create(&self, i: usize, token: &str, path: &str, kind: &str, fields: Value) -> Value {
        let r = self.call(i, Method::POST, path, Some(token), Some(json!({ kind: fields }))).await;
        assert_eq!(r.status, StatusCode::CREATED, "create {kind}: {}", r.body);
        r.body
    }

    /// Password login on node `i` by user name (Default domain) or, with `by_id`, by user id;
    /// scoped to `project` (a name in the Default domain).
    pub async fn login(&self, i: usize, user: &str, by_id: bool, password: &str, project: &str) -> Reply {
        let who = if by_id {
            json!({"id": user, "password": password})
        } else {
            json!({"name": user, "domain": {"id": "default"}, "password": password})
        };
        let body = json!({"auth": {"identity": {"methods": ["password"], "password": {"user": who}},
            "scope": {"project": {"name": project, "domain": {"id": "default"}}}}});
        self.call(i, Method::POST, "/v3/auth/tokens", None, Some(body)).await
    }

    /// An admin token issued by node `i`.
    pub async fn admin_token(&self, i: usize) -> String {
        let r = self.login(i, "admin", false, ADMIN_PASSWORD, "admin").await;
        assert_eq!(r.status, StatusCode::OK, "admin login on node {}: {}", i + 1, r.body);
        r.headers.get("x-subject-token").and_then(|v| v.to_str().ok()).expect("subject token").to_string()
    }
}
