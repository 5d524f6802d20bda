//! A member of a multi-node cluster is never given a key-encryption key generated inside its
//! data directory: started without one, every node of a three-node cluster refuses to start
//! and says how to supply it.

use std::time::{Duration, Instant};

use crate::support::{Cluster, POLL};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_members_without_a_kek_refuse_to_start() {
    // The harness gives every node IDNODE_KEK; an empty value counts as none.
    let mut cluster = Cluster::spawn_with_env(3, &[("IDNODE_KEK", "")]);
    let deadline = Instant::now() + Duration::from_secs(60);
    for i in 0..cluster.len() {
        while cluster.nodes[i].is_running() {
            assert!(Instant::now() < deadline, "node {} is still running without a KEK", i + 1);
            tokio::time::sleep(POLL).await;
        }
        let node = &cluster.nodes[i];
        let log = std::fs::read_to_string(&node.log_path).expect("node log");
        assert!(log.contains("no key-encryption key") && log.contains("IDNODE_KEK"), "node {}: {log}", node.id);
        assert!(!node.data_dir.join("kek.key").exists(), "node {} generated a key in its data dir", node.id);
    }
}
