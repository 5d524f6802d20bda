//! Leases of a cluster-wide figure (`lease`): a member asks the leader for a few tokens of a
//! key's bucket; the leader draws from its own buckets without a call. Any failure (no leader,
//! a call that does not finish in time, a cluster below [`LEASE_VERSION`], whose leader would
//! not decode the request) is an error the application answers by counting its own share,
//! so nothing it guards depends on the leader.

use std::time::Duration;

use tokio::time::Instant;

use crate::lease::{LeaseGrant, MAX_KEY_LEN};
use crate::wire::{LeaderError, LeaderReply, LeaderRequest, LeaderResult, LEASE_VERSION};
use crate::{ProposeError, RaftNode};

impl RaftNode {
    /// Up to `want` tokens of `key`'s bucket of `per_minute` (the cluster's figure), from the
    /// leader, within `within`.
    pub async fn lease(
        &self,
        key: &str,
        per_minute: u32,
        want: u32,
        within: Duration,
    ) -> Result<LeaseGrant, ProposeError> {
        self.leases.inc();
        let outcome = async {
            let version = self.cluster_version();
            if version < LEASE_VERSION {
                return Err(ProposeError::Rejected(format!(
                    "cluster version {version} is below {LEASE_VERSION}: the leader may not grant leases"
                )));
            }
            if self.is_leader() {
                return self.grant_lease(key, per_minute, want).map_err(|e| ProposeError::Rejected(format!("{e:?}")));
            }
            if self.leader_id().is_none() {
                return Err(ProposeError::NoLeader);
            }
            let req = LeaderRequest::Lease { key: key.to_string(), per_minute, want };
            match self.leader_call(req, Instant::now() + within).await? {
                LeaderReply::Leased { granted, retry_after_ms } => {
                    Ok(LeaseGrant { granted, retry_after: Duration::from_millis(retry_after_ms) })
                }
                other => Err(ProposeError::Rejected(format!("unexpected leader reply {other:?}"))),
            }
        }
        .await;
        if outcome.is_err() {
            self.lease_failures.inc();
        }
        outcome
    }

    /// (leases asked for on this node, of which failed): what the metrics show, for tests.
    pub fn lease_counts(&self) -> (u64, u64) {
        (self.leases.get(), self.lease_failures.get())
    }

    /// The leader's side: draws from its bucket for `key`.
    pub(crate) fn grant_lease(&self, key: &str, per_minute: u32, want: u32) -> Result<LeaseGrant, LeaderError> {
        if key.len() > MAX_KEY_LEN {
            return Err(LeaderError::Rejected(format!("a lease key is at most {MAX_KEY_LEN} bytes")));
        }
        self.lease_buckets
            .grant(key, per_minute, want, std::time::Instant::now())
            .ok_or_else(|| LeaderError::Unavailable("the leader counts too many keys".into()))
    }

    /// [`Self::grant_lease`] as the answer to a forwarded request (`Retry-After` in whole
    /// milliseconds, rounded up).
    pub(crate) fn lease_reply(&self, key: &str, per_minute: u32, want: u32) -> LeaderResult {
        let g = self.grant_lease(key, per_minute, want)?;
        let ms = g.retry_after.as_nanos().div_ceil(1_000_000);
        Ok(LeaderReply::Leased { granted: g.granted, retry_after_ms: u64::try_from(ms).unwrap_or(u64::MAX) })
    }
}
