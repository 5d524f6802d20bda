//! Background jobs that change replicated state on a schedule (architecture: `jobs/`).
//!
//! Why leader-gated: every node runs the same timers, but a pass proposes commands, and one
//! pass per cluster is enough (and emits each audit event once). So a node acts only while
//! it is the leader; a follower's tick does nothing. Why safe anyway: each command selects
//! its work from the state when it applies (bounded batches through ordered indexes, times
//! carried in the command), so two passes racing across a leader change, a retried batch,
//! or a pass that finds nothing are all harmless. A node that becomes leader simply runs at
//! its next tick. The pass functions take `now`, so tests drive them without sleeping.

pub mod api_keys;
pub mod derived_ids;
pub mod scim;
pub mod shadow;

use std::sync::Arc;
use std::time::Duration;

use crate::context::Core;

/// First pass after start: late enough for the node to have joined (and the cluster to be
/// bootstrapped), early enough that frequent restarts do not starve a daily or weekly job.
const FIRST_PASS_AFTER: Duration = Duration::from_secs(300);

/// How often the leader checks that the migration of derived user ids has run (it runs once,
/// after the last voter is upgraded; every later pass reads one record and stops).
const DERIVED_IDS_EVERY: Duration = Duration::from_secs(60);

/// Starts the jobs; the handles are aborted at shutdown.
pub fn spawn(node: &Arc<Core>) -> Vec<tokio::task::JoinHandle<()>> {
    let s = &node.cfg.shadow_registry;
    vec![
        tokio::spawn(every(node.clone(), Duration::from_secs(s.deactivation_check_interval_s), Job::Deactivate)),
        tokio::spawn(every(node.clone(), Duration::from_secs(s.archive_cleanup_interval_s), Job::ArchiveCleanup)),
        tokio::spawn(every(node.clone(), Duration::from_secs(node.cfg.scim.janitor_interval_s), Job::ScimJanitor)),
        tokio::spawn(every(node.clone(), Duration::from_secs(node.cfg.scim.janitor_interval_s), Job::ApiKeyReclaim)),
        tokio::spawn(every(node.clone(), DERIVED_IDS_EVERY, Job::DerivedUserIds)),
    ]
}

/// A lifecycle job: the shadow registry's two, the SCIM janitor and the API keys'
/// tombstone reclamation.
#[derive(Debug, Clone, Copy)]
pub enum Job {
    Deactivate,
    ArchiveCleanup,
    ScimJanitor,
    ApiKeyReclaim,
    DerivedUserIds,
}

/// One tick of `job` at `now` (unix seconds): `None` on a follower (it does nothing), else
/// the leader's pass and how many records it changed.
pub async fn tick(node: &Core, job: Job, now: i64) -> Option<crate::http::error::ApiResult<usize>> {
    if !node.raft.is_leader() {
        return None;
    }
    Some(match job {
        Job::Deactivate => shadow::deactivate_pass(node, now).await,
        Job::ArchiveCleanup => shadow::archive_cleanup_pass(node, now).await,
        Job::ScimJanitor => scim::janitor_pass(node, now).await,
        Job::ApiKeyReclaim => api_keys::reclaim_pass(node, now).await,
        Job::DerivedUserIds => derived_ids::migrate_pass(node).await,
    })
}

async fn every(node: Arc<Core>, interval: Duration, job: Job) {
    tokio::time::sleep(FIRST_PASS_AFTER.min(interval)).await;
    let mut ticks = tokio::time::interval(interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        match tick(&node, job, chrono::Utc::now().timestamp()).await {
            None | Some(Ok(0)) => tracing::debug!(?job, "lifecycle pass: nothing to do here"),
            Some(Ok(n)) => tracing::info!(?job, records = n, "lifecycle pass done"),
            // The next tick retries; what was done so far is committed and stays done.
            Some(Err(e)) => tracing::warn!(?job, "lifecycle pass stopped: {}", e.message),
        }
    }
}
