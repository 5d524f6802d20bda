//! The writer: one thread that moves events from the in-memory queue to the sink, through the
//! spool when the sink cannot keep up.
//!
//! Two modes, so that events reach the sink in emit order:
//! - direct (spool empty, sink healthy): take what is queued (up to `BATCH` events), append it
//!   to the sink, sync at most every `flush_interval_ms`. A failed write moves the batch to the
//!   spool; a queue more than half full after a write means the sink is slower than the
//!   callers, and the writer starts spooling.
//! - spooling: everything queued goes behind what is already spooled (cheap sealed appends),
//!   then the oldest spooled chunk goes to the sink. A failing sink is retried with a backoff
//!   (doubling from `RETRY_MIN` up to `retry_max`). Once the spool is empty, direct mode again:
//!   every event still queued is newer than every event the spool held.
//!
//! A sink write that hangs (a dead network mount) stalls this thread; the queue is the buffer
//! for that case, and once it is full `emit` drops (counted as `queue_full`).

use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use super::event::{Event, Resource};
use super::metrics::AuditMetrics;
use super::sink::FileSink;
use super::spool::Spool;

/// Events written to the sink (or spool) in one go.
const BATCH: usize = 512;
/// First retry of a failing sink.
pub const RETRY_MIN: Duration = Duration::from_millis(50);

pub enum Msg {
    /// Boxed so the queue's slots stay small (the channel allocates them up front).
    Event(Box<Event>),
    /// Answered once every event queued before it is synced to the sink or the spool.
    Flush(tokio::sync::oneshot::Sender<()>),
}

pub struct Writer {
    pub rx: Receiver<Msg>,
    pub sink: FileSink,
    pub spool: Spool,
    pub metrics: AuditMetrics,
    /// Stamped on every event here rather than in `emit`, which stays allocation-light.
    pub observer: Resource,
    pub capacity: usize,
    pub flush_interval: Duration,
    pub retry_max: Duration,
    /// Whether the last sink write succeeded.
    pub sink_ok: bool,
    /// While failing: when to try the sink again, and the wait after that.
    pub retry_at: Option<Instant>,
    pub backoff: Duration,
}

impl Writer {
    /// Runs until every sender is gone (the node dropped its `Audit`).
    pub fn run(mut self) {
        self.refresh_gauges();
        loop {
            let running = if self.spool.is_empty() && self.sink_ok { self.direct() } else { self.spooling() };
            self.refresh_gauges();
            if !running {
                self.sync_all();
                return;
            }
        }
    }

    fn refresh_gauges(&self) {
        self.metrics.spool_bytes.set(self.spool.bytes() as i64);
        self.metrics.sink_up.set(i64::from(self.sink_ok));
        self.metrics.key_version.set(i64::from(self.spool.key_version()));
    }

    fn taken(&self, msg: Msg, events: &mut Vec<Event>, flushes: &mut Vec<tokio::sync::oneshot::Sender<()>>) {
        match msg {
            Msg::Event(mut e) => {
                self.metrics.queue_depth.dec();
                e.observer.clone_from(&self.observer);
                events.push(*e);
            }
            Msg::Flush(ack) => flushes.push(ack),
        }
    }

    /// Takes up to `BATCH` queued messages without waiting; false once the queue is closed.
    fn take_ready(&self, events: &mut Vec<Event>, flushes: &mut Vec<tokio::sync::oneshot::Sender<()>>) -> bool {
        while events.len() < BATCH {
            match self.rx.try_recv() {
                Ok(msg) => self.taken(msg, events, flushes),
                Err(TryRecvError::Empty) => return true,
                Err(TryRecvError::Disconnected) => return false,
            }
        }
        true
    }

    /// Encodes events as newline-terminated JSON lines.
    fn encode(&self, events: Vec<Event>) -> Vec<Vec<u8>> {
        let mut out = Vec::with_capacity(events.len());
        for e in events {
            match serde_json::to_vec(&e) {
                Ok(line) => out.push(line),
                Err(err) => {
                    tracing::error!("audit event {} not encodable: {err}", e.id);
                    self.metrics.drop_event("encode");
                }
            }
        }
        out
    }

    /// One round of direct mode; false once the queue is closed.
    fn direct(&mut self) -> bool {
        let mut events = Vec::new();
        let mut flushes = Vec::new();
        let first = match self.sink.sync_due_in(self.flush_interval) {
            None => self.rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(wait) => self.rx.recv_timeout(wait),
        };
        match first {
            Ok(msg) => self.taken(msg, &mut events, &mut flushes),
            Err(RecvTimeoutError::Timeout) => {
                self.sync_sink();
                return true;
            }
            Err(RecvTimeoutError::Disconnected) => return false,
        }
        let open = self.take_ready(&mut events, &mut flushes);
        let lines = self.encode(events);
        if !lines.is_empty() {
            let count = lines.len();
            let mut buf = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
            for l in &lines {
                buf.extend_from_slice(l);
                buf.push(b'\n');
            }
            match self.sink.write(&buf, count) {
                Ok(()) => {
                    self.metrics.written.inc_by(count as u64);
                }
                Err(e) => {
                    self.sink_failed(&e);
                    self.spool_lines(lines);
                }
            }
        }
        if self.sink.sync_due_in(self.flush_interval) == Some(Duration::ZERO) || !flushes.is_empty() {
            self.sync_sink();
        }
        if self.sink_ok && self.metrics.queue_depth.get() > (self.capacity / 2) as i64 {
            // The sink is slower than the callers: queue into the spool from now on, so the
            // queue keeps room and nothing is dropped while the spool has space.
            tracing::info!("audit sink is falling behind the callers; spooling events until it catches up");
            let mut spill = Vec::new();
            let mut more = Vec::new();
            let still_open = self.take_ready(&mut spill, &mut more);
            self.spool_lines(self.encode(spill));
            flushes.extend(more);
            if !flushes.is_empty() {
                self.sync_spool();
            }
            self.ack(flushes);
            return open && still_open;
        }
        if !flushes.is_empty() && !self.sink_ok {
            self.sync_spool();
        }
        self.ack(flushes);
        open
    }

