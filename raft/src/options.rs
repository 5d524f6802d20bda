//! Node configuration.

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct RaftOptions {
    pub node_id: u64,
    /// The peer listener address ("host:port") other members dial.
    pub advertise_addr: String,
    /// Shared by all members; proves a caller of the peer routes is one of them. `None` allows
    /// only a single-node cluster (peer routes then accept nobody).
    pub cluster_secret: Option<String>,
    pub heartbeat_ms: u64,
    pub election_timeout_min_ms: u64,
    pub election_timeout_max_ms: u64,
    /// Entries since the last snapshot that trigger a new one.
    pub snapshot_logs_since_last: u64,
    /// Entries kept in the log behind a snapshot (so slightly lagging peers avoid a snapshot).
    pub max_in_snapshot_log_to_keep: u64,
    /// Bound on forwarding a request to the leader, retries included.
    pub forward_timeout: Duration,
}

impl Default for RaftOptions {
    fn default() -> Self {
        RaftOptions {
            node_id: 1,
            advertise_addr: "127.0.0.1:7400".to_string(),
            cluster_secret: None,
            heartbeat_ms: 100,
            election_timeout_min_ms: 300,
            election_timeout_max_ms: 600,
            snapshot_logs_since_last: 5000,
            max_in_snapshot_log_to_keep: 1000,
            forward_timeout: Duration::from_secs(5),
        }
    }
}

impl RaftOptions {
    pub(crate) fn raft_config(&self) -> anyhow::Result<openraft::Config> {
        let config = openraft::Config {
            cluster_name: "idnode".to_string(),
            heartbeat_interval: self.heartbeat_ms,
            election_timeout_min: self.election_timeout_min_ms,
            election_timeout_max: self.election_timeout_max_ms,
            // A chunk must cross a real network in time; loopback needs far less.
            install_snapshot_timeout: 3000,
            snapshot_max_chunk_size: 1 << 20,
            snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(self.snapshot_logs_since_last),
            max_in_snapshot_log_to_keep: self.max_in_snapshot_log_to_keep,
            ..Default::default()
        };
        Ok(config.validate()?)
    }
}
