//! Consistency checks between replicas, like etcd's hash check: the leader appends a
//! checkpoint entry at index N, every member digests its logical state exactly as of N (see
//! `digests.rs`), and the digests are compared. The reference is the digest a strict majority
//! of the voters (of the whole voter set, not of those that answered) holds; members that
//! differ from it are named, told, and fail readiness until a later check finds them equal
//! again. A member that skipped N (it installed a snapshot past it, or restarted) or did not
//! answer is reported unavailable, not different.
//!
//! When the answers disagree and no digest has such a majority (a tie, say the leader and the
//! one follower still up in a three-member cluster), nobody can tell which side is right: no
//! one is quarantined, and every member raises the mismatch alarm naming the families whose
//! digests disagree, until a later check has a majority. (Letting the leader's digest break
//! the tie quarantined the healthy member whenever the leader was the one that diverged.)
//!
//! Learners' digests do not vote, but a learner that differs from the voters' majority is
//! judged like a voter: it is about to serve (or vote with) that state.
//!
//! A member told it differs is also sent the reference's per-family digests at N (the
//! checking node's own when it matches, else one matching member's): it quarantines each
//! family whose digest differs, so it stops serving from it; only a rebuild lifts that.
//! Without that detail (the reference holders' digests are forgotten) it only fails readiness.
//!
//! Only the leader judges: a check asked of a follower runs on the leader, and a verdict
//! names its sender, the term and the leader; a member acts on it only when the sender is
//! the leader it knows in its current term, so a deposed leader or a confused member cannot
//! quarantine anyone.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::join_all;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::digests::{CfDigest, DigestOutcome};
use crate::wire::{LeaderError, LeaderReply, LeaderRequest};
use crate::{ProposeError, RaftNode};

pub const PATH_DIGEST: &str = "/cluster/digest";
pub const PATH_CHECK: &str = "/cluster/check";
pub const PATH_VERDICT: &str = "/cluster/verdict";
pub const PATH_DIGEST_FAMILIES: &str = "/cluster/digest/families";
/// A check forwarded by a follower: run only by the leader (no forwarding loops).
pub const PATH_CHECK_LEADER: &str = "/cluster/check/leader";

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

/// What the leader tells the members after a check. Fields are only ever appended: an older
/// member's postcard decode ignores the trailing ones. A verdict without `sender`, `term` and
/// `leader` (an older checker's) is refused: nobody may act on a verdict it cannot tie to its
/// current leader.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Verdict {
    index: u64,
    reference: Option<String>,
    differs: bool,
    /// For a member that differs: the reference's per-family digests at `index`, when the
    /// checking node could get them.
    families: Option<Vec<CfDigest>>,
    /// The node that ran the check.
    sender: u64,
    /// The term it ran the check in.
    term: u64,
    /// The leader of that term, as the sender knows it (itself, or the verdict is refused).
    leader: u64,
    /// Set when the answers disagreed and no digest had a strict majority of the voters: the
    /// families whose digests disagree (empty when they could not be compared). Nobody is
    /// quarantined; every member raises the alarm.
    tie: Option<Vec<String>>,
}

/// The leading fields every release's verdict has; only read to name what was refused.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct VerdictPrefix {
    index: u64,
    reference: Option<String>,
    differs: bool,
}

fn decode_verdict(body: &[u8]) -> Result<Verdict, String> {
    postcard::from_bytes::<Verdict>(body).map_err(|e| match postcard::from_bytes::<VerdictPrefix>(body) {
        Ok(p) => {
            format!("verdict at index {} without sender, term and leader (from an older release): refused", p.index)
        }
        Err(_) => format!("bad verdict: {e}"),
    })
}

