//! Re-sealing after a data-key rotation: every stored value sealed under an older epoch is
//! opened and sealed again under the current one, a bounded step at a time, so the node keeps
//! serving and the rate can be limited. A step holds the engine's write lock from its reads to
//! its write: no write can land in between, so a re-sealed copy never replaces a newer value
//! or brings back a deleted one. Steps are idempotent, so a pass cut short (SIGKILL) is just
//! started again.

use rocksdb::{Direction, IteratorMode, WriteBatch};

use crate::codec::value_ad;
use crate::{Engine, Result, StorageError};

/// What one step did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResealStep {
    /// Where the next step of this column family starts (`None`: the column family is done).
    pub next: Option<Vec<u8>>,
    pub scanned: u64,
    pub resealed: u64,
}

impl Engine {
    /// Re-seals up to `limit` values of `cf` from `from` on (inclusive).
    pub fn reseal_step(&self, cf: &str, from: &[u8], limit: usize) -> Result<ResealStep> {
        let handle = self.cf(cf)?;
        let current = self.keys().current_epoch();
        let _turn = self.write_lock.lock().unwrap_or_else(|p| p.into_inner());
        let mut wb = WriteBatch::default();
        let mut step = ResealStep::default();
        for item in self.db.iterator_cf(&handle, IteratorMode::From(from, Direction::Forward)) {
            let (key, sealed) = item?;
            if step.scanned as usize == limit {
                step.next = Some(key.to_vec());
                break;
            }
            step.scanned += 1;
            if idnode_keys::DataKeys::epoch_of(&sealed) == Some(current) {
                continue;
            }
            let ad = value_ad(cf, &key);
            let plain =
                self.keys().open(&ad, &sealed).map_err(|source| StorageError::Unseal { cf: cf.to_string(), source })?;
            wb.put_cf(&handle, &key, self.keys().seal(&ad, &plain));
            step.resealed += 1;
        }
        if step.resealed > 0 {
            self.write_unlocked(wb, false)?;
        }
        Ok(step)
    }
}
