//! The node's data directory as storage: its key ring under the KEK and its engine with every
//! column family. Shared by startup and `idnode restore`, which seeds a directory the same way
//! a node later opens it.

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context};
use idnode_keys::{DataKeys, Kek, KekSource};
use idnode_storage::Engine;

use crate::config::Config;
use crate::state::cf::STATE_CFS;

/// Where a restore marks a directory until the state is complete: a node refuses to start
/// on a directory holding it.
pub const RESTORING: &str = "RESTORING";

/// Opens the node's key ring (under its KEK) and its storage engine with every column family;
/// returns the KEK too (kept to re-wrap the ring on rotations).
pub(crate) fn open_engine(cfg: &Config) -> anyhow::Result<(Arc<Engine>, Kek)> {
    std::fs::create_dir_all(&cfg.data_dir).with_context(|| format!("creating {}", cfg.data_dir.display()))?;
    let (kek, source) = crate::kek::load(cfg)?;
    if let KekSource::Generated(path) = &source {
        tracing::warn!(
            "generated a new key-encryption key at {}: anyone with this file and the data directory can read the data; \
             for production supply IDNODE_KEK or kek_file from a secret store and keep it apart from the data",
            path.display()
        );
    }
    let keys = Arc::new(DataKeys::open_or_create(&kek, &cfg.data_dir.join("keyring"))?);
    let cfs: Vec<&'static str> = idnode_raft::COLUMN_FAMILIES.iter().chain(STATE_CFS).copied().collect();
    let budget = cfg.raft_storage_memory_mb.saturating_mul(1 << 20);
    Ok((Arc::new(Engine::open_within(&cfg.data_dir.join("db"), &cfs, keys, budget)?), kek))
}

/// Refuses a data directory a restore did not finish.
pub fn refuse_unfinished_restore(data_dir: &Path) -> anyhow::Result<()> {
    if data_dir.join(RESTORING).exists() {
        bail!(
            "a restore into {} did not finish: delete the directory and run `idnode restore` again",
            data_dir.display()
        );
    }
    Ok(())
}
