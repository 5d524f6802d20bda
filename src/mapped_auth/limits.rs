//! The per-provider rate limits (spec, "Limits"): authentications through a provider
//! (`shadow_registry_auth_rate_limit`, 500 per minute), principals it creates
//! (`shadow_registry_creation_rate_limit`, 50 per minute) and its SCIM writes
//! (`scim_realm_write_rate_limit`, 500 per minute). Each figure is the cluster's, whichever
//! members the traffic reaches: the leader counts it, and members take leases of a few tokens
//! from it (`idnode_raft::RaftNode::lease`). Without an answer from the leader within
//! [`LEASE_TIMEOUT`] a member counts its own share of the figure instead (`share`), so no
//! login depends on the leader (`docs/decisions.md`, "Cluster-wide rate limits").

mod held;
mod share;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use idnode_raft::LeaseGrant;

use crate::http::error::ApiError;
use held::{Held, Take};

/// How long an event waits for a lease before the member counts its own share.
pub const LEASE_TIMEOUT: Duration = Duration::from_millis(300);
/// A lease asks for `figure / (members × LEASE_PARTS)` tokens (at least 1): the tokens members
/// hold unspent are at most about an eighth of the figure, while a member makes one call to
/// the leader per that many events (20 at 500 a minute on three members).
const LEASE_PARTS: u32 = 8;

/// Where leases come from: the raft node (the leader), or a test's stand-in.
pub trait LeaseSource: Sync {
    /// The members serving the cluster (what the own share divides by).
    fn members(&self) -> usize;
    /// Up to `want` tokens of `key`'s figure `per_minute`; `None`: no answer (count the share).
    fn lease(&self, key: &str, per_minute: u32, want: u32) -> impl Future<Output = Option<LeaseGrant>> + Send;
}

impl LeaseSource for idnode_raft::RaftNode {
    fn members(&self) -> usize {
        self.member_count()
    }

    async fn lease(&self, key: &str, per_minute: u32, want: u32) -> Option<LeaseGrant> {
        match idnode_raft::RaftNode::lease(self, key, per_minute, want, LEASE_TIMEOUT).await {
            Ok(g) => Some(g),
            Err(e) => {
                tracing::debug!(key, error = %e, "no lease from the leader: counting this member's share");
                None
            }
        }
    }
}

/// The tokens of a lease, for `per_minute` shared by `members`.
pub fn lease_size(per_minute: u32, members: usize) -> u32 {
    let members = u32::try_from(members.max(1)).unwrap_or(u32::MAX);
    (per_minute / members.saturating_mul(LEASE_PARTS)).max(1)
}

/// One cluster-wide figure, per provider id.
pub struct PerProvider {
    per_minute: u32,
    /// The setting's name: with the provider id, the key the leader counts under.
    name: &'static str,
    what: &'static str,
    /// Leased tokens by provider; the async lock makes one lease call at a time per provider
    /// on this member (others wait for it, then spend from it).
    held: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Held>>>>,
    share: share::Shares,
}

impl PerProvider {
    /// `per_minute` 0: no limit.
    pub fn new(per_minute: u32, name: &'static str, what: &'static str) -> Self {
        PerProvider { per_minute, name, what, held: Mutex::new(HashMap::new()), share: share::Shares::new(per_minute) }
    }

    /// Counts one event of `provider`: 429 with `Retry-After` once the cluster's figure is
    /// spent (the leader's bucket is empty), or, when the leader cannot be asked, this
    /// member's share.
    pub async fn check(&self, leader: &impl LeaseSource, provider: &str) -> Result<(), ApiError> {
        if self.per_minute == 0 {
            return Ok(());
        }
        let members = leader.members();
        let cell = {
            let mut map = self.held.lock().unwrap_or_else(|p| p.into_inner());
            map.entry(provider.to_string()).or_default().clone()
        };
        let take = {
            let mut held = cell.lock().await;
            let asked = Instant::now();
            match held.take(asked) {
                Take::Ask => {
                    let key = format!("{}:{provider}", self.name);
                    match leader.lease(&key, self.per_minute, lease_size(self.per_minute, members)).await {
                        Some(g) if g.granted > 0 => held.granted(g.granted, asked),
                        Some(g) => held.refused(g.retry_after, Instant::now()),
                        None => held.failed(Instant::now()),
                    }
                }
                other => other,
            }
        };
        match take {
            Take::Admit => Ok(()),
            Take::Refuse(wait) => Err(self.too_many(wait)),
            Take::Share | Take::Ask => self.share.check(provider, members).map_err(|wait| self.too_many(wait)),
        }
    }

    fn too_many(&self, wait: Duration) -> ApiError {
        let secs = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
        ApiError {
            retry_after: Some(secs),
            ..ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                format!("Too many {} through this provider; retry later.", self.what),
            )
        }
    }

    /// Forgets providers that hold nothing and whose share is full again.
    pub fn housekeep(&self) {
        let now = Instant::now();
        let mut map = self.held.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, cell| Arc::strong_count(cell) > 1 || !cell.try_lock().is_ok_and(|h| h.idle(now)));
        drop(map);
        self.share.housekeep();
    }
}

#[cfg(test)]
mod tests;
