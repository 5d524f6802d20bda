//! Node configuration.

use std::time::Duration;

/// How long one snapshot chunk may take to install (openraft's `install_snapshot_timeout`).
/// A chunk must cross a real network in time; loopback needs far less.
pub const INSTALL_SNAPSHOT_TIMEOUT: Duration = Duration::from_millis(3000);
/// The longest a consistency check waits for members to digest its checkpoint (a member's
/// digest request waits no longer than this either).
pub const CHECK_MAX_WAIT: Duration = Duration::from_secs(60);
/// The admin client's bound on a membership change (`idnode cluster add-learner` etc.).
pub const ADMIN_CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Slack on top of the longest legitimate peer request.
const PEER_TIMEOUT_SLACK: Duration = Duration::from_secs(30);

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
    /// Entries since the last snapshot before a new one may be built.
    pub snapshot_logs_since_last: u64,
    /// Log bytes since the last snapshot, as a share of its size, that make the next one due
    /// (`snapshot_policy`); 0 leaves `snapshot_logs_since_last` alone to decide.
    pub snapshot_log_ratio: f64,
    /// Entries kept in the log behind a snapshot (so slightly lagging peers avoid a snapshot).
    pub max_in_snapshot_log_to_keep: u64,
    /// Bound on forwarding a request to the leader, retries included.
    pub forward_timeout: Duration,
    /// Set when peer traffic is mutual TLS: what this member trusts and presents when it calls
    /// another (the peer listener's side is the server's, `src/http/tls.rs`).
    pub peer_tls: Option<crate::ClientTls>,
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
            snapshot_log_ratio: 0.0,
            max_in_snapshot_log_to_keep: 1000,
            forward_timeout: Duration::from_secs(5),
            peer_tls: None,
        }
    }
}

impl RaftOptions {
    /// The peer listener's bound on one request. It must outlast every legitimate one, or the
    /// listener would cut raft off mid-way: a snapshot chunk, a forwarded write (bounded by
    /// `forward_timeout`), a membership change, and the longest, a consistency check (a
    /// forwarded checkpoint, then the members' digests, then the verdicts).
    pub fn peer_request_timeout(&self) -> Duration {
        let check = self.forward_timeout + CHECK_MAX_WAIT + Duration::from_secs(4);
        [INSTALL_SNAPSHOT_TIMEOUT, self.forward_timeout, ADMIN_CALL_TIMEOUT, check].into_iter().max().unwrap_or(check)
            + PEER_TIMEOUT_SLACK
    }

    pub(crate) fn snapshot_policy(&self) -> crate::snapshot_policy::SnapshotPolicy {
        crate::snapshot_policy::SnapshotPolicy {
            min_entries: self.snapshot_logs_since_last,
            log_ratio: self.snapshot_log_ratio.max(0.0),
        }
    }

    pub(crate) fn raft_config(&self) -> anyhow::Result<openraft::Config> {
        let config = openraft::Config {
            cluster_name: "idnode".to_string(),
            heartbeat_interval: self.heartbeat_ms,
            election_timeout_min: self.election_timeout_min_ms,
            election_timeout_max: self.election_timeout_max_ms,
            install_snapshot_timeout: INSTALL_SNAPSHOT_TIMEOUT.as_millis() as u64,
            snapshot_max_chunk_size: 1 << 20,
            // `snapshot_policy.rs` decides when a snapshot is due.
            snapshot_policy: openraft::SnapshotPolicy::Never,
            max_in_snapshot_log_to_keep: self.max_in_snapshot_log_to_keep,
            ..Default::default()
        };
        Ok(config.validate()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peer_timeout_outlasts_every_peer_request() {
        for forward in [Duration::from_secs(5), Duration::from_secs(120)] {
            let o = RaftOptions { forward_timeout: forward, ..RaftOptions::default() };
            let t = o.peer_request_timeout();
            let snapshot_chunk = Duration::from_millis(o.raft_config().unwrap().install_snapshot_timeout);
            assert!(t > snapshot_chunk && t > forward && t > ADMIN_CALL_TIMEOUT, "{t:?}");
            assert!(t > forward + CHECK_MAX_WAIT + Duration::from_secs(4), "a consistency check fits: {t:?}");
        }
    }
}
