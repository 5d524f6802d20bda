//! `idnode cluster …`: talks to a node's peer listener with the cluster secret.

use crate::cli::ClusterCmd;

pub async fn run(action: ClusterCmd, endpoint: &str) -> anyhow::Result<()> {
    let secret = std::env::var("IDNODE_CLUSTER_SECRET").ok();
    let client = idnode_raft::AdminClient::new(endpoint, secret.as_deref())?;
    let out = match action {
        ClusterCmd::Status => client.status().await?,
        ClusterCmd::AddLearner { id, peer_addr } => client.add_learner(id, &peer_addr).await?,
        ClusterCmd::Promote { id } => client.promote(id).await?,
        ClusterCmd::Remove { id } => client.remove(id).await?,
    };
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
