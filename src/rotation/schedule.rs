//! `[token] rotate_every`: the leader rotates the replicated token key ring on a schedule, as
//! a cron job running `keystone-manage fernet_rotate` does for Keystone, through the same
//! replicated command as `idnode keys rotate --token`.
//!
//! Why it never rotates early or twice: the schedule is not a timer of this process but the age
//! of the ring's newest key (the staged one, made by the last rotation, scheduled or manual,
//! or by the bootstrap), read from the replicated state after a read barrier. A restarted or
//! newly elected leader therefore sees the rotation its predecessor committed and waits out
//! the rest of the period. Only the leader checks (one pass per cluster).

use std::sync::Arc;
use std::time::Duration;

use crate::clock::now_secs;
use crate::config::key_schedule::poll_interval;
use crate::context::Core;
use crate::http::error::ApiResult;
use crate::state::read::TokenReads;
use crate::state::Command;

/// Staged → primary → secondary through one replicated command, keeping `[token]
/// max_active_keys` keys: every node switches at the same log entry, and the new staged key is
/// known everywhere before any node issues with it.
pub async fn rotate_ring(core: &Core) -> ApiResult<()> {
    let cmd = Command::RotateTokenKeys {
        new_staged: idnode_keys::random_bytes(),
        now: now_secs(),
        max_secondary: core.cfg.token_max_active_keys.saturating_sub(2),
    };
    core.propose(cmd).await.map(|_| ())
}

/// Seconds until a ring whose newest key was made at `newest_created_at` is due; zero or
/// less: due now.
pub fn due_in(newest_created_at: i64, now: i64, every: Duration) -> i64 {
    newest_created_at.saturating_add(every.as_secs() as i64).saturating_sub(now)
}

/// One look at `now` (unix seconds): on the leader, rotates the ring when it is due. Returns
/// whether it rotated.
pub async fn pass(core: &Core, every: Duration, now: i64) -> ApiResult<bool> {
    if !core.raft.is_leader() {
        return Ok(false);
    }
    // A new leader may not have applied every committed entry yet (its predecessor's rotation).
    core.raft.linearizable_barrier().await?;
    let Some(ring) = core.engine.read().token_keys()? else { return Ok(false) };
    let Some(newest) = ring.keys.iter().map(|k| k.created_at).max() else { return Ok(false) };
    if due_in(newest, now, every) > 0 || !core.raft.is_leader() {
        return Ok(false);
    }
    rotate_ring(core).await?;
    Ok(true)
}

/// Starts the schedule when `[token] rotate_every` is set.
pub fn spawn(core: &Arc<Core>) -> Option<tokio::task::JoinHandle<()>> {
    let every = core.cfg.key_schedule.token?;
    Some(tokio::spawn(run(core.clone(), every)))
}

async fn run(core: Arc<Core>, every: Duration) {
    let mut ticks = tokio::time::interval(poll_interval(every));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        match pass(&core, every, now_secs()).await {
            Ok(true) => tracing::info!(every = %humantime::format_duration(every), "token keys rotated on schedule"),
            Ok(false) => {}
            // The next look tries again; nothing was half done (one replicated command).
            Err(e) => tracing::warn!("scheduled token key rotation failed: {}", e.message),
        }
    }
}