/// Whether this node may act on `v`, knowing `term` as its current term and `leader` as that
/// term's leader: only the leader of this very term judges. A verdict from an older term
/// could come from a deposed leader that judged a state since repaired; one from a newer term
/// cannot be checked yet; one from a member that is not the leader may be a member that
/// itself diverged.
fn admit(v: &Verdict, term: u64, leader: Option<u64>) -> Result<(), String> {
    if v.sender != v.leader {
        return Err(format!("verdict at index {} from {} in the name of leader {}", v.index, v.sender, v.leader));
    }
    if v.term != term {
        return Err(format!("verdict at index {} from term {}, this node is in term {term}", v.index, v.term));
    }
    if leader != Some(v.sender) {
        return Err(format!(
            "verdict at index {} from {}, not the leader of term {term} ({})",
            v.index,
            v.sender,
            leader.map_or_else(|| "none known".to_string(), |l| l.to_string())
        ));
    }
    Ok(())
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
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// The families whose digests are not the same in every one of `sides`, in name order.
fn disputed_families(sides: &[Vec<CfDigest>]) -> Vec<String> {
    let Some((first, rest)) = sides.split_first() else { return Vec::new() };
    rest.iter().flat_map(|other| differing_families(first, other)).collect::<BTreeSet<_>>().into_iter().collect()
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberDigest {
    pub id: u64,
    pub addr: String,
    pub digest: Option<String>,
    pub records: Option<u64>,
    /// "match", "mismatch", "unavailable", or "undecided" (a digest, but no reference to
    /// compare it with: no digest had a strict majority of the voters).
    pub status: String,
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConsistencyReport {
    /// The checkpoint's log index: every digest covers the state exactly as of it.
    pub index: u64,
    /// The digest a strict majority of the voters holds, if one does.
    pub reference: Option<String>,
    pub members: Vec<MemberDigest>,
    /// Members whose digest differs from the reference.
    pub mismatched: Vec<u64>,
    /// The answers disagree and no digest has a strict majority of the voters (a tie, or too
    /// few answers to break it): nobody was quarantined, every member raised the alarm.
    pub tie: bool,
    /// On a tie: the families whose digests disagree, when the members could tell.
    pub disputed: Vec<String>,
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
    /// Set when a check found the members disagreeing with no majority: (checkpoint index,
    /// reason). Cleared by a later check that has a majority.
    pub(crate) tie: Option<(u64, String)>,
}

/// What a check decided from the members' digests.
#[derive(Debug, PartialEq, Eq)]
struct Judgement {
    /// The digest a strict majority of the voters holds.
    reference: Option<String>,
    /// Members (voters or learners) whose digest differs from the reference.
    mismatched: Vec<u64>,
    /// The digests disagree and none has a strict majority of the voters.
    tie: bool,
}

/// Judges `digests` (member id to digest, of the members that answered) against `voters`.
/// Only voters' digests count, and the majority is of all voters, answering or not: one
/// down in three, the other two disagreeing, is a tie, not a win for either (whoever leads).
fn judge(digests: &BTreeMap<u64, String>, voters: &BTreeSet<u64>) -> Judgement {
    let mut votes: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, d) in digests.iter().filter(|(id, _)| voters.contains(id)) {
        *votes.entry(d.as_str()).or_default() += 1;
    }
    let majority = voters.len() / 2 + 1;
    match votes.into_iter().find(|(_, n)| *n >= majority) {
        Some((reference, _)) => Judgement {
            mismatched: digests.iter().filter(|(_, d)| d.as_str() != reference).map(|(id, _)| *id).collect(),
            reference: Some(reference.to_string()),
            tie: false,
        },
        None => Judgement {
            reference: None,
            mismatched: Vec::new(),
            tie: digests.values().collect::<BTreeSet<_>>().len() > 1,
        },
    }
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

    /// Has the leader append a checkpoint and compare every member's digest at it (run here
    /// when this node leads, else on the leader: only the leader's verdicts are acted on).
    /// `wait` bounds how long a member may take to apply and digest the checkpoint.
    /// A member that just started (or saw an election) waits, up to the forward timeout, for a
    /// leader, and tries again when the one it asked no longer leads.
    pub async fn check_consistency(&self, wait: Duration) -> Result<ConsistencyReport, ProposeError> {
        let deadline = Instant::now() + self.opts.forward_timeout;
        let req = CheckRequest { wait_ms: wait.as_millis() as u64 };
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            let known = self.raft.wait(Some(remaining)).metrics(|m| m.current_leader.is_some(), "a leader").await;
            if known.is_err() {
                return Err(ProposeError::NoLeader);
            }
            if self.is_leader() {
                return self.check_as_leader(wait).await;
            }
            let (leader, addr) = self.with_metrics(|m| {
                let membership = m.membership_config.membership();
                (m.current_leader, m.current_leader.and_then(|l| membership.get_node(&l)).map(|n| n.addr.clone()))
            });
            let outcome = match (leader, addr) {
                (Some(leader), Some(addr)) => {
                    let timeout = self.opts.forward_timeout + wait + Duration::from_secs(10);
                    let call = self.client.call::<_, Result<ConsistencyReport, LeaderError>>(
                        leader,
                        &addr,
                        PATH_CHECK_LEADER,
                        &req,
                        timeout,
                    );
                    match call.await {
                        Ok(Ok(report)) => return Ok(report),
                        Ok(Err(LeaderError::Rejected(e) | LeaderError::Fatal(e))) => {
                            return Err(ProposeError::Rejected(e))
                        }
                        Ok(Err(e)) => format!("leader {leader}: {e:?}"),
                        Err(e) => format!("leader {leader}: {e}"),
                    }
                }
                (leader, _) => format!("no address for leader {leader:?}"),
            };
            if Instant::now() + Duration::from_millis(100) >= deadline {
                return Err(ProposeError::Rejected(format!("the leader could not run the check: {outcome}")));
            }
            tracing::debug!("consistency check not run, retrying: {outcome}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// [`Self::check_consistency`] on the leader; refused elsewhere (a forwarded check that
    /// reached a node no longer leading).
    pub(crate) async fn check_as_leader(&self, wait: Duration) -> Result<ConsistencyReport, ProposeError> {
        if !self.is_leader() {
            return Err(ProposeError::Rejected(format!("node {} is not the leader", self.id)));
        }
        let deadline = Instant::now() + self.opts.forward_timeout;
        let index = match self.leader_call(LeaderRequest::Checkpoint, deadline).await? {
            LeaderReply::Written { index, .. } => index,
            other => return Err(ProposeError::Rejected(format!("unexpected leader reply {other:?}"))),
        };
        let status = self.status();
        let members: Vec<_> = status.voters.iter().chain(status.learners.iter()).cloned().collect();
        let voters: BTreeSet<u64> = status.voters.iter().map(|m| m.id).collect();
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
        let Judgement { reference, mismatched, tie } = judge(&digests, &voters);
        for row in &mut rows {
            row.status = match (&row.digest, &reference) {
                (None, _) => "unavailable",
                (Some(_), None) => "undecided",
                (Some(d), Some(r)) if d == r => "match",
                (Some(_), Some(_)) => "mismatch",
            }
            .to_string();
        }
        let mut report = ConsistencyReport { index, reference, members: rows, mismatched, tie, disputed: Vec::new() };
        let families = self.reference_families(&report).await;
        if tie {
            report.disputed = self.tie_families(&report).await;
            tracing::error!(
                index,
                families = ?report.disputed,
                "consistency check: the members' digests disagree and none is held by a majority of the voters (a \
                 tie): nobody is quarantined; the alarm stays raised until a check has a majority"
            );
        }
        let sign = Signature { sender: self.id, term: status.term, leader: status.leader_id.unwrap_or(self.id) };
        self.announce(&report, families, sign).await;
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
        let reference = report.reference.as_deref()?;
        if report.mismatched.is_empty() {
            return None;
        }
        let found = self.families_of(report, reference).await;
        if found.is_none() {
            tracing::warn!(
                index = report.index,
                "no member holding the reference digest gave its per-family digests: the differing members are \
                 not told which families to quarantine"
            );
        }
        found
    }

    /// On a tie: the families whose digests are not the same on every side (one member of
    /// each digest asked for its per-family digests), for the alarm to name.
    async fn tie_families(&self, report: &ConsistencyReport) -> Vec<String> {
        let sides: BTreeSet<&str> = report.members.iter().filter_map(|m| m.digest.as_deref()).collect();
        let mut found = Vec::new();
        for digest in &sides {
            match self.families_of(report, digest).await {
                Some(f) => found.push(f),
                None => tracing::warn!(index = report.index, "no per-family digests from the members holding one side"),
            }
        }
        if found.len() < sides.len() {
            // One side unknown: a comparison of the rest could leave out the family that differs.
            return Vec::new();
        }
        disputed_families(&found)
    }

    /// The per-family digests at the report's checkpoint of a member whose digest is
    /// `digest`: this node's own when it holds it, else the first such member's that answers.
    async fn families_of(&self, report: &ConsistencyReport, digest: &str) -> Option<Vec<CfDigest>> {
        let holding = report.members.iter().filter(|m| m.digest.as_deref() == Some(digest));
        // This node first: no call needed.
        let (own, others): (Vec<&MemberDigest>, Vec<&MemberDigest>) = holding.partition(|m| m.id == self.id);
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
        None
    }

    /// With a reference: tells every member that answered whether it differs (each one fails
    /// its own readiness); the ones that differ also get the reference's per-family digests,
    /// if known. On a tie: tells every member, answering or not, to raise the alarm. Without
    /// either (too few answers, all equal), nobody is told anything.
    async fn announce(&self, report: &ConsistencyReport, families: Option<Vec<CfDigest>>, sign: Signature) {
        {
            let mut s = self.standing.lock().unwrap_or_else(|p| p.into_inner());
            s.checks_run += 1;
            s.last_check_index = report.index;
            s.last_mismatched = report.mismatched.len();
        }
        let told = report.members.iter().filter(|m| report.tie || (report.reference.is_some() && m.digest.is_some()));
        let calls = told.map(|m| {
            let differs = report.mismatched.contains(&m.id);
            let v = Verdict {
                index: report.index,
                reference: report.reference.clone(),
                differs,
                families: if differs { families.clone() } else { None },
                sender: sign.sender,
                term: sign.term,
                leader: sign.leader,
                tie: report.tie.then(|| report.disputed.clone()),
            };
            async move {
                if m.id == self.id {
                    if let Err(e) = self.accept_verdict(v) {
                        tracing::warn!(error = %e, "this node refused its own consistency verdict");
                    }
                } else if let Err(e) =
                    self.client.call::<_, ()>(m.id, &m.addr, PATH_VERDICT, &v, Duration::from_secs(2)).await
                {
                    tracing::warn!(member = m.id, error = %e, "could not deliver the consistency verdict");
                }
            }
        });
        join_all(calls).await;
    }

    /// A verdict from the peer route: `Err` when it does not decode, or is refused (see
    /// [`admit`]), with the reason.
    pub(crate) fn accept_verdict_bytes(&self, body: &[u8]) -> Result<(), VerdictRefused> {
        let v = decode_verdict(body).map_err(VerdictRefused::Malformed)?;
        self.accept_verdict(v).map_err(VerdictRefused::NotFromLeader)
    }

    fn accept_verdict(&self, v: Verdict) -> Result<(), String> {
        let (term, leader) = self.with_metrics(|m| (m.current_term, m.current_leader));
        if let Err(e) = admit(&v, term, leader) {
            tracing::warn!(index = v.index, sender = v.sender, "consistency verdict refused: {e}");
            return Err(e);
        }
        if let Some(families) = &v.tie {
            self.raise_tie(v.index, families);
            return Ok(());
        }
        {
            let mut s = self.standing.lock().unwrap_or_else(|p| p.into_inner());
            if s.tie.as_ref().is_some_and(|(i, _)| *i < v.index) {
                tracing::info!(index = v.index, "consistency check: a majority of the voters agrees again");
                s.tie = None;
            }
        }
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
            return Ok(());
        }
        let mut s = self.standing.lock().unwrap_or_else(|p| p.into_inner());
        if s.differs.as_ref().is_some_and(|(i, _)| *i < v.index) {
            tracing::info!(index = v.index, "consistency check: state matches the cluster's again");
            s.differs = None;
        }
        Ok(())
    }

    /// Raises the tie alarm: nothing is quarantined (no side can be shown wrong), but this
    /// node fails readiness and counts as mismatched until a check with a majority.
    fn raise_tie(&self, index: u64, families: &[String]) {
        let named = if families.is_empty() { "not known".to_string() } else { families.join(", ") };
        let reason = format!(
            "state digests at index {index} disagree and no digest is held by a majority of the voters (a tie); \
             families that differ: {named}; nothing quarantined"
        );
        let mut s = self.standing.lock().unwrap_or_else(|p| p.into_inner());
        if s.tie.as_ref().is_none_or(|(i, _)| *i < index) {
            tracing::error!(index, families = %named, "consistency check: {reason}");
            s.tie = Some((index, reason));
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

    /// Why the last check could not tell which members differ (a tie), while that stands.
    pub fn consistency_tie(&self) -> Option<String> {
        self.standing.lock().unwrap_or_else(|p| p.into_inner()).tie.as_ref().map(|(_, r)| r.clone())
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
                    Ok(r) if r.tie => {} // logged by the check
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

/// Who sends a verdict: the checking node, the term it checked in and that term's leader.
#[derive(Debug, Clone, Copy)]
struct Signature {
    sender: u64,
    term: u64,
    leader: u64,
}

/// Why the peer route refused a verdict.
#[derive(Debug)]
pub(crate) enum VerdictRefused {
    /// It does not decode, or lacks sender, term and leader.
    Malformed(String),
    /// It is not from this node's leader in this node's term.
    NotFromLeader(String),
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

    fn verdict(sender: u64, term: u64, leader: u64) -> Verdict {
        Verdict {
            index: 9,
            reference: Some("ref".into()),
            differs: true,
            families: Some(vec![cf("kv", "aa"), cf("dedup", "bb")]),
            sender,
            term,
            leader,
            tie: None,
        }
    }

    /// The verdict as released before it named its sender (per-family digests, nothing after).
    #[derive(Serialize)]
    struct VerdictV2 {
        index: u64,
        reference: Option<String>,
        differs: bool,
        families: Option<Vec<CfDigest>>,
    }

    #[test]
    fn verdicts_decode_and_older_ones_are_refused() {
        let new = verdict(1, 4, 1);
        let bytes = postcard::to_allocvec(&new).unwrap();
        assert_eq!(decode_verdict(&bytes).unwrap(), new);
        let tie = Verdict { tie: Some(vec!["kv".into()]), differs: false, families: None, ..new.clone() };
        assert_eq!(decode_verdict(&postcard::to_allocvec(&tie).unwrap()).unwrap(), tie);
        // An older member reads the fields it knows and ignores the appended ones.
        let old: VerdictPrefix = postcard::from_bytes(&bytes).unwrap();
        assert_eq!((old.index, old.reference.as_deref(), old.differs), (9, Some("ref"), true));
        // An older checker's verdicts lack sender, term and leader: refused, whatever they say.
        let v2 = VerdictV2 { index: 9, reference: None, differs: true, families: new.families.clone() };
        let err = decode_verdict(&postcard::to_allocvec(&v2).unwrap()).unwrap_err();
        assert!(err.contains("without sender, term and leader"), "{err}");
        let v1 = VerdictPrefix { index: 4, reference: None, differs: true };
        let err = decode_verdict(&postcard::to_allocvec(&v1).unwrap()).unwrap_err();
        assert!(err.contains("index 4 without sender"), "{err}");
        // Cut inside the appended fields: as good as missing.
        let err = decode_verdict(&bytes[..bytes.len() - 3]).unwrap_err();
        assert!(err.contains("without sender"), "{err}");
        assert!(decode_verdict(&[0xff]).is_err(), "garbage is still refused");
    }

    #[test]
    fn only_the_current_leader_of_this_term_is_obeyed() {
        // This node is in term 4 and knows node 1 as its leader.
        assert_eq!(admit(&verdict(1, 4, 1), 4, Some(1)), Ok(()));
        // A sender speaking in another member's name.
        let err = admit(&verdict(2, 4, 1), 4, Some(1)).unwrap_err();
        assert!(err.contains("from 2 in the name of leader 1"), "{err}");
        let err = admit(&verdict(1, 4, 2), 4, Some(1)).unwrap_err();
        assert!(err.contains("in the name of leader 2"), "{err}");
        // A stale term (a deposed leader), and a term this node has not reached.
        let err = admit(&verdict(1, 3, 1), 4, Some(1)).unwrap_err();
        assert!(err.contains("from term 3, this node is in term 4"), "{err}");
        assert!(admit(&verdict(1, 5, 1), 4, Some(1)).is_err());
        // A sender that is consistent with itself but is not this term's leader.
        let err = admit(&verdict(2, 4, 2), 4, Some(1)).unwrap_err();
        assert!(err.contains("from 2, not the leader of term 4 (1)"), "{err}");
        let err = admit(&verdict(1, 4, 1), 4, None).unwrap_err();
        assert!(err.contains("(none known)"), "{err}");
        // A tie alarm is a verdict too: the same rules.
        let tie = Verdict { tie: Some(vec![]), differs: false, ..verdict(3, 4, 3) };
        assert!(admit(&tie, 4, Some(1)).is_err());
    }

    #[test]
    fn disputed_families_are_those_not_equal_everywhere() {
        let a = vec![cf("a", "1"), cf("b", "2"), cf("c", "3")];
        let b = vec![cf("a", "1"), cf("b", "x"), cf("c", "3")];
        let c = vec![cf("a", "1"), cf("b", "2"), cf("c", "y")];
        assert!(disputed_families(&[]).is_empty());
        assert!(disputed_families(std::slice::from_ref(&a)).is_empty());
        assert_eq!(disputed_families(&[a.clone(), b.clone()]), ["b"]);
        assert_eq!(disputed_families(&[a, b, c]), ["b", "c"]);
    }

    #[test]
    fn differing_families_count_absent_ones() {
        let own = [cf("a", "1"), cf("b", "2"), cf("c", "3")];
        assert!(differing_families(&own, &own).is_empty());
        assert_eq!(differing_families(&own, &[cf("a", "1"), cf("b", "x"), cf("c", "3")]), ["b"]);
        assert_eq!(differing_families(&own, &[cf("c", "3"), cf("d", "4"), cf("a", "1")]), ["b", "d"]);
        assert_eq!(differing_families(&[], &own[..1]), ["a"]);
    }

    fn ids(v: &[u64]) -> BTreeSet<u64> {
        v.iter().copied().collect()
    }

    fn quorum(reference: &str, mismatched: &[u64]) -> Judgement {
        Judgement { reference: Some(reference.into()), mismatched: mismatched.to_vec(), tie: false }
    }

    const TIE: Judgement = Judgement { reference: None, mismatched: Vec::new(), tie: true };
    const UNDECIDED: Judgement = Judgement { reference: None, mismatched: Vec::new(), tie: false };

    #[test]
    fn a_strict_majority_of_all_voters_decides() {
        let three = ids(&[1, 2, 3]);
        assert_eq!(judge(&m(&[(1, "a"), (2, "a"), (3, "a")]), &three), quorum("a", &[]));
        // All answering, one divergent (whoever leads: the leader is not asked).
        assert_eq!(judge(&m(&[(1, "a"), (2, "b"), (3, "a")]), &three), quorum("a", &[2]));
        assert_eq!(judge(&m(&[(1, "b"), (2, "a"), (3, "a")]), &three), quorum("a", &[1]));
        // One down, two agreeing: 2 of 3 voters is a majority.
        assert_eq!(judge(&m(&[(1, "a"), (3, "a")]), &three), quorum("a", &[]));
        assert_eq!(judge(&m(&[]), &three), UNDECIDED);
        assert_eq!(judge(&m(&[(1, "a"), (2, "b"), (3, "c")]), &three), TIE);
    }

    #[test]
    fn one_down_and_the_other_two_disagreeing_is_a_tie() {
        // The old rule let the leader's digest win here, quarantining the healthy follower.
        assert_eq!(judge(&m(&[(1, "bad"), (2, "good")]), &ids(&[1, 2, 3])), TIE);
    }

    #[test]
    fn five_voters_split_two_two_with_one_down_is_a_tie() {
        let five = ids(&[1, 2, 3, 4, 5]);
        assert_eq!(judge(&m(&[(1, "a"), (2, "a"), (3, "b"), (4, "b")]), &five), TIE);
        // Counted against the voters, not the answers: 2 of 3 answers is not 3 of 5 voters.
        assert_eq!(judge(&m(&[(1, "a"), (2, "a"), (3, "b")]), &five), TIE);
        // Too few answers but no disagreement: undecided, no alarm, no one judged.
        assert_eq!(judge(&m(&[(1, "a"), (2, "a")]), &five), UNDECIDED);
        assert_eq!(judge(&m(&[(1, "a"), (2, "a"), (3, "a"), (4, "b")]), &five), quorum("a", &[4]));
    }

    #[test]
    fn learners_do_not_vote_but_are_judged_against_the_voters_majority() {
        let three = ids(&[1, 2, 3]);
        // Learners 4 and 5 outnumber the voters' digest among the answers: they do not count.
        let d = m(&[(1, "a"), (2, "a"), (4, "b"), (5, "b")]);
        assert_eq!(judge(&d, &three), quorum("a", &[4, 5]));
        // Nor do they break a tie among the voters.
        let d = m(&[(1, "a"), (2, "b"), (4, "a"), (5, "a")]);
        assert_eq!(judge(&d, &three), TIE);
        // A learner differing from the voters' majority is judged (and so quarantined).
        let d = m(&[(1, "a"), (2, "a"), (3, "a"), (4, "x")]);
        assert_eq!(judge(&d, &three), quorum("a", &[4]));
        // Without a voters' majority a differing learner is only part of the alarm.
        assert_eq!(judge(&m(&[(1, "a"), (4, "x")]), &three), TIE);
        assert_eq!(judge(&m(&[(4, "x")]), &three), UNDECIDED);
    }
}
