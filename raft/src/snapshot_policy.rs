//! When a member builds a snapshot. A snapshot exports the whole state, so its cost grows with
//! the state; a fixed count of entries between snapshots (openraft's own policy) made the
//! snapshot work per write grow with the state too, and the write rate fell with it. Here a
//! snapshot is due once the log written since the last one reaches a share of that snapshot's
//! size (as an LSM tree amortises compaction), and never before `min_entries`: the snapshot
//! work per byte written stays constant, and the log on disk never outgrows that share of the
//! state plus the entries kept behind a snapshot for catching up.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::node::RaftNode;

/// How often a member looks whether a snapshot is due (a few atomic reads).
const CHECK_EVERY: Duration = Duration::from_millis(200);

/// What the log store has appended since this process started: the mean entry size it gives
/// estimates the bytes behind the last snapshot without reading the log.
#[derive(Default)]
pub struct LogVolume {
    entries: AtomicU64,
    bytes: AtomicU64,
}

impl LogVolume {
    pub(crate) fn appended(&self, entries: u64, bytes: u64) {
        self.entries.fetch_add(entries, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Mean stored size of an entry appended so far (0 before the first append).
    fn mean_entry_bytes(&self) -> f64 {
        let entries = self.entries.load(Ordering::Relaxed);
        if entries == 0 {
            return 0.0;
        }
        self.bytes.load(Ordering::Relaxed) as f64 / entries as f64
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SnapshotPolicy {
    /// No snapshot before this many entries since the last (`[raft] snapshot_logs_since_last`).
    pub min_entries: u64,
    /// Log bytes since the last snapshot, as a share of that snapshot's size, that make the
    /// next one due (`[raft] snapshot_log_ratio`; 0: `min_entries` alone decides).
    pub log_ratio: f64,
}

impl SnapshotPolicy {
    /// Whether a snapshot is due with `entries_since` entries applied after the last one (of
    /// `snapshot_bytes`; 0 when there is none) and entries of `mean_entry_bytes` on average.
    pub fn due(&self, entries_since: u64, mean_entry_bytes: f64, snapshot_bytes: u64) -> bool {
        entries_since >= self.min_entries.max(1)
            && entries_since as f64 * mean_entry_bytes >= self.log_ratio * snapshot_bytes as f64
    }
}

impl RaftNode {
    /// Watches the applied position and asks openraft for a snapshot when the policy says one
    /// is due (openraft's own trigger is off; it ignores a request while a build runs).
    pub(crate) fn spawn_snapshot_policy(self: &Arc<Self>, volume: Arc<LogVolume>) {
        let weak: Weak<RaftNode> = Arc::downgrade(self);
        let policy = self.opts.snapshot_policy();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(CHECK_EVERY).await;
                let Some(node) = weak.upgrade() else { return };
                let (applied, snapshot) = node.with_metrics(|m| {
                    (m.last_applied.map_or(0, |l| l.index + 1), m.snapshot.map_or(0, |l| l.index + 1))
                });
                let snapshot_bytes = node.sm_stats.snapshot_size.load(Ordering::Relaxed);
                if !policy.due(applied.saturating_sub(snapshot), volume.mean_entry_bytes(), snapshot_bytes) {
                    continue;
                }
                // A request while a build runs is ignored by openraft; the finished build moves
                // `m.snapshot` and the next look finds nothing due.
                if let Err(e) = node.raft.trigger().snapshot().await {
                    tracing::debug!(error = %e, "snapshot not triggered: raft has stopped");
                    return;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_entry_count_alone_decides_without_a_ratio_or_a_snapshot() {
        let p = SnapshotPolicy { min_entries: 30, log_ratio: 0.0 };
        assert!(!p.due(29, 500.0, 1 << 30));
        assert!(p.due(30, 500.0, 1 << 30));
        let p = SnapshotPolicy { min_entries: 30, log_ratio: 0.5 };
        assert!(p.due(30, 500.0, 0), "a first snapshot needs only the entry count");
    }

    #[test]
    fn a_larger_state_waits_for_proportionally_more_log() {
        let p = SnapshotPolicy { min_entries: 10_000, log_ratio: 0.5 };
        // 100 MiB snapshot, 500-byte entries: due after 50 MiB of log, 104,858 entries.
        let size = 100 << 20;
        assert!(!p.due(104_857, 500.0, size));
        assert!(p.due(104_858, 500.0, size));
        // Ten times the state, ten times the log.
        assert!(!p.due(1_048_575, 500.0, size * 10));
        assert!(p.due(1_048_576, 500.0, size * 10));
    }

    #[test]
    fn never_due_before_any_entry() {
        let p = SnapshotPolicy { min_entries: 0, log_ratio: 0.0 };
        assert!(!p.due(0, 0.0, 0));
        assert!(p.due(1, 0.0, 0));
    }

    #[test]
    fn the_mean_entry_size_is_what_was_appended() {
        let v = LogVolume::default();
        assert_eq!(v.mean_entry_bytes(), 0.0);
        v.appended(2, 1000);
        v.appended(2, 200);
        assert_eq!(v.mean_entry_bytes(), 300.0);
    }
}
