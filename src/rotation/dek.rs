//! The node's own key material at run time: its KEK (kept to re-wrap the key ring when a data
//! key is added or retired, or when the operator re-keys), and the background re-sealer that
//! moves every stored value to the current data key after a rotation.
//!
//! Interrupting any of it is safe: the key ring is replaced atomically (write, fsync, rename),
//! a rotation is one such write, and re-sealing steps are idempotent; on start a node whose
//! ring holds more than one epoch simply resumes re-sealing from the beginning. Old epochs are
//! forgotten only after a whole pass found nothing left to re-seal and the audit spool (sealed
//! under the data key too) is empty.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context};
use idnode_keys::{DataKeys, Kek};
use idnode_storage::Engine;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde::Serialize;

/// Values read per re-sealing step (one engine write lock hold).
const STEP: usize = 256;
/// How long the re-sealer sleeps when there is nothing to do (a rotation wakes it at once).
const IDLE: Duration = Duration::from_secs(30);

/// Re-sealing progress, exported as metrics (`idnode_keys_reseal_*`).
#[derive(Default)]
pub struct ResealMetrics {
    pub scanned: Counter,
    pub resealed: Counter,
    pub passes: Counter,
    /// Values scanned in the current pass.
    pub pass_scanned: Gauge,
    /// 1 while the ring holds epochs older than the current one.
    pub in_progress: Gauge,
}

impl ResealMetrics {
    fn register(&self, registry: &mut Registry) {
        registry.register("idnode_keys_reseal_scanned", "Values read by the re-sealer", self.scanned.clone());
        registry.register(
            "idnode_keys_resealed",
            "Values re-sealed under the current data key after a rotation",
            self.resealed.clone(),
        );
        registry.register("idnode_keys_reseal_passes", "Completed re-sealing passes", self.passes.clone());
        registry.register(
            "idnode_keys_reseal_pass_scanned",
            "Values read so far in the current re-sealing pass",
            self.pass_scanned.clone(),
        );
        registry.register(
            "idnode_keys_reseal_in_progress",
            "1 while values may still be sealed under an older data key",
            self.in_progress.clone(),
        );
    }
}

/// What `GET /keys` says about the data keys.
#[derive(Debug, Serialize)]
pub struct DataKeyStatus {
    pub current_epoch: u32,
    pub epochs: Vec<u32>,
    pub resealing: bool,
    pub resealed: u64,
    pub passes: u64,
    pub pass_scanned: i64,
}

pub struct NodeKeys {
    kek: Mutex<Kek>,
    ring: PathBuf,
    keys: Arc<DataKeys>,
    /// Values re-sealed per second at most (`[keys] reseal_rate`).
    rate: u64,
    pub metrics: ResealMetrics,
    wake: tokio::sync::Notify,
}

impl NodeKeys {
    pub fn new(kek: Kek, ring: PathBuf, keys: Arc<DataKeys>, rate: u64, registry: &mut Registry) -> Arc<Self> {
        let metrics = ResealMetrics::default();
        metrics.register(registry);
        Arc::new(NodeKeys { kek: Mutex::new(kek), ring, keys, rate, metrics, wake: tokio::sync::Notify::new() })
    }

    pub fn status(&self) -> DataKeyStatus {
        DataKeyStatus {
            current_epoch: self.keys.current_epoch(),
            epochs: self.keys.epochs(),
            resealing: self.keys.epochs().len() > 1,
            resealed: self.metrics.resealed.get(),
            passes: self.metrics.passes.get(),
            pass_scanned: self.metrics.pass_scanned.get(),
        }
    }

    /// Adds a data-key epoch (new writes use it at once) and wakes the re-sealer.
    pub fn rotate(&self) -> anyhow::Result<u32> {
        let kek = self.kek.lock().unwrap_or_else(|p| p.into_inner());
        let epoch = self.keys.rotate(&kek, &self.ring).context("saving the key ring")?;
        drop(kek);
        self.metrics.in_progress.set(1);
        self.wake.notify_one();
        tracing::info!(epoch, "data key rotated; re-sealing the stored values in the background");
        Ok(epoch)
    }

    /// Re-wraps the key ring under the KEK in `file` (read here, on the node: the key never
    /// travels). From then on the node must be started with that KEK.
    pub fn rekey(&self, file: &Path, data_dir: &Path) -> anyhow::Result<()> {
        let real = |p: &Path| p.canonicalize().with_context(|| format!("resolving {}", p.display()));
        if real(file)?.starts_with(real(data_dir)?) {
            bail!("the new key-encryption key file is inside the data directory; keep it apart from the data");
        }
        let (new, _) = Kek::load(None, file, false).context("reading the new key-encryption key")?;
        let mut kek = self.kek.lock().unwrap_or_else(|p| p.into_inner());
        self.keys.save(&new, &self.ring).context("re-wrapping the key ring")?;
        *kek = new;
        tracing::warn!(
            "the key ring is now wrapped by the key-encryption key in {}: start this node with it from now on",
            file.display()
        );
        Ok(())
    }

    /// One pass over every column family. Returns the values re-sealed.
    async fn pass(&self, engine: &Arc<Engine>) -> anyhow::Result<u64> {
        self.metrics.pass_scanned.set(0);
        let mut resealed = 0;
        for cf in engine.column_families().to_vec() {
            let mut from: Vec<u8> = Vec::new();
            loop {
                let (e, start) = (engine.clone(), std::mem::take(&mut from));
                let step = tokio::task::spawn_blocking(move || e.reseal_step(cf, &start, STEP)).await??;
                self.metrics.scanned.inc_by(step.scanned);
                self.metrics.resealed.inc_by(step.resealed);
                self.metrics.pass_scanned.inc_by(step.scanned as i64);
                resealed += step.resealed;
                if step.resealed > 0 && self.rate > 0 {
                    tokio::time::sleep(Duration::from_secs_f64(step.resealed as f64 / self.rate as f64)).await;
                }
                match step.next {
                    Some(next) => from = next,
                    None => break,
                }
            }
        }
        self.metrics.passes.inc();
        Ok(resealed)
    }

    /// The re-sealer: passes while old epochs are held, then forgets them.
    pub fn spawn(self: &Arc<Self>, engine: Arc<Engine>, spool_bytes: Gauge) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                if me.keys.epochs().len() <= 1 {
                    me.metrics.in_progress.set(0);
                    let _ = tokio::time::timeout(IDLE, me.wake.notified()).await;
                    continue;
                }
                me.metrics.in_progress.set(1);
                match me.pass(&engine).await {
                    Ok(0) if spool_bytes.get() == 0 => {
                        let kek = me.kek.lock().unwrap_or_else(|p| p.into_inner());
                        let forgotten = engine
                            .sync()
                            .map_err(anyhow::Error::from)
                            .and_then(|()| me.keys.retire_old(&kek, &me.ring).map_err(anyhow::Error::from));
                        match forgotten {
                            Ok(epochs) => tracing::info!(?epochs, "re-sealing done; old data keys forgotten"),
                            Err(e) => tracing::warn!(error = %e, "could not forget the old data keys"),
                        }
                    }
                    // The audit spool still holds events sealed under an old key: wait for it.
                    Ok(0) => tokio::time::sleep(IDLE).await,
                    Ok(n) => tracing::info!(resealed = n, "re-sealing pass done; another pass follows"),
                    Err(e) => {
                        tracing::warn!(error = %e, "re-sealing pass failed; retrying");
                        tokio::time::sleep(IDLE).await;
                    }
                }
            }
        })
    }
}
