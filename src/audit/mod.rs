//! The audit pipeline (spec, Events; `docs/audit.md`): CADF-shaped events from request
//! handlers and background jobs to an append-only JSON-lines file.
//!
//! `Audit::emit` never blocks and never awaits: it counts the event and offers it to a bounded
//! in-memory queue (`[audit] queue_capacity`). One writer thread (`pipeline.rs`)
//! appends queued events to `[audit] file` (`sink.rs`), and when that file is slow or failing
//! it sends them to a sealed on-disk spool (`spool.rs`, `[audit] spool_dir`) that it drains
//! back, oldest first, once the file takes writes again. Events are lost only when the queue is
//! full, or the spool is, and each loss is counted in `idnode_audit_dropped{reason}`.

pub mod event;
pub mod metrics;
mod pipeline;
mod sink;
mod spool;
#[cfg(test)]
mod tests;

use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use idnode_keys::DataKeys;

pub use event::Event;
use event::Resource;
pub use metrics::AuditMetrics;
use pipeline::{Msg, Writer};

use crate::config::AuditSettings;

/// What the pipeline needs from the node.
pub struct AuditConfig {
    pub settings: AuditSettings,
    /// Named in every event's `observer`.
    pub node_id: u64,
    /// Seal spooled events like every other value in the data directory.
    pub keys: Arc<DataKeys>,
    /// Longest wait between two attempts at a failing sink.
    pub retry_max: Duration,
}

/// Longest wait between two attempts at a failing sink, in production.
pub const RETRY_MAX: Duration = Duration::from_secs(5);

/// The node's handle on the pipeline; cheap to clone.
#[derive(Clone)]
pub struct Audit {
    inner: Arc<Inner>,
}

struct Inner {
    /// None when the operator turned the sink off: the pipeline is off.
    tx: Option<SyncSender<Msg>>,
    metrics: AuditMetrics,
    counters: metrics::EmitCounters,
    /// The writer thread, joined by tests that restart the pipeline on the same spool.
    #[cfg(test)]
    writer: Option<std::thread::JoinHandle<()>>,
}

impl Audit {
    /// Starts the writer thread (unless `[audit] file = off`). Fails only when the spool
    /// directory cannot be opened: an unusable sink is not fatal (events spool until it works),
    /// but without a spool there would be nowhere to keep them.
    pub fn start(cfg: AuditConfig) -> anyhow::Result<Audit> {
        let metrics = AuditMetrics::default();
        let observer = Resource::node(cfg.node_id);
        let capacity = cfg.settings.queue_capacity;
        metrics.queue_capacity.set(capacity as i64);
        metrics.spool_capacity.set(i64::try_from(cfg.settings.spool_max_bytes).unwrap_or(i64::MAX));
        let Some(file) = cfg.settings.file.clone() else {
            tracing::warn!("[audit] file = off: audit events are counted (idnode_audit_dropped) and discarded");
            return Ok(Audit {
                inner: Arc::new(Inner {
                    tx: None,
                    counters: metrics.emit_counters(),
                    metrics,
                    #[cfg(test)]
                    writer: None,
                }),
            });
        };
        let spool = spool::Spool::open(&cfg.settings.spool_dir, cfg.keys, cfg.settings.spool_max_bytes)
            .with_context(|| format!("opening the audit spool {}", cfg.settings.spool_dir.display()))?;
        metrics.spool_bytes.set(spool.bytes() as i64);
        metrics.key_version.set(i64::from(spool.key_version()));
        if !spool.is_empty() {
            tracing::info!("audit spool holds {} bytes from before; delivering them first", spool.bytes());
        }
        let rotation = sink::Rotation { max_bytes: cfg.settings.max_file_bytes, retain: cfg.settings.retain_files };
        let mut sink = sink::FileSink::new(&file, rotation);
        let sink_ok = match sink.probe() {
            Ok(()) => true,
            Err(e) => {
                tracing::error!("audit sink {} cannot be opened, spooling until it can: {e}", file.display());
                metrics.sink_errors.inc();
                false
            }
        };
        let (tx, rx) = sync_channel(capacity);
        let writer = Writer {
            rx,
            sink,
            spool,
            metrics: metrics.clone(),
            observer,
            capacity,
            flush_interval: Duration::from_millis(cfg.settings.flush_interval_ms),
            retry_max: cfg.retry_max,
            sink_ok,
            retry_at: None,
            backoff: pipeline::RETRY_MIN,
        };
        let _handle = std::thread::Builder::new()
            .name("idnode-audit".into())
            .spawn(move || writer.run())
            .context("starting the audit writer thread")?;
        Ok(Audit {
            inner: Arc::new(Inner {
                tx: Some(tx),
                counters: metrics.emit_counters(),
                metrics,
                #[cfg(test)]
                writer: Some(_handle),
            }),
        })
    }

    /// Queues an event for the sink. Never blocks, never awaits, never fails the caller: an
    /// event that finds no room is counted as dropped, because an audit outage must not
    /// become an identity-service outage.
    pub fn emit(&self, event: Event) {
        let c = &self.inner.counters;
        c.event(event.action, event.outcome);
        let Some(tx) = &self.inner.tx else {
            c.disabled.inc();
            return;
        };
        // Counted before the send so the writer's decrement can never come first.
        c.queue_depth.inc();
        match tx.try_send(Msg::Event(Box::new(event))) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                c.queue_depth.dec();
                c.queue_full.inc();
            }
            Err(TrySendError::Disconnected(_)) => {
                c.queue_depth.dec();
                c.stopped.inc();
            }
        }
    }

    /// Waits (at most `timeout`) until every event emitted before the call is synced to the
    /// sink or the spool; false if that did not happen in time. For shutdown and tests.
    pub async fn flush(&self, timeout: Duration) -> bool {
        let Some(tx) = &self.inner.tx else { return true };
        let deadline = tokio::time::Instant::now() + timeout;
        let (ack, done) = tokio::sync::oneshot::channel();
        let mut msg = Msg::Flush(ack);
        loop {
            match tx.try_send(msg) {
                Ok(()) => break,
                Err(TrySendError::Full(m)) if tokio::time::Instant::now() < deadline => {
                    msg = m;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Err(_) => return false,
            }
        }
        matches!(tokio::time::timeout_at(deadline, done).await, Ok(Ok(())))
    }

    /// Closes the queue and waits for the writer to sync and exit (a node stopping).
    #[cfg(test)]
    pub fn stop(self) {
        let Ok(mut inner) = Arc::try_unwrap(self.inner) else { panic!("other handles are alive") };
        inner.tx = None;
        if let Some(w) = inner.writer.take() {
            w.join().expect("audit writer panicked");
        }
    }

    pub fn metrics(&self) -> &AuditMetrics {
        &self.inner.metrics
    }
}
