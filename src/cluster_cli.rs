//! `idnode cluster …`: through nodes' ops listeners (`--endpoints`) with the cluster secret.
//! A bare `HOST:PORT` endpoint (the old form) still goes to that node's peer listener.

use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};

use crate::cli::{ClientTlsArgs, ClusterCmd};
use crate::exit;
use crate::ops_client::OpsClient;
use crate::output::{self, Format};
use idnode_raft::{AdminRequest, ConsistencyReport};

pub async fn run(
    action: ClusterCmd,
    endpoints: &[String],
    tls: &ClientTlsArgs,
    format: Option<Format>,
) -> anyhow::Result<()> {
    if endpoints.first().is_some_and(|e| !e.contains("://")) {
        return through_peer(action, &endpoints[0], tls, format.unwrap_or(Format::Json)).await;
    }
    let timeout = match &action {
        ClusterCmd::Check { wait_secs } => Duration::from_secs(wait_secs + 15),
        ClusterCmd::MoveLeader { timeout_secs, .. } => Duration::from_secs(timeout_secs + 5),
        // A member's status asks the others for their versions (1 s each, at once).
        ClusterCmd::Status { .. } => Duration::from_secs(10),
        _ => Duration::from_secs(40),
    };
    let ops = OpsClient::new(endpoints, tls, timeout)?;
    let answer = match action {
        ClusterCmd::Status { all: true } => {
            return crate::cluster_members::status_all(&ops, format.unwrap_or(Format::Table)).await
        }
        ClusterCmd::Status { all: false } => ops.call_any(Method::GET, idnode_raft::OPS_STATUS, None).await?,
        ClusterCmd::Check { wait_secs } => {
            let body = json!({"wait_ms": wait_secs * 1000});
            let report = ops.call_any(Method::POST, idnode_raft::OPS_CHECK, Some(&body)).await?;
            output::print(format.unwrap_or(Format::Json), &report)?;
            return verdict(&serde_json::from_value(report)?);
        }
        ClusterCmd::MoveLeader { id, timeout_secs } => {
            let body = json!({"to": id, "timeout_ms": timeout_secs * 1000});
            let moved = ops.call_any(Method::POST, idnode_raft::OPS_MOVE_LEADER, Some(&body)).await?;
            let summary = json!({"leader": moved["leader_id"], "term": moved["term"], "voters": moved["voters"]});
            return output::print(format.unwrap_or(Format::Table), &summary);
        }
        ClusterCmd::AddLearner { id, peer_addr } => {
            membership(&ops, AdminRequest::AddLearner { id, addr: peer_addr }).await?
        }
        ClusterCmd::Promote { id } => membership(&ops, AdminRequest::Promote { id }).await?,
        ClusterCmd::Remove { id } => membership(&ops, AdminRequest::Remove { id }).await?,
    };
    output::print(format.unwrap_or(Format::Json), &answer)
}

/// A membership change through the first node that answers (it forwards to the leader);
/// the membership as it then stands.
async fn membership(ops: &OpsClient, req: AdminRequest) -> anyhow::Result<Value> {
    let body = serde_json::to_value(req)?;
    ops.call_any(Method::POST, idnode_raft::OPS_MEMBERSHIP, Some(&body)).await
}

/// A check's report as an outcome: refused (exit 4) unless every member answered the same.
fn verdict(report: &ConsistencyReport) -> anyhow::Result<()> {
    if report.tie {
        return Err(exit::refused(format!(
            "at index {}, the members' digests disagree and none is held by a majority of the voters (a tie; \
             families {:?}): nobody was quarantined, every member raised the alarm",
            report.index, report.disputed
        )));
    }
    if !report.mismatched.is_empty() {
        return Err(exit::refused(format!(
            "at index {}, the state of members {:?} differs",
            report.index, report.mismatched
        )));
    }
    if !report.consistent() {
        let missing: Vec<u64> = report.members.iter().filter(|m| m.digest.is_none()).map(|m| m.id).collect();
        return Err(exit::refused(format!(
            "at index {}, members {missing:?} gave no digest: the check is incomplete",
            report.index
        )));
    }
    Ok(())
}

/// The old path: one node's peer listener (`HOST:PORT`), peer TLS from `tls`.
async fn through_peer(action: ClusterCmd, endpoint: &str, tls: &ClientTlsArgs, format: Format) -> anyhow::Result<()> {
    let secret = std::env::var("IDNODE_CLUSTER_SECRET").ok();
    let client = idnode_raft::AdminClient::new(endpoint, secret.as_deref(), tls.load()?.as_ref())?;
    let out = match action {
        ClusterCmd::Check { wait_secs } => {
            let report = client.check(Duration::from_secs(wait_secs)).await?;
            output::print(format, &serde_json::to_value(&report)?)?;
            return verdict(&report);
        }
        ClusterCmd::Status { all: false } => client.status().await?,
        ClusterCmd::AddLearner { id, peer_addr } => client.add_learner(id, &peer_addr).await?,
        ClusterCmd::Promote { id } => client.promote(id).await?,
        ClusterCmd::Remove { id } => client.remove(id).await?,
        ClusterCmd::Status { all: true } | ClusterCmd::MoveLeader { .. } => {
            anyhow::bail!(
                "`status --all` and `move-leader` go through ops listeners: give --endpoints http://HOST:PORT"
            )
        }
    };
    output::print(format, &serde_json::to_value(&out)?)
}
