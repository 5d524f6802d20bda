//! `[oauth2] rotate_every`: the leader rotates every domain's OIDC signing keys on a schedule,
//! through the same path as `idnode keys rotate-oidc` (`keys::rotate`: the staged key starts
//! signing, the old primary stays in `/jwks` until its tokens have expired).
//!
//! As for the token ring (`rotation::schedule`), the period is measured from the replicated
//! state, the age of the domain's staged key (made by its last rotation), after a read
//! barrier, so a new leader never rotates early; and a rotation names the staged key it
//! promotes (`expected_staged`), so two racing rotations cannot both apply.

use std::sync::Arc;
use std::time::Duration;

use super::keys;
use super::provider::Provider;
use crate::clock::now_secs;
use crate::config::key_schedule::poll_interval;
use crate::context::Core;
use crate::http::error::ApiResult;
use crate::state::read::OAuth2Reads;

/// One look at `now` (unix seconds): on the leader, rotates each enabled domain whose staged
/// key is `every` old. Returns how many domains it rotated; a domain that fails is logged and
/// retried at the next look, the others go on.
pub async fn pass(core: &Core, provider: &Provider, every: Duration, now: i64) -> ApiResult<usize> {
    if !core.raft.is_leader() {
        return Ok(0);
    }
    core.raft.linearizable_barrier().await?;
    let sets = core.engine.read().oauth2_all_signing_keys()?;
    let mut rotated = 0;
    for set in sets {
        let due = set.staged().is_some_and(|s| s.created_at.saturating_add(every.as_secs() as i64) <= now);
        if !due {
            continue;
        }
        if !core.raft.is_leader() {
            break;
        }
        match keys::rotate(core, provider, &set.domain_id).await {
            Ok(_) => rotated += 1,
            // A disabled or deleted domain has no authorization server: nothing to rotate.
            Err(e) if e.status == axum::http::StatusCode::NOT_FOUND => {}
            Err(e) => {
                tracing::warn!(domain_id = %set.domain_id, "scheduled OIDC key rotation failed: {}", e.description)
            }
        }
    }
    Ok(rotated)
}

/// Starts the schedule when `[oauth2] rotate_every` is set.
pub fn spawn(core: &Arc<Core>, provider: &Arc<Provider>) -> Option<tokio::task::JoinHandle<()>> {
    let every = core.cfg.key_schedule.oidc?;
    Some(tokio::spawn(run(core.clone(), provider.clone(), every)))
}

async fn run(core: Arc<Core>, provider: Arc<Provider>, every: Duration) {
    let mut ticks = tokio::time::interval(poll_interval(every));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        match pass(&core, &provider, every, now_secs()).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(domains = n, "OIDC signing keys rotated on schedule"),
            Err(e) => tracing::warn!("scheduled OIDC key rotation failed: {}", e.message),
        }
    }
}
