//! Consistency checks between replicas, like etcd's hash check: the leader appends a
//! checkpoint entry at index N, every member digests its logical state exactly as of N (see
//! `digests.rs`), and the digests are compared. The majority's digest is the reference (the
//! leader's breaks a tie); members that differ are named, told, and fail readiness until a
//! later check finds them equal again. A member that skipped N (it installed a snapshot past
//! it, or restarted) or did not answer is reported unavailable, not different.
//!
//! A member told it differs is also sent the reference's per-family digests at N (the
//! checking node's own when it matches, else one matching member's): it quarantines each
//! family whose digest differs, so it stops serving from it; only a rebuild lifts that.
//! Without that detail (an older member holds the reference, the digests are forgotten) it
//! only fails readiness, as before.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::join_all;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::digests::{CfDigest, DigestOutcome};
use crate::wire::{LeaderReply, LeaderRequest};
use crate::{ProposeError, RaftNode};

pub const PATH_DIGEST: &str = "/cluster/digest";
pub const PATH_CHECK: &str = "/cluster/check";
pub const PATH_VERDICT: &str = "/cluster/verdict";
pub const PATH_DIGEST_FAMILIES: &str = "/cluster/digest/families";

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

/// "Your per-family digests at `index`" (asked of a member whose digest is the reference,
/// once its digest at `index` is known, so it does not wait).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FamiliesRequest {
    pub index: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FamiliesReply {
    /// `None`: this node holds no completed digest for that index.
    pub families: Option<Vec<CfDigest>>,
}

/// "Run a check and report", sent to any node by `idnode cluster check`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckRequest {
    pub wait_ms: u64,
}

/// What the checking node tells each member that answered. Fields are only ever appended:
/// an older member's postcard decode ignores the trailing ones, and a shorter verdict from an
/// older checker is decoded as [`VerdictV1`] (see `decode_verdict`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Verdict {
    index: u64,
    reference: Option<String>,
    differs: bool,
    /// For a member that differs: the reference's per-family digests at `index`, when the
    /// checking node could get them.
    families: Option<Vec<CfDigest>>,
}

/// The verdict as released before per-family digests.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct VerdictV1 {
    index: u64,
    reference: Option<String>,
    differs: bool,
}

fn decode_verdict(body: &[u8]) -> Result<Verdict, postcard::Error> {
    postcard::from_bytes::<Verdict>(body).or_else(|e| {
        let VerdictV1 { index, reference, differs } = postcard::from_bytes(body).map_err(|_| e)?;
        Ok(Verdict { index, reference, differs, families: None })
    })
}

