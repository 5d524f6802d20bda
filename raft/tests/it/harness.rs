//! Starts, stops and restarts in-process nodes on loopback listeners and temp dirs.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use idnode_raft::storage::keys::DataKeys;
use idnode_raft::storage::Engine;
use idnode_raft::{RaftNode, RaftOptions};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::app::{all_cfs, KvApp, KV};

pub const SECRET: &str = "test-cluster-secret";
pub const WAIT: Duration = Duration::from_secs(20);

/// Everything that survives a node restart: its identity, address, data dir and data keys.
#[derive(Clone)]
pub struct Seat {
    pub id: u64,
    pub addr: SocketAddr,
    pub dir: PathBuf,
    pub keys: Arc<DataKeys>,
}

pub struct Running {
    pub seat: Seat,
    pub node: Arc<RaftNode>,
    pub app: Arc<KvApp>,
    engine: Arc<Engine>,
    stop_server: oneshot::Sender<()>,
    server: JoinHandle<()>,
}

pub fn options(id: u64, addr: SocketAddr, snapshot_every: u64) -> RaftOptions {
    RaftOptions {
        node_id: id,
        advertise_addr: addr.to_string(),
        cluster_secret: Some(SECRET.to_string()),
        heartbeat_ms: 50,
        election_timeout_min_ms: 300,
        election_timeout_max_ms: 600,
        snapshot_logs_since_last: snapshot_every,
        snapshot_log_ratio: 0.0,
        max_in_snapshot_log_to_keep: 0,
        forward_timeout: Duration::from_secs(10),
        peer_tls: None,
    }
}

/// Binds first (port 0 for a new seat, the old port on restart), then starts the node.
pub async fn start(seat: Option<Seat>, id: u64, root: &std::path::Path, snapshot_every: u64) -> Running {
    start_versioned(seat, id, root, snapshot_every, KvApp::default().command_version).await
}

/// [`start`] with the app playing a binary of `command_version`.
pub async fn start_versioned(
    seat: Option<Seat>,
    id: u64,
    root: &std::path::Path,
    snapshot_every: u64,
    command_version: u32,
) -> Running {
    let listener = match &seat {
        Some(s) => TcpListener::bind(s.addr).await.unwrap(),
        None => TcpListener::bind("127.0.0.1:0").await.unwrap(),
    };
    let seat = seat.unwrap_or_else(|| Seat {
        id,
        addr: listener.local_addr().unwrap(),
        dir: root.join(format!("node{id}")),
        keys: Arc::new(DataKeys::ephemeral()),
    });
    let engine = Arc::new(Engine::open(&seat.dir, &all_cfs(), seat.keys.clone()).unwrap());
    let app = Arc::new(KvApp::with_version(command_version));
    let node = RaftNode::start(options(seat.id, seat.addr, snapshot_every), engine.clone(), app.clone()).await.unwrap();
    let router = node.peer_router();
    let (stop_server, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await
            .unwrap();
    });
    Running { seat, node, app, engine, stop_server, server }
}

impl Running {
    /// Stops raft and the listener and closes the database (waits until nothing holds it).
    pub async fn stop(self) -> Seat {
        let Running { seat, node, app, engine, stop_server, server } = self;
        node.shutdown().await;
        let _ = stop_server.send(());
        server.await.unwrap();
        drop(node);
        drop(app);
        let deadline = Instant::now() + WAIT;
        while Arc::strong_count(&engine) > 1 {
            assert!(Instant::now() < deadline, "engine of node {} still referenced", seat.id);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        drop(engine);
        seat
    }

    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.node.engine().read().get(KV, key.as_bytes()).unwrap()
    }
}

pub fn members(nodes: &[&Running]) -> BTreeMap<u64, String> {
    nodes.iter().map(|n| (n.seat.id, n.seat.addr.to_string())).collect()
}

/// Three fresh nodes, initialized on every member (as a deployment would do).
pub async fn three_nodes(root: &std::path::Path, snapshot_every: u64) -> Vec<Running> {
    three_nodes_versioned(root, snapshot_every, KvApp::default().command_version).await
}

/// [`three_nodes`] with the app playing a binary of `command_version` on every member.
pub async fn three_nodes_versioned(root: &std::path::Path, snapshot_every: u64, command_version: u32) -> Vec<Running> {
    let mut nodes = Vec::new();
    for id in 1..=3 {
        nodes.push(start_versioned(None, id, root, snapshot_every, command_version).await);
    }
    let m = members(&nodes.iter().collect::<Vec<_>>());
    let inits = nodes.iter().map(|n| n.node.initialize(m.clone()));
    for r in futures::future::join_all(inits).await {
        r.unwrap();
    }
    let leader = wait_leader(&nodes).await;
    assert!(nodes.iter().any(|n| n.seat.id == leader));
    nodes
}

/// Waits until every given node knows the same leader, which is one of them; returns its id.
pub async fn wait_leader(nodes: &[Running]) -> u64 {
    let deadline = Instant::now() + WAIT;
    loop {
        let ids: Vec<u64> = nodes.iter().map(|n| n.seat.id).collect();
        let leaders: Vec<Option<u64>> = nodes.iter().map(|n| n.node.leader_id()).collect();
        if let Some(Some(l)) = leaders.first() {
            if leaders.iter().all(|x| *x == Some(*l)) && ids.contains(l) {
                let leader = nodes.iter().find(|n| n.seat.id == *l).unwrap();
                if leader.node.is_leader() {
                    return *l;
                }
            }
        }
        assert!(Instant::now() < deadline, "no common leader: {leaders:?}");
        let _ = nodes[0].node.raft().wait(Some(Duration::from_millis(50))).metrics(|_| false, "tick").await;
    }
}

/// Waits until `node` has applied at least `index`.
pub async fn wait_applied(node: &Running, index: u64) {
    node.node
        .raft()
        .wait(Some(WAIT))
        .applied_index_at_least(Some(index), "applied")
        .await
        .unwrap_or_else(|e| panic!("node {} did not apply {index}: {e}", node.seat.id));
}
