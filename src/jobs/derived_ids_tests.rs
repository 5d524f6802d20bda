//! The migration on a real in-process cluster: run by the leader to its end, the same on
//! every member, and a user of the old derivation is found afterwards on each of them.

use crate::state::derived_ids::{progress, resolve_derived_user};
use crate::state::shadow::ShadowCommand;
use crate::state::{cf, Command};
use crate::testkit::cluster::TestCluster;
use crate::testkit::fixtures::legacy_login;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_leader_migrates_and_every_member_ends_identical() {
    let c = TestCluster::start(3, &[]).await;
    let leader = c.wait_leader().await;
    let node = c.node(leader);
    let mut ids = Vec::new();
    for s in ["alice", "bob", "carol"] {
        let u = legacy_login("default", "idp1", s);
        ids.push(u.id.clone());
        node.propose(Command::Shadow(ShadowCommand::LocalLogin { user: Box::new(u), groups: vec![] })).await.unwrap();
    }
    let batches = super::migrate_pass(node).await.unwrap();
    assert!(batches >= 1);
    assert_eq!(super::migrate_pass(node).await.unwrap(), 0, "a second pass finds it done");
    c.wait_converged().await;
    let scim = |i: usize| c.node(i).engine.read().scan_range(cf::SCIM, b"", None, usize::MAX).unwrap();
    for i in 0..c.len() {
        let view = c.node(i).engine.read();
        assert!(progress(&view).unwrap().done, "node {}", i + 1);
        for (s, id) in ["alice", "bob", "carol"].iter().zip(&ids) {
            assert_eq!(&resolve_derived_user(&view, "default", "idp1", s).unwrap(), id, "node {}", i + 1);
            assert_ne!(&resolve_derived_user(&view, "default", "idp2", s).unwrap(), id, "node {}", i + 1);
        }
        assert_eq!(scim(i), scim(leader), "node {} differs from the leader", i + 1);
    }
}
