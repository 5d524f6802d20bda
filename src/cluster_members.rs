//! `idnode cluster status --all`: every member asked, one row each, as `etcdctl endpoint
//! status --cluster`. The cluster keeps only its members' peer addresses, so the members are
//! asked at the listed ops endpoints; a member the cluster knows that no endpoint answered for
//! gets a row saying so (with the one endpoint that did not answer, when only one did not),
//! and the command then exits "unreachable".

use std::collections::BTreeSet;

use futures::future::join_all;
use idnode_raft::MemberStatus;
use reqwest::Method;
use serde::Serialize;

use crate::exit;
use crate::ops_client::OpsClient;
use crate::output::{self, Format};

/// One member (or one endpoint that did not answer).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Row {
    pub id: Option<u64>,
    pub endpoint: Option<String>,
    pub reachable: bool,
    pub leader: bool,
    pub state: Option<String>,
    pub term: Option<u64>,
    pub applied: Option<u64>,
    /// The leader's commit index minus this member's applied index.
    pub lag: Option<u64>,
    /// The binary's release and the highest command version it applies.
    pub version: Option<String>,
    pub cluster_version: Option<u32>,
    pub quarantined: Vec<String>,
    pub error: Option<String>,
}

/// The rows from each endpoint's answer (the status, or why it gave none).
pub fn rows(answers: &[(String, Result<MemberStatus, String>)]) -> Vec<Row> {
    let statuses: Vec<(&String, &MemberStatus)> =
        answers.iter().filter_map(|(e, a)| a.as_ref().ok().map(|s| (e, s))).collect();
    let leader = statuses.iter().map(|(_, s)| s).find(|s| is_leader(s));
    // The leader's commit, else the highest any member knows.
    let commit = leader.map(|s| s.status.committed).or_else(|| statuses.iter().map(|(_, s)| s.status.committed).max());
    let mut rows: Vec<Row> = Vec::new();
    for (endpoint, s) in &statuses {
        if rows.iter().any(|r| r.id == Some(s.status.node_id)) {
            continue;
        }
        let applied = s.status.applied.unwrap_or(0);
        rows.push(Row {
            id: Some(s.status.node_id),
            endpoint: Some(endpoint.to_string()),
            reachable: true,
            leader: is_leader(s),
            state: Some(s.status.state.clone()),
            term: Some(s.status.term),
            applied: Some(applied),
            lag: commit.map(|c| c.saturating_sub(applied)),
            version: Some(format!("{} (commands v{})", s.node_version.binary, s.node_version.command_version)),
            cluster_version: Some(s.status.cluster_version),
            quarantined: s.quarantined.clone(),
            error: None,
        });
    }
    let known: BTreeSet<u64> = statuses
        .iter()
        .flat_map(|(_, s)| s.status.voters.iter().chain(s.status.learners.iter()).map(|m| m.id))
        .collect();
    let missing: Vec<u64> = known.into_iter().filter(|id| !rows.iter().any(|r| r.id == Some(*id))).collect();
    let silent: Vec<(&String, &String)> =
        answers.iter().filter_map(|(e, a)| a.as_ref().err().map(|why| (e, why))).collect();
    // One member missing and one endpoint silent: that endpoint is that member's.
    if let ([id], [(endpoint, why)]) = (&missing[..], &silent[..]) {
        let (endpoint, error) = (Some(endpoint.to_string()), Some(why.to_string()));
        rows.push(Row { id: Some(*id), endpoint, error, ..Row::default() });
    } else {
        for id in missing {
            let why = "no listed endpoint answered as this member".to_string();
            rows.push(Row { id: Some(id), error: Some(why), ..Row::default() });
        }
        for (endpoint, why) in silent {
            rows.push(Row { endpoint: Some(endpoint.clone()), error: Some(why.clone()), ..Row::default() });
        }
    }
    // By member id; endpoints that said no id last.
    rows.sort_by_key(|r| (r.id.is_none(), r.id));
    rows
}

fn is_leader(s: &MemberStatus) -> bool {
    s.status.state == "Leader" && s.status.leader_id == Some(s.status.node_id)
}

fn table(rows: &[Row]) -> comfy_table::Table {
    let header = [
        "id",
        "endpoint",
        "is leader",
        "state",
        "term",
        "applied",
        "lag",
        "version",
        "cluster version",
        "quarantined",
        "error",
    ];
    let mut t = output::table(&header);
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".to_string());
    for r in rows {
        t.add_row([
            opt(r.id.map(|v| v.to_string())),
            opt(r.endpoint.clone()),
            r.leader.to_string(),
            opt(r.state.clone()),
            opt(r.term.map(|v| v.to_string())),
            opt(r.applied.map(|v| v.to_string())),
            opt(r.lag.map(|v| v.to_string())),
            opt(r.version.clone()),
            opt(r.cluster_version.map(|v| v.to_string())),
            if r.quarantined.is_empty() { "none".to_string() } else { r.quarantined.join(",") },
            opt(r.error.clone().map(|e| if r.reachable { e } else { format!("unreachable: {e}") })),
        ]);
    }
    t
}