/// The families whose digests differ between `own` and `reference` (one absent on either
/// side counts as different), in name order.
fn differing_families(own: &[CfDigest], reference: &[CfDigest]) -> Vec<String> {
    let index =
        |ds: &[CfDigest]| -> BTreeMap<String, String> { ds.iter().map(|d| (d.cf.clone(), d.digest.clone())).collect() };
    let (own, reference) = (index(own), index(reference));
    own.keys()
        .chain(reference.keys())
        .filter(|cf| own.get(*cf) != reference.get(*cf))
        .cloned()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
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
                self.client
                    .call::<_, DigestReply>(m.id, &m.addr, PATH_DIGEST, &req, wait + Duration::from_secs(2))
                    .await
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
        let families = self.reference_families(&report).await;
        self.announce(&report, families).await;
        Ok(report)
    }

    /// This node's per-family digests at `index`, for a member that holds the reference.
    pub(crate) fn families_at(&self, req: FamiliesRequest) -> FamiliesReply {
        FamiliesReply { families: self.digests.families(req.index) }
    }

    /// The reference's per-family digests, when some member differs: this node's own when
    /// its digest is the reference, else the first matching member's that answers. `None`
    /// when none can be had (a member without the route answers 404).
    async fn reference_families(&self, report: &ConsistencyReport) -> Option<Vec<CfDigest>> {
        if report.mismatched.is_empty() || report.reference.is_none() {
            return None;
        }
        let matching = report.members.iter().filter(|m| m.status == "match");
        // This node first: no call needed.
        let (own, others): (Vec<&MemberDigest>, Vec<&MemberDigest>) = matching.partition(|m| m.id == self.id);
        let req = FamiliesRequest { index: report.index };
        if !own.is_empty() {
            if let Some(f) = self.families_at(req.clone()).families {
                return Some(f);
            }
        }
        for m in others {
            let answer = self
                .client
                .call::<_, FamiliesReply>(m.id, &m.addr, PATH_DIGEST_FAMILIES, &req, Duration::from_secs(2))
                .await;
            match answer {
                Ok(FamiliesReply { families: Some(f) }) => return Some(f),
                Ok(FamiliesReply { families: None }) => {
                    tracing::debug!(member = m.id, index = report.index, "no per-family digests there")
                }
                Err(e) => tracing::debug!(member = m.id, error = %e, "no per-family digests from this member"),
            }
        }
        tracing::warn!(
            index = report.index,
            "no member holding the reference digest gave its per-family digests: the differing members are not \
             told which families to quarantine"
        );
        None
    }

    /// Tells every member that answered whether it differs (each one fails its own readiness);
    /// the ones that differ also get the reference's per-family digests, if known.
    async fn announce(&self, report: &ConsistencyReport, families: Option<Vec<CfDigest>>) {
        {
            let mut s = self.standing.lock().unwrap_or_else(|p| p.into_inner());
            s.checks_run += 1;
            s.last_check_index = report.index;
            s.last_mismatched = report.mismatched.len();
        }
        let calls = report.members.iter().filter(|m| m.digest.is_some()).map(|m| {
            let differs = report.mismatched.contains(&m.id);
            let v = Verdict {
                index: report.index,
                reference: report.reference.clone(),
                differs,
                families: if differs { families.clone() } else { None },
            };
            async move {
                if m.id == self.id {
                    self.accept_verdict(v);
                } else if let Err(e) =
                    self.client.call::<_, ()>(m.id, &m.addr, PATH_VERDICT, &v, Duration::from_secs(2)).await
                {
                    tracing::warn!(member = m.id, error = %e, "could not deliver the consistency verdict");
                }
            }
        });
        join_all(calls).await;
    }

    pub(crate) fn accept_verdict_bytes(&self, body: &[u8]) -> Result<(), String> {
        let v = decode_verdict(body).map_err(|e| e.to_string())?;
        self.accept_verdict(v);
        Ok(())
    }

    fn accept_verdict(&self, v: Verdict) {
        if v.differs {
            let quarantined = self.quarantine_differing(&v);
            let mut reason = match &v.reference {
                Some(r) => format!("state digest at index {} differs from the cluster's ({})", v.index, short(r)),
                None => format!("state digest at index {} disagrees with the other members'", v.index),
            };
            if !quarantined.is_empty() {
                reason.push_str(&format!("; quarantined: {}", quarantined.join(", ")));
            }
            let mut s = self.standing.lock().unwrap_or_else(|p| p.into_inner());
            if s.differs.is_none() {
                tracing::error!(index = v.index, "consistency check: {reason}; this node's state has diverged");
            }
            s.differs = Some((v.index, reason));
            return;
        }
        let mut s = self.standing.lock().unwrap_or_else(|p| p.into_inner());
        if s.differs.as_ref().is_some_and(|(i, _)| *i < v.index) {
            tracing::info!(index = v.index, "consistency check: state matches the cluster's again");
            s.differs = None;
        }
    }

    /// Quarantines each of this node's families whose digest at the verdict's checkpoint
    /// differs from the reference's; returns their names. Nothing without both sides' detail
    /// (the node then only fails readiness), and only families this node holds.
    fn quarantine_differing(&self, v: &Verdict) -> Vec<String> {
        let Some(reference) = &v.families else { return Vec::new() };
        let Some(own) = self.digests.families(v.index) else {
            tracing::warn!(
                index = v.index,
                "consistency check: this node no longer holds its per-family digests at that checkpoint; it cannot \
                 tell which families differ"
            );
            return Vec::new();
        };
        let held = self.engine.column_families();
        let mut quarantined = Vec::new();
        for cf in differing_families(&own, reference) {
            let Some(&cf) = held.iter().find(|h| **h == cf) else {
                tracing::warn!(index = v.index, column_family = %cf, "consistency check: a differing family this node does not hold");
                continue;
            };
            let theirs = reference.iter().find(|d| d.cf == cf).map_or("absent", |d| short(&d.digest));
            let ours = own.iter().find(|d| d.cf == cf).map_or("absent", |d| short(&d.digest));
            self.engine.quarantine_because(
                cf,
                &format_args!(
                    "its digest at consistency checkpoint {} ({ours}) differs from the cluster's ({theirs})",
                    v.index
                ),
            );
            quarantined.push(cf.to_string());
        }
        quarantined
    }

    /// Why this node is known to differ from the cluster, if it is.
    pub fn divergence(&self) -> Option<String> {
        self.standing.lock().unwrap_or_else(|p| p.into_inner()).differs.as_ref().map(|(_, r)| r.clone())
    }

    /// Runs a check every `interval` while this node leads (a follower's loop idles), or
    /// less often when checks take long (`check_pause`).
    pub fn spawn_consistency_checks(self: &Arc<Self>, interval: Duration) -> tokio::task::JoinHandle<()> {
        let node: Weak<RaftNode> = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut pause = interval;
            loop {
                tokio::time::sleep(pause).await;
                let Some(node) = node.upgrade() else { return };
                if !node.is_leader() {
                    pause = interval;
                    continue;
                }
                let started = tokio::time::Instant::now();
                let outcome = node.check_consistency(CHECK_WAIT).await;
                pause = check_pause(interval, started.elapsed());
                match outcome {
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
/// A periodic check digests the whole state on every member, so at a fixed interval its
/// share of the members' time would grow with the state (as fixed-interval snapshots did):
/// the pause after a check is at least this many times the check's duration.
const CHECK_DUTY_FACTOR: u32 = 50;
/// The longest pause the duty factor may set.
const CHECK_MAX_PAUSE: Duration = Duration::from_secs(3600);

/// The pause before the next periodic check, after one that took `took`.
fn check_pause(interval: Duration, took: Duration) -> Duration {
    interval.max((took * CHECK_DUTY_FACTOR).min(CHECK_MAX_PAUSE))
}

fn short(digest: &str) -> &str {
    digest.get(..12).unwrap_or(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pairs: &[(u64, &str)]) -> BTreeMap<u64, String> {
        pairs.iter().map(|(id, d)| (*id, d.to_string())).collect()
    }

    fn cf(name: &str, digest: &str) -> CfDigest {
        CfDigest { cf: name.into(), digest: digest.into(), records: 1 }
    }

    #[test]
    fn checks_that_take_long_come_less_often_within_bounds() {
        let five_min = Duration::from_secs(300);
        assert_eq!(check_pause(five_min, Duration::from_millis(40)), five_min);
        assert_eq!(check_pause(five_min, Duration::from_secs(20)), Duration::from_secs(1000));
        assert_eq!(check_pause(five_min, Duration::from_secs(600)), CHECK_MAX_PAUSE);
        assert_eq!(check_pause(Duration::from_secs(7200), Duration::from_secs(600)), Duration::from_secs(7200));
    }

    #[test]
    fn verdicts_decode_across_versions() {
        let families = Some(vec![cf("kv", "aa"), cf("dedup", "bb")]);
        let new = Verdict { index: 9, reference: Some("ref".into()), differs: true, families };
        let bytes = postcard::to_allocvec(&new).unwrap();
        assert_eq!(decode_verdict(&bytes).unwrap(), new);
        // An older member reads the fields it knows and ignores the appended one.
        let old: VerdictV1 = postcard::from_bytes(&bytes).unwrap();
        assert_eq!((old.index, old.reference.as_deref(), old.differs), (9, Some("ref"), true));
        // An older checker's shorter verdict: no family detail.
        let short = postcard::to_allocvec(&VerdictV1 { index: 4, reference: None, differs: true }).unwrap();
        let v = decode_verdict(&short).unwrap();
        assert_eq!(v, Verdict { index: 4, reference: None, differs: true, families: None });
        let none = Verdict { families: None, ..new };
        assert_eq!(decode_verdict(&postcard::to_allocvec(&none).unwrap()).unwrap(), none);
        assert!(decode_verdict(&[0xff]).is_err(), "garbage is still refused");
    }

    #[test]
    fn differing_families_count_absent_ones() {
        let own = [cf("a", "1"), cf("b", "2"), cf("c", "3")];
        assert!(differing_families(&own, &own).is_empty());
        assert_eq!(differing_families(&own, &[cf("a", "1"), cf("b", "x"), cf("c", "3")]), ["b"]);
        assert_eq!(differing_families(&own, &[cf("c", "3"), cf("d", "4"), cf("a", "1")]), ["b", "d"]);
        assert_eq!(differing_families(&[], &own[..1]), ["a"]);
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
