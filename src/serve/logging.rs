//! The node's log: `[log] format` (`text` for a terminal, `json` for a log collector: one JSON
//! object per line with the timestamp, level, target, message and the fields of the request
//! the line belongs to) and `[log] access` (one line per API request, target `idnode::access`).
//! The level filter stays `IDNODE_LOG` (default `info,openraft=warn`), so
//! `IDNODE_LOG=info,idnode::access=off` also silences the access log.
//!
//! Lines are written by a thread of their own through a buffer: a request never waits on the
//! terminal or the pipe behind stderr. Should that thread fall behind by more than its queue,
//! lines are dropped rather than requests slowed, and counted.

use std::io::{BufWriter, IsTerminal, Stderr};
use std::sync::OnceLock;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::registry::Registry;
use tracing_appender::non_blocking::{ErrorCounter, NonBlockingBuilder, WorkerGuard};
use tracing_subscriber::EnvFilter;

use crate::config::log::LogFormat;

/// Lines that may wait for the writer thread before new ones are dropped.
const QUEUE_LINES: usize = 64 * 1024;

/// Keeps the writer thread; dropping it writes out what is queued.
pub struct LogGuard {
    _worker: WorkerGuard,
}

/// The writer's count of dropped lines, for `idnode_log_dropped_lines_total`.
static DROPPED: OnceLock<ErrorCounter> = OnceLock::new();

/// Installs the log for the process (once, at startup).
pub fn init(format: LogFormat) -> LogGuard {
    let stderr: BufWriter<Stderr> = BufWriter::new(std::io::stderr());
    let (writer, worker) = NonBlockingBuilder::default().buffered_lines_limit(QUEUE_LINES).lossy(true).finish(stderr);
    let filter = EnvFilter::try_from_env("IDNODE_LOG").unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    // Colours for a terminal only: journald, files and collectors get plain text.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(writer.clone());
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().with_current_span(false).with_span_list(true).flatten_event(true).init(),
    }
    let _ = DROPPED.set(writer.error_counter());
    LogGuard { _worker: worker }
}

/// What the log shows without `IDNODE_LOG`.
pub const DEFAULT_FILTER: &str = "info,openraft=warn";

/// Registers `idnode_log_dropped_lines_total`: lines the log dropped because its writer fell
/// behind (a log collector or terminal slower than the requests).
pub fn register(registry: &mut Registry) {
    registry.register_collector(Box::new(Dropped));
}

#[derive(Debug)]
struct Dropped;

impl Collector for Dropped {
    fn encode(&self, mut enc: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let counter = ConstCounter::new(DROPPED.get().map_or(0, |c| c.dropped_lines() as u64));
        let help = "Log lines dropped because the log's writer fell behind";
        counter.encode(enc.encode_descriptor("idnode_log_dropped_lines", help, None, counter.metric_type())?)
    }
}
