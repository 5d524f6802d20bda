//! openraft's storage conformance suite on our log store and state machine.

use std::sync::Arc;

use idnode_raft::storage::keys::DataKeys;
use idnode_raft::storage::Engine;
use idnode_raft::{LogStore, SmLinks, StateMachine, TypeConfig};
use openraft::testing::{StoreBuilder, Suite};
use openraft::StorageError;

use crate::app::{all_cfs, KvApp};

struct Builder;

impl StoreBuilder<TypeConfig, LogStore, StateMachine, tempfile::TempDir> for Builder {
    async fn build(&self) -> Result<(tempfile::TempDir, LogStore, StateMachine), StorageError<u64>> {
        let dir = tempfile::tempdir().unwrap();
        let engine = Arc::new(Engine::open(dir.path(), &all_cfs(), Arc::new(DataKeys::ephemeral())).unwrap());
        let sm = StateMachine::new(engine.clone(), Arc::new(KvApp::default()), SmLinks::new(Some("conformance")))?;
        Ok((dir, LogStore::new(engine), sm))
    }
}

#[test]
fn storage_conformance_suite() {
    Suite::test_all(Builder).unwrap();
}
