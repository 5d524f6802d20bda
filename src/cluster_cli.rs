//! `idnode cluster …`: talks to a node's peer listener with the cluster secret.

use std::time::Duration;

use crate::cli::{ClientTlsArgs, ClusterCmd};

pub async fn run(action: ClusterCmd, endpoint: &str, tls: &ClientTlsArgs) -> anyhow::Result<()> {
    let secret = std::env::var("IDNODE_CLUSTER_SECRET").ok();
    let client = idnode_raft::AdminClient::new(endpoint, secret.as_deref(), tls.load()?.as_ref())?;
    let out = match action {
        ClusterCmd::Check { wait_secs } => {
            let report = client.check(Duration::from_secs(wait_secs)).await?;
            println!("{}", serde_json::to_string_pretty(&report)?);
            if report.tie {
                anyhow::bail!(
                    "at index {}, the members' digests disagree and none is held by a majority of the voters (a tie; \
                     families {:?}): nobody was quarantined, every member raised the alarm",
                    report.index,
                    report.disputed
                );
            }
            if !report.mismatched.is_empty() {
                anyhow::bail!("at index {}, the state of members {:?} differs", report.index, report.mismatched);
            }
            if !report.consistent() {
                let missing: Vec<u64> = report.members.iter().filter(|m| m.digest.is_none()).map(|m| m.id).collect();
                anyhow::bail!("at index {}, members {missing:?} gave no digest: the check is incomplete", report.index);
            }
            return Ok(());
        }
        ClusterCmd::Status => client.status().await?,
        ClusterCmd::AddLearner { id, peer_addr } => client.add_learner(id, &peer_addr).await?,
        ClusterCmd::Promote { id } => client.promote(id).await?,
        ClusterCmd::Remove { id } => client.remove(id).await?,
    };
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
