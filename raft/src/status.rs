//! Cluster status and readiness, computed from openraft's metrics snapshot.

use openraft::{BasicNode, RaftMetrics, ServerState};
use serde::{Deserialize, Serialize};

/// Longest a leader may go without hearing from a quorum and still call itself ready.
const MAX_QUORUM_ACK_MS: u64 = 6000;
/// Most committed-but-unapplied entries a ready node may have.
const MAX_APPLY_LAG: u64 = 1000;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Member {
    pub id: u64,
    pub addr: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerProgress {
    pub id: u64,
    /// Highest log index known replicated to the peer (leader only).
    pub matched: Option<u64>,
    /// Leader's last log index minus `matched`.
    pub lag: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterStatus {
    pub node_id: u64,
    /// "Leader", "Follower", "Candidate", "Learner" or "Shutdown".
    pub state: String,
    pub term: u64,
    pub leader_id: Option<u64>,
    pub voters: Vec<Member>,
    pub learners: Vec<Member>,
    pub last_log_index: Option<u64>,
    pub committed: u64,
    pub applied: Option<u64>,
    pub snapshot_index: Option<u64>,
    pub purged_index: Option<u64>,
    pub millis_since_quorum_ack: Option<u64>,
    /// Per-peer progress (empty unless this node leads).
    pub replication: Vec<PeerProgress>,
    /// Why raft stopped, if it did.
    pub fatal: Option<String>,
    /// The replicated cluster version (see `version`).
    pub cluster_version: u32,
    /// Every member's binary and command version (filled by the status route, which asks them).
    pub versions: Vec<crate::MemberVersion>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Readiness {
    pub ok: bool,
    pub fatal: bool,
    pub reasons: Vec<String>,
}

type Metrics = RaftMetrics<u64, BasicNode>;

fn members(m: &Metrics, voters: bool) -> Vec<Member> {
    let membership = m.membership_config.membership();
    let ids: Vec<u64> = if voters { membership.voter_ids().collect() } else { membership.learner_ids().collect() };
    ids.into_iter()
        .map(|id| Member { id, addr: membership.get_node(&id).map(|n| n.addr.clone()).unwrap_or_default() })
        .collect()
}

pub(crate) fn replication(m: &Metrics) -> Vec<PeerProgress> {
    let last = m.last_log_index.unwrap_or(0);
    let Some(repl) = &m.replication else {
        return Vec::new();
    };
    repl.iter()
        .filter(|(id, _)| **id != m.id)
        .map(|(id, matched)| {
            let matched = matched.map(|l| l.index);
            PeerProgress { id: *id, matched, lag: last.saturating_sub(matched.unwrap_or(0)) }
        })
        .collect()
}

pub(crate) fn status(m: &Metrics, committed: u64) -> ClusterStatus {
    ClusterStatus {
        node_id: m.id,
        state: format!("{:?}", m.state),
        term: m.current_term,
        leader_id: m.current_leader,
        voters: members(m, true),
        learners: members(m, false),
        last_log_index: m.last_log_index,
        committed,
        applied: m.last_applied.map(|l| l.index),
        snapshot_index: m.snapshot.map(|l| l.index),
        purged_index: m.purged.map(|l| l.index),
        millis_since_quorum_ack: m.millis_since_quorum_ack,
        replication: replication(m),
        fatal: m.running_state.as_ref().err().map(|e| e.to_string()),
        cluster_version: crate::BASE_VERSION,
        versions: Vec::new(),
    }
}

pub(crate) fn readiness(m: &Metrics, committed: u64) -> Readiness {
    let mut reasons = Vec::new();
    let fatal = m.running_state.is_err();
    if let Err(e) = &m.running_state {
        reasons.push(format!("raft stopped: {e}"));
    }
    let voters: Vec<u64> = m.membership_config.membership().voter_ids().collect();
    if voters.is_empty() {
        reasons.push("cluster not initialized".to_string());
    }
    match m.current_leader {
        None => reasons.push("no leader known".to_string()),
        Some(leader) if leader == m.id && m.state == ServerState::Leader => {
            let alone = voters == [m.id];
            let acked = alone || m.millis_since_quorum_ack.is_some_and(|ms| ms <= MAX_QUORUM_ACK_MS);
            if !acked {
                reasons.push(format!("leader without quorum ack for {:?} ms", m.millis_since_quorum_ack));
            }
        }
        Some(_) => {}
    }
    let applied = m.last_applied.map_or(0, |l| l.index);
    let lag = committed.saturating_sub(applied);
    if lag > MAX_APPLY_LAG {
        reasons.push(format!("apply lag {lag} entries"));
    }
    Readiness { ok: reasons.is_empty(), fatal, reasons }
}

/// The host of a `HOST:PORT` peer address (`[v6]:port` gives `v6`), what a member's
/// certificate must name.
pub(crate) fn host_of(addr: &str) -> &str {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

#[cfg(test)]
mod host_tests {
    #[test]
    fn hosts_of_peer_addresses() {
        assert_eq!(super::host_of("10.0.0.7:5099"), "10.0.0.7");
        assert_eq!(super::host_of("node-2.idnode.svc:5099"), "node-2.idnode.svc");
        assert_eq!(super::host_of("[fd00::2]:5099"), "fd00::2");
        assert_eq!(super::host_of("bare-host"), "bare-host");
    }
}