    /// One round of spooling mode; false once the queue is closed (everything taken).
    fn spooling(&mut self) -> bool {
        let mut open = true;
        let mut flushes = Vec::new();
        // Everything queued goes behind the spool, in order.
        loop {
            let mut events = Vec::new();
            open = open && self.take_ready(&mut events, &mut flushes);
            let n = events.len();
            if n > 0 {
                self.spool_lines(self.encode(events));
            }
            if n < BATCH || !open {
                break;
            }
        }
        if !flushes.is_empty() {
            self.sync_spool();
            self.ack(flushes);
        }
        let due = self.retry_at.is_none_or(|t| Instant::now() >= t);
        if due {
            self.drain_chunk();
        }
        if !open {
            return false;
        }
        if self.spool.is_empty() && self.sink_ok {
            return true;
        }
        // Waiting for the sink to come back: wake for new events (to spool them) or the retry.
        if let Some(t) = self.retry_at {
            let wait = t.saturating_duration_since(Instant::now()).min(self.flush_interval);
            match self.rx.recv_timeout(wait) {
                Ok(msg) => {
                    let mut events = Vec::new();
                    let mut flushes = Vec::new();
                    self.taken(msg, &mut events, &mut flushes);
                    self.spool_lines(self.encode(events));
                    if !flushes.is_empty() {
                        self.sync_spool();
                        self.ack(flushes);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return false,
            }
        }
        true
    }

    /// Moves the oldest spooled chunk to the sink.
    fn drain_chunk(&mut self) {
        let (buf, count, corrupt) = match self.spool.next_chunk(BATCH) {
            Ok(chunk) => chunk,
            Err(e) => {
                tracing::error!("audit spool: cannot read the oldest segment: {e}");
                self.schedule_retry();
                return;
            }
        };
        self.metrics.drops("spool_corrupt", corrupt);
        if count == 0 {
            // The spool is empty: the sink is healthy by the last write or will be tried
            // directly; a sink that failed stays in backoff until its retry comes.
            if self.retry_at.is_none_or(|t| Instant::now() >= t) {
                self.sink_ok = true;
                self.retry_at = None;
                self.backoff = RETRY_MIN;
            }
            return;
        }
        // The sink must hold the chunk durably before the spool forgets it.
        let res = self.sink.write(&buf, count).and_then(|()| self.sink.sync());
        match res {
            Ok(()) => {
                self.metrics.written.inc_by(count as u64);
                self.sink_ok = true;
                self.retry_at = None;
                self.backoff = RETRY_MIN;
                if let Err(e) = self.spool.commit(count) {
                    tracing::error!("audit spool: cannot delete a drained segment: {e}");
                    self.schedule_retry();
                }
            }
            Err(e) => self.sink_failed(&e),
        }
    }

    fn sink_failed(&mut self, e: &std::io::Error) {
        if self.sink_ok {
            tracing::error!("audit sink write failed, spooling events until it recovers: {e}");
        }
        self.metrics.sink_errors.inc();
        self.sink_ok = false;
        self.schedule_retry();
    }

    fn schedule_retry(&mut self) {
        self.retry_at = Some(Instant::now() + self.backoff);
        self.backoff = (self.backoff * 2).min(self.retry_max);
    }

    fn spool_lines(&mut self, lines: Vec<Vec<u8>>) {
        if lines.is_empty() {
            return;
        }
        let r = self.spool.append(lines);
        self.metrics.drops("spool_full", r.full);
        self.metrics.drops("spool_error", r.failed);
    }

    fn sync_sink(&mut self) {
        if let Err(e) = self.sink.sync() {
            // The lines stay in the page cache or are lost with the file handle; the next
            // write reopens the path.
            self.sink_failed(&e);
        }
    }

    fn sync_spool(&mut self) {
        if let Err(e) = self.spool.sync() {
            tracing::error!("audit spool: sync failed: {e}");
        }
    }

    fn sync_all(&mut self) {
        self.sync_sink();
        self.sync_spool();
    }

    fn ack(&self, flushes: Vec<tokio::sync::oneshot::Sender<()>>) {
        if !flushes.is_empty() {
            // Whoever flushed reads the gauges next.
            self.refresh_gauges();
        }
        for f in flushes {
            let _ = f.send(());
        }
    }
}
