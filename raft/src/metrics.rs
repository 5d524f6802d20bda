//! Prometheus series. Live values (raft state, snapshot, disk, data keys) are read at scrape
//! time by a collector; counters and the apply histogram are registered directly.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use crate::snapshot::unix_now;
use crate::status::replication;
use crate::RaftNode;

impl RaftNode {
    /// Registers the raft, storage and data-key series on `registry`.
    pub fn register_metrics(self: &Arc<Self>, registry: &mut Registry) {
        registry.register(
            "idnode_raft_apply_seconds",
            "Seconds spent applying one run of committed entries",
            self.sm_stats.apply_seconds.clone(),
        );
        registry.register("idnode_raft_proposals", "Proposals submitted on this node", self.proposals.clone());
        registry.register(
            "idnode_raft_forwarded",
            "Leader-bound requests this node forwarded to the leader",
            self.forwarded.clone(),
        );
        let leases = [
            ("idnode_raft_leases", "Leases of cluster-wide rate limit figures this node asked for", &self.leases),
            (
                "idnode_raft_lease_failures",
                "Leases that failed (no leader, timeout, older cluster): the member counted its own share",
                &self.lease_failures,
            ),
        ];
        for (name, help, counter) in leases {
            registry.register(name, help, counter.clone());
        }
        registry.register_collector(Box::new(RaftCollector { node: self.clone() }));
    }
}

struct RaftCollector {
    node: Arc<RaftNode>,
}

impl std::fmt::Debug for RaftCollector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RaftCollector").field("node", &self.node.id).finish()
    }
}

fn gauge(enc: &mut DescriptorEncoder, name: &str, help: &str, value: i64) -> std::fmt::Result {
    let g = ConstGauge::new(value);
    g.encode(enc.encode_descriptor(name, help, None, g.metric_type())?)
}

fn counter(enc: &mut DescriptorEncoder, name: &str, help: &str, value: u64) -> std::fmt::Result {
    let c = ConstCounter::new(value);
    c.encode(enc.encode_descriptor(name, help, None, c.metric_type())?)
}

/// One family of `M` with a series per `label` value; described even with no series, so a
/// scrape always names it.
fn labelled<M: EncodeMetric + Default>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    label: &str,
    series: impl Iterator<Item = (String, M)>,
) -> std::fmt::Result {
    let mut family = enc.encode_descriptor(name, help, None, M::default().metric_type())?;
    for (value, metric) in series {
        metric.encode(family.encode_family(&[(label.to_string(), value)])?)?;
    }
    Ok(())
}

fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Collector for RaftCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let node = &self.node;
        let committed = node.committed_index();
        let status = node.status();
        let is_leader = node.is_leader();
        let repl = node.with_metrics(replication);
        let applied = status.applied.unwrap_or(0);

        gauge(&mut enc, "idnode_raft_is_leader", "1 when this node is the leader", i64::from(is_leader))?;
        gauge(&mut enc, "idnode_raft_current_term", "Current raft term", int(status.term))?;
        gauge(&mut enc, "idnode_raft_leader_id", "Known leader id, -1 when none", status.leader_id.map_or(-1, int))?;
        gauge(&mut enc, "idnode_raft_voters", "Voting members", status.voters.len() as i64)?;
        gauge(&mut enc, "idnode_raft_learners", "Learners", status.learners.len() as i64)?;
        gauge(&mut enc, "idnode_raft_last_log_index", "Last log index", int(status.last_log_index.unwrap_or(0)))?;
        gauge(&mut enc, "idnode_raft_committed_index", "Committed index", int(committed))?;
        gauge(&mut enc, "idnode_raft_applied_index", "Applied index", int(applied))?;
        gauge(
            &mut enc,
            "idnode_cluster_version",
            "Replicated cluster version: the command version every voter applies",
            i64::from(status.cluster_version),
        )?;
        gauge(
            &mut enc,
            "idnode_command_version",
            "Highest command version this node's binary applies",
            i64::from(node.app.command_version()),
        )?;
        gauge(&mut enc, "idnode_raft_apply_lag", "Committed minus applied", int(committed.saturating_sub(applied)))?;
        if let Some(ms) = status.millis_since_quorum_ack.filter(|_| is_leader) {
            let g = ConstGauge::new(ms as f64 / 1000.0);
            let help = "On the leader: seconds since a quorum of the voters last acknowledged it";
            g.encode(enc.encode_descriptor("idnode_raft_quorum_ack_age_seconds", help, None, g.metric_type())?)?;
        }
        gauge(
            &mut enc,
            "idnode_raft_fresh",
            "1 when this node may answer from its own state without a read barrier",
            i64::from(node.fresh()),
        )?;
        gauge(
            &mut enc,
            "idnode_raft_watermark_index",
            "Commit index every member that may answer credential checks heard of (0: none published)",
            int(node.watermark_index()),
        )?;
        counter(
            &mut enc,
            "idnode_raft_local_checks",
            "Credential checks a follower answered from its own state by the watermark, without a read index",
            node.local_answers(),
        )?;
        counter(
            &mut enc,
            "idnode_raft_freshness_barriers",
            "Read barriers run because this node may have missed entries before validating a credential",
            node.freshness.barriers_run(),
        )?;
        labelled(
            &mut enc,
            "idnode_raft_replication_lag",
            "Leader's last log index minus the peer's matched index",
            "peer",
            repl.iter().map(|p| (p.id.to_string(), ConstGauge::new(int(p.lag)))),
        )?;
        gauge(
            &mut enc,
            "idnode_raft_snapshot_index",
            "Last log index in the current snapshot",
            int(status.snapshot_index.unwrap_or(0)),
        )?;
        let stats = &node.sm_stats;
        gauge(
            &mut enc,
            "idnode_raft_snapshot_size_bytes",
            "Size of the current snapshot",
            int(stats.snapshot_size.load(Ordering::Relaxed)),
        )?;
        let created = stats.snapshot_created_at.load(Ordering::Relaxed);
        let age = if created == 0 { 0 } else { unix_now().saturating_sub(created) };
        gauge(&mut enc, "idnode_raft_snapshot_age_seconds", "Age of the current snapshot", int(age))?;
        counter(
            &mut enc,
            "idnode_raft_snapshot_installs",
            "Snapshots received from a leader and installed since this process started",
            stats.snapshot_installs.load(Ordering::Relaxed),
        )?;
        gauge(
            &mut enc,
            "idnode_raft_quarantined_partitions",
            "Column families quarantined on this node after a stored value failed to open",
            int(node.engine().quarantined().len() as u64),
        )?;
        let (differs, tie, checks, last_index, mismatched) = {
            let s = node.standing.lock().unwrap_or_else(|p| p.into_inner());
            (s.differs.is_some(), s.tie.is_some(), s.checks_run, s.last_check_index, s.last_mismatched)
        };
        gauge(
            &mut enc,
            "idnode_raft_consistency_mismatch",
            "1 when a consistency check found this node's state different from the cluster's, or found the \
             members' digests disagreeing with no majority of the voters (a tie)",
            i64::from(differs || tie),
        )?;
        gauge(
            &mut enc,
            "idnode_raft_consistency_tie",
            "1 while a consistency check's tie stands (the members' digests disagreed and no digest had a \
             majority of the voters, so nobody was quarantined) until a check with a majority",
            i64::from(tie),
        )?;
        counter(&mut enc, "idnode_raft_consistency_checks", "Consistency checks this node ran", checks)?;
        gauge(
            &mut enc,
            "idnode_raft_consistency_check_index",
            "Checkpoint index of the last consistency check this node ran",
            int(last_index),
        )?;
        gauge(
            &mut enc,
            "idnode_raft_consistency_mismatched_members",
            "Members that differed in the last consistency check this node ran",
            mismatched as i64,
        )?;
        gauge(
            &mut enc,
            "idnode_storage_disk_usage_bytes",
            "Bytes used by the database directory",
            int(node.engine.disk_usage()),
        )?;
        let (cache, memtables, readers) = node.engine.memory_usage();
        gauge(&mut enc, "idnode_storage_block_cache_bytes", "Bytes held by the block cache", int(cache))?;
        gauge(&mut enc, "idnode_storage_memtable_bytes", "Bytes held by the memtables", int(memtables))?;
        gauge(
            &mut enc,
            "idnode_storage_table_readers_bytes",
            "Bytes held by open table files' index and filter blocks",
            int(readers),
        )?;

        let keys = node.engine.keys();
        gauge(
            &mut enc,
            "idnode_keys_epoch_current",
            "Data key epoch used for new writes",
            i64::from(keys.current_epoch()),
        )?;
        gauge(&mut enc, "idnode_keys_epochs", "Data key epochs held", keys.epochs().len() as i64)?;
        counter(&mut enc, "idnode_keys_sealed", "Values sealed", keys.stats.sealed.load(Ordering::Relaxed))?;
        labelled(
            &mut enc,
            "idnode_keys_epoch_sealed",
            "Values sealed under each data-key epoch still held, since the process started (each draws one random nonce)",
            "epoch",
            keys.sealed_by_epoch().into_iter().map(|(epoch, n)| (epoch.to_string(), ConstCounter::new(n))),
        )?;
        counter(&mut enc, "idnode_keys_opened", "Values opened", keys.stats.opened.load(Ordering::Relaxed))?;
        counter(
            &mut enc,
            "idnode_keys_decrypt_failures",
            "Values that failed to open",
            keys.stats.failures.load(Ordering::Relaxed),
        )?;
        Ok(())
    }
}
