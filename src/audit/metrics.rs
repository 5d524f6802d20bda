//! The audit series (spec, Endpoints: "audit (event, drop, queue depth, spool, sink, key
//! version)" and "audit spool size/drops/queue depth/capacity"). The spec names the families,
//! not the series, so they follow the node's `idnode_<subsystem>_<what>` style.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::event::{Action, Outcome};
use crate::http::metrics::{labels, Labels};

/// See [`AuditMetrics::emit_counters`].
pub struct EmitCounters {
    /// By `Action::ALL` index * `Outcome::ALL.len()` + `Outcome::ALL` index.
    events: Vec<Counter>,
    pub disabled: Counter,
    pub queue_full: Counter,
    pub stopped: Counter,
    pub queue_depth: Gauge,
}

impl EmitCounters {
    pub fn event(&self, action: Action, outcome: Outcome) {
        let a = Action::ALL.iter().position(|x| *x == action).unwrap_or(0);
        let o = Outcome::ALL.iter().position(|x| *x == outcome).unwrap_or(0);
        if let Some(c) = self.events.get(a * Outcome::ALL.len() + o) {
            c.inc();
        }
    }
}

#[derive(Clone, Default)]
pub struct AuditMetrics {
    /// Every `emit`, by `action` and `outcome`, kept or not.
    pub events: Family<Labels, Counter>,
    /// Events lost, by `reason`: `disabled`, `queue_full`, `spool_full`, `spool_error`,
    /// `spool_corrupt`, `encode`, `stopped`.
    pub dropped: Family<Labels, Counter>,
    /// Events appended to the sink.
    pub written: Counter,
    /// Events waiting in memory for the writer.
    pub queue_depth: Gauge,
    pub queue_capacity: Gauge,
    /// `[audit] spool_max_bytes`, so an alert can compare the spool with it.
    pub spool_capacity: Gauge,
    /// Bytes of spool segments on disk.
    pub spool_bytes: Gauge,
    /// Failed writes or syncs of the sink file.
    pub sink_errors: Counter,
    /// 1 while the last sink write succeeded, 0 while failing or when no sink is configured.
    pub sink_up: Gauge,
    /// The data-key epoch that seals spooled events (see `spool.rs`).
    pub key_version: Gauge,
}

impl AuditMetrics {
    pub fn register(&self, registry: &mut Registry) {
        registry.register("idnode_audit_events", "Audit events emitted, by action and outcome", self.events.clone());
        registry.register("idnode_audit_dropped", "Audit events lost, by reason", self.dropped.clone());
        registry.register("idnode_audit_written", "Audit events appended to the sink", self.written.clone());
        registry.register("idnode_audit_queue_depth", "Audit events queued in memory", self.queue_depth.clone());
        registry.register(
            "idnode_audit_queue_capacity",
            "Audit events the in-memory queue holds at most",
            self.queue_capacity.clone(),
        );
        registry.register(
            "idnode_audit_spool_bytes",
            "Bytes of audit events spooled on disk",
            self.spool_bytes.clone(),
        );
        registry.register(
            "idnode_audit_spool_capacity_bytes",
            "Bytes the audit spool may hold on disk before events are dropped",
            self.spool_capacity.clone(),
        );
        registry.register("idnode_audit_sink_errors", "Failed writes to the audit sink", self.sink_errors.clone());
        registry.register("idnode_audit_sink_up", "1 while the audit sink accepts writes", self.sink_up.clone());
        registry.register(
            "idnode_audit_key_version",
            "Data-key epoch sealing spooled audit events",
            self.key_version.clone(),
        );
    }

    /// The counters `emit` touches, resolved once: a family lookup hashes and allocates its
    /// labels, and `emit` sits on request paths.
    pub fn emit_counters(&self) -> EmitCounters {
        let mut events = Vec::new();
        for a in Action::ALL {
            for o in Outcome::ALL {
                events.push(
                    self.events.get_or_create(&labels(&[("action", a.as_str()), ("outcome", o.as_str())])).clone(),
                );
            }
        }
        let drop = |reason| self.dropped.get_or_create(&labels(&[("reason", reason)])).clone();
        EmitCounters {
            events,
            disabled: drop("disabled"),
            queue_full: drop("queue_full"),
            stopped: drop("stopped"),
            queue_depth: self.queue_depth.clone(),
        }
    }

    pub fn drop_event(&self, reason: &str) {
        self.dropped.get_or_create(&labels(&[("reason", reason)])).inc();
    }

    pub fn drops(&self, reason: &str, n: u64) {
        if n > 0 {
            self.dropped.get_or_create(&labels(&[("reason", reason)])).inc_by(n);
        }
    }

    #[cfg(test)]
    pub fn dropped_count(&self, reason: &str) -> u64 {
        self.dropped.get_or_create(&labels(&[("reason", reason)])).get()
    }
}