/// Asks every endpoint at once, prints a row per member, and fails "unreachable" (exit 3)
/// when a member or endpoint did not answer ("refused", exit 4, when every one that failed
/// answered with a refusal, e.g. a wrong secret).
pub async fn status_all(ops: &OpsClient, format: Format) -> anyhow::Result<()> {
    let asks = ops.endpoints.iter().map(|endpoint| async move {
        let answer = ops.call_at(endpoint, Method::GET, idnode_raft::OPS_STATUS, None).await;
        let status = answer.and_then(|a| {
            serde_json::from_value::<MemberStatus>(a).map_err(|e| anyhow::anyhow!("not a member status: {e}"))
        });
        (endpoint.clone(), status)
    });
    let answers = join_all(asks).await;
    let refusals = answers.iter().filter(|(_, a)| a.as_ref().is_err_and(|e| exit::code_of(e) == exit::FAILED)).count();
    // The endpoint has its own column: the deepest cause says why (e.g. connection refused).
    let answers: Vec<(String, Result<MemberStatus, String>)> =
        answers.into_iter().map(|(e, a)| (e, a.map_err(|e| e.root_cause().to_string()))).collect();
    let rows = rows(&answers);
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&rows)?),
        Format::Table => println!("{}", table(&rows)),
    }
    let failed: Vec<String> = rows
        .iter()
        .filter(|r| !r.reachable)
        .map(|r| r.id.map_or_else(|| r.endpoint.clone().unwrap_or_default(), |id| format!("member {id}")))
        .collect();
    match failed.len() {
        0 => Ok(()),
        n if n == refusals => Err(exit::refused(format!("refused: {}", failed.join(", ")))),
        _ => Err(exit::unreachable(format!("did not answer: {}", failed.join(", ")))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn member(id: u64, leader: u64, term: u64, committed: u64, applied: u64) -> MemberStatus {
        let voters: Vec<_> = (1..=3).map(|m| json!({"id": m, "addr": format!("10.0.0.{m}:5099")})).collect();
        serde_json::from_value(json!({
            "node_id": id, "state": if id == leader { "Leader" } else { "Follower" }, "term": term,
            "leader_id": leader, "voters": voters, "learners": [], "last_log_index": committed,
            "committed": committed, "applied": applied, "snapshot_index": null, "purged_index": null,
            "millis_since_quorum_ack": null, "replication": [], "fatal": null, "cluster_version": 2,
            "versions": [], "node_version": {"binary": "1.2.3", "command_version": 2},
            "quarantined": if id == 3 { vec!["identity"] } else { vec![] }, "not_ready": [],
        }))
        .expect("a member status")
    }

    fn ep(i: u64) -> String {
        format!("http://10.0.0.{i}:8099")
    }

    #[test]
    fn a_row_per_member_with_the_lag_behind_the_leaders_commit() {
        let answers: Vec<_> =
            [(3, member(3, 2, 7, 90, 85)), (1, member(1, 2, 7, 95, 95)), (2, member(2, 2, 7, 100, 99))]
                .into_iter()
                .map(|(i, s)| (ep(i), Ok(s)))
                .collect();
        let got = rows(&answers);
        let ids: Vec<_> = got.iter().map(|r| r.id).collect();
        assert_eq!(ids, [Some(1), Some(2), Some(3)]);
        assert_eq!(got.iter().map(|r| r.lag).collect::<Vec<_>>(), [Some(5), Some(1), Some(15)]);
        assert_eq!(got.iter().filter(|r| r.leader).count(), 1);
        assert!(got[1].leader && got.iter().all(|r| r.reachable && r.term == Some(7)));
        assert_eq!(got[2].quarantined, ["identity"]);
        assert_eq!(got[0].version.as_deref(), Some("1.2.3 (commands v2)"));
        assert!(table(&got).to_string().lines().any(|l| l.starts_with("| 2 ") && l.contains("| true ")));
    }

    #[test]
    fn a_silent_member_gets_a_row_that_says_so() {
        // One member missing, one endpoint silent: that endpoint is the member's.
        let answers = vec![
            (ep(1), Ok(member(1, 1, 4, 10, 10))),
            (ep(2), Err("connection refused".to_string())),
            (ep(3), Ok(member(3, 1, 4, 10, 10))),
        ];
        let paired = rows(&answers);
        assert_eq!(paired.iter().map(|r| r.id).collect::<Vec<_>>(), [Some(1), Some(2), Some(3)]);
        let dead = &paired[1];
        assert_eq!((dead.endpoint.clone(), dead.reachable), (Some(ep(2)), false));
        assert!(table(&paired).to_string().contains("unreachable: connection refused"));

        // Two silent endpoints, one missing member: neither is guessed.
        let mut answers = answers;
        answers.push(("http://10.0.0.9:8099".to_string(), Err("timed out".to_string())));
        let unpaired = rows(&answers);
        assert_eq!(unpaired.len(), 5);
        assert!(unpaired.iter().any(|r| r.id == Some(2) && r.endpoint.is_none() && !r.reachable));
        assert_eq!(unpaired.iter().filter(|r| r.id.is_none() && !r.reachable).count(), 2);
        assert!(unpaired[3].id.is_none() && unpaired[4].id.is_none(), "endpoints without an id last");
    }
}
