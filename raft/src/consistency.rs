//! Consistency checks between replicas, like etcd's hash check: the leader appends a
//! checkpoint entry at index N, every member digests its logical state exactly as of N (see
//! `digests.rs`), and the digests are compared. The majority's digest is the reference (the
//! leader's breaks a tie); members that differ are named, told, and fail readiness until a
//! later check finds them equal again. A member that skipped N (it installed a snapshot past
//! it, or restarted) or did not answer is reported unavailable, not different.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::join_all;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::digests::DigestOutcome;
use crate::wire::{LeaderReply, LeaderRequest};
use crate::{ProposeError, RaftNode};

pub const PATH_DIGEST: &str = "/cluster/digest";
pub const PATH_CHECK: &str = "/cluster/check";
pub const PATH_VERDICT: &str = "/cluster/verdict";

/// "Your digest at `index`, waiting up to `wait_ms` for it."
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DigestRequest {
    pub index: u64,
    pub wait_ms: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DigestReply {
    pub applied: u64,
    /// `None`: this node holds no digest for that index.
    pub outcome: Option<DigestOutcome>,
}

/// "Run a check and report", sent to any node by `idnode cluster check`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckRequest {
    pub wait_ms: u64,
}

/// What the checking node tells each member that answered.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Verdict {
    index: u64,
    reference: Option<String>,
    differs: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberDigest {
    pub id: u64,
    pub addr: String,
    pub digest: Option<String>,
    pub records: Option<u64>,
    /// "match", "mismatch" or "unavailable".
    pub status: String,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsistencyReport {
    /// The checkpoint's log index: every digest covers the state exactly as of it.
    pub index: u64,
    /// The digest the majority holds, if one could be told.
    pub reference: Option<String>,
    pub members: Vec<MemberDigest>,
    /// Members whose digest differs from the reference.
    pub mismatched: Vec<u64>,
}

impl ConsistencyReport {
    /// Every member answered and all digests are equal.
    pub fn consistent(&self) -> bool {
        self.reference.is_some() && self.members.iter().all(|m| m.status == "match")
    }
}

/// What this node knows about its own standing and the checks it ran.
#[derive(Debug, Default)]
pub(crate) struct Standing {
    /// Set when a check found this node's state different: (checkpoint index, reason).
    pub(crate) differs: Option<(u64, String)>,
    pub(crate) checks_run: u64,
    pub(crate) last_check_index: u64,
    pub(crate) last_mismatched: usize,
}

/// The reference digest and the members that differ from it.
fn judge(digests: &BTreeMap<u64, String>, leader: Option<u64>) -> (Option<String>, Vec<u64>) {
    let mut groups: BTreeMap<&str, usize> = BTreeMap::new();
    for d in digests.values() {
        *groups.entry(d.as_str()).or_default() += 1;
    }
    let best = groups.values().copied().max().unwrap_or(0);
    let top: Vec<&str> = groups.iter().filter(|(_, n)| **n == best).map(|(d, _)| *d).collect();
    let leader_digest = leader.and_then(|l| digests.get(&l)).map(String::as_str);
    let reference = match top.as_slice() {
        [only] => Some(only.to_string()),
        tied => leader_digest.filter(|d| tied.contains(d)).map(str::to_string),
    };
    let mismatched =
        digests.iter().filter(|(_, d)| reference.as_deref() != Some(d.as_str())).map(|(id, _)| *id).collect();
    (reference, mismatched)
}

impl RaftNode {
    /// This node's digest at `index`, waiting (bounded) for it to apply that far.
    pub(crate) async fn digest_at(&self, req: DigestRequest) -> DigestReply {
        let deadline = Instant::now() + Duration::from_millis(req.wait_ms).min(crate::options::CHECK_MAX_WAIT);
        let wait = deadline.saturating_duration_since(Instant::now());
        let _ = self.raft.wait(Some(wait)).applied_index_at_least(Some(req.index), "checkpoint").await;
        let outcome = self.digests.wait(req.index, deadline).await;
        DigestReply { applied: self.applied_index(), outcome }
    }

    /// Appends a checkpoint (through the leader) and compares every member's digest at it.
    /// `wait` bounds how long a member may take to apply and digest the checkpoint.
    pub async fn check_consistency(&self, wait: Duration) -> Result<ConsistencyReport, ProposeError> {
        let deadline = Instant::now() + self.opts.forward_timeout;
        let index = match self.leader_call(LeaderRequest::Checkpoint, deadline).await? {
            LeaderReply::Written { index, .. } => index,
            other => return Err(ProposeError::Rejected(format!("unexpected leader reply {other:?}"))),
        };
        let status = self.status();
        let members: Vec<_> = status.voters.iter().chain(status.learners.iter()).cloned().collect();
        let req = DigestRequest { index, wait_ms: wait.as_millis() as u64 };
        let asks = members.iter().map(|m| {
            let req = req.clone();
            async move {
                if m.id == self.id {
                    return Ok(self.digest_at(req).await);
                }
                self.client.call::<_, DigestReply>(&m.addr, PATH_DIGEST, &req, wait + Duration::from_secs(2)).await
            }
        });
        let answers = join_all(asks).await;
        let mut digests = BTreeMap::new();
        let mut rows = Vec::new();
        for (m, answer) in members.iter().zip(answers) {
            let (digest, records, detail) = match answer {
                Ok(DigestReply { outcome: Some(DigestOutcome::Done { digest, records }), .. }) => {
                    (Some(digest), Some(records), String::new())
                }
                Ok(DigestReply { outcome: Some(DigestOutcome::Pending), applied }) => {
                    (None, None, format!("still computing (applied {applied})"))
                }
                Ok(DigestReply { outcome: Some(DigestOutcome::Failed(e)), .. }) => (None, None, format!("failed: {e}")),
                Ok(DigestReply { outcome: None, applied }) if applied >= index => {
                    (None, None, format!("no digest at {index}: skipped by a snapshot install or a restart"))
                }
                Ok(DigestReply { outcome: None, applied }) => {
                    (None, None, format!("applied only {applied} of {index} in time"))
                }
                Err(e) => (None, None, format!("no answer: {e}")),
            };
            if let Some(d) = &digest {
                digests.insert(m.id, d.clone());
            }
            rows.push(MemberDigest { id: m.id, addr: m.addr.clone(), digest, records, status: String::new(), detail });
        }
        let (reference, mismatched) = judge(&digests, status.leader_id);
        for row in &mut rows {
            row.status = match &row.digest {
                None => "unavailable",
                Some(d) if reference.as_deref() == Some(d.as_str()) => "match",
                Some(_) => "mismatch",
            }
            .to_string();
        }
        let report = ConsistencyReport { index, reference, members: rows, mismatched };
        self.announce(&report).await;
        Ok(report)
    }

    /// Tells every member that answered whether it differs (each one fails its own readiness).
    async fn announce(&self, report: &ConsistencyReport) {
        {
            let mut s = self.standing.lock().unwrap_or_else(|p| p.into_inner());
            s.checks_run += 1;
            s.last_check_index = report.index;
            s.last_mismatched = report.mismatched.len();
        }
        let calls = report.members.iter().filter(|m| m.digest.is_some()).map(|m| {
            let v = Verdict {
                index: report.index,
                reference: report.reference.clone(),
                differs: report.mismatched.contains(&m.id),
            };
            async move {
                if m.id == self.id {
                    self.accept_verdict(v);
                } else if let Err(e) =
                    self.client.call::<_, ()>(&m.addr, PATH_VERDICT, &v, Duration::from_secs(2)).await
                {
                    tracing::warn!(member = m.id, error = %e, "could not deliver the consistency verdict");
                }
            }
        });
        join_all(calls).await;
    }

    pub(crate) fn accept_verdict_bytes(&self, body: &[u8]) -> Result<(), String> {
        let v: Verdict = postcard::from_bytes(body).map_err(|e| e.to_string())?;
        self.accept_verdict(v);
        Ok(())
    }

    fn accept_verdict(&self, v: Verdict) {
        let mut s = self.standing.lock().unwrap_or_else(|p| p.into_inner());
        if v.differs {
            let reason = match &v.reference {
                Some(r) => format!("state digest at index {} differs from the cluster's ({})", v.index, short(r)),
                None => format!("state digest at index {} disagrees with the other members'", v.index),
            };
            if s.differs.is_none() {
                tracing::error!(index = v.index, "consistency check: {reason}; this node's state has diverged");
            }
            s.differs = Some((v.index, reason));
        } else if s.differs.as_ref().is_some_and(|(i, _)| *i < v.index) {
            tracing::info!(index = v.index, "consistency check: state matches the cluster's again");
            s.differs = None;
        }
    }

    /// Why this node is known to differ from the cluster, if it is.
    pub fn divergence(&self) -> Option<String> {
        self.standing.lock().unwrap_or_else(|p| p.into_inner()).differs.as_ref().map(|(_, r)| r.clone())
    }

    /// Runs a check every `interval` while this node leads (a follower's loop idles).
    pub fn spawn_consistency_checks(self: &Arc<Self>, interval: Duration) -> tokio::task::JoinHandle<()> {
        let node: Weak<RaftNode> = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(interval).await;
                let Some(node) = node.upgrade() else { return };
                if !node.is_leader() {
                    continue;
                }
                match node.check_consistency(CHECK_WAIT).await {
                    Ok(r) if r.consistent() => tracing::debug!(index = r.index, "consistency check: all members agree"),
                    Ok(r) if !r.mismatched.is_empty() => tracing::error!(
                        index = r.index,
                        members = ?r.mismatched,
                        "consistency check: these members' state differs from the cluster's"
                    ),
                    Ok(r) => tracing::warn!(index = r.index, "consistency check incomplete: {:?}", r.members),
                    Err(e) => tracing::warn!(error = %e, "consistency check could not run"),
                }
            }
        })
    }
}

/// How long the periodic check waits for members' digests.
const CHECK_WAIT: Duration = Duration::from_secs(30);

fn short(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pairs: &[(u64, &str)]) -> BTreeMap<u64, String> {
        pairs.iter().map(|(id, d)| (*id, d.to_string())).collect()
    }

    #[test]
    fn majority_wins_leader_breaks_ties() {
        assert_eq!(judge(&m(&[(1, "a"), (2, "a"), (3, "a")]), Some(1)), (Some("a".into()), vec![]));
        assert_eq!(judge(&m(&[(1, "a"), (2, "b"), (3, "a")]), Some(2)), (Some("a".into()), vec![2]));
        assert_eq!(judge(&m(&[(1, "a"), (2, "b")]), Some(2)), (Some("b".into()), vec![1]));
        assert_eq!(judge(&m(&[(1, "a"), (2, "b")]), Some(3)), (None, vec![1, 2]));
        assert_eq!(judge(&m(&[(1, "a"), (2, "b"), (3, "c")]), None), (None, vec![1, 2, 3]));
        assert_eq!(judge(&m(&[]), Some(1)), (None, vec![]));
    }
}
