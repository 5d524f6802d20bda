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
use tracing_subscriber::layer::{Layered, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::config::log::LogFormat;
use crate::config::OtlpSettings;
use crate::otlp::traces::{self, Tracing};

/// Lines that may wait for the writer thread before new ones are dropped.
const QUEUE_LINES: usize = 64 * 1024;

/// Keeps the writer thread (and the trace exporter); dropping it sends and writes out what is
/// queued.
pub struct LogGuard {
    _traces: Option<Tracing>,
    _worker: WorkerGuard,
}

/// The writer's count of dropped lines, for `idnode_log_dropped_lines_total`.
static DROPPED: OnceLock<ErrorCounter> = OnceLock::new();

/// The log's own layer, text or JSON.
type Lines = Box<dyn Layer<tracing_subscriber::Registry> + Send + Sync>;

/// What traces to send, if any: the `[otlp]` settings, the node's id and the runtime that
/// makes the exports' calls.
pub struct TraceTarget<'a> {
    pub otlp: &'a OtlpSettings,
    pub node_id: u64,
    pub runtime: tokio::runtime::Handle,
}

/// Installs the log (and the trace exporter, when asked) for the process (once, at startup).
pub fn init(format: LogFormat, traces: Option<TraceTarget<'_>>) -> anyhow::Result<LogGuard> {
    let stderr: BufWriter<Stderr> = BufWriter::new(std::io::stderr());
    let (writer, worker) = NonBlockingBuilder::default().buffered_lines_limit(QUEUE_LINES).lossy(true).finish(stderr);
    let filter = EnvFilter::try_from_env("IDNODE_LOG").unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    // Colours for a terminal only: journald, files and collectors get plain text.
    let lines = tracing_subscriber::fmt::layer().with_ansi(std::io::stderr().is_terminal()).with_writer(writer.clone());
    // The level filter is the log's own: traces choose their spans with theirs.
    let lines: Lines = match format {
        LogFormat::Text => lines.with_filter(filter).boxed(),
        LogFormat::Json => {
            lines.json().with_current_span(false).with_span_list(true).flatten_event(true).with_filter(filter).boxed()
        }
    };
    let (spans, tracing) = match traces {
        Some(t) => traces::layer::<Layered<Lines, tracing_subscriber::Registry>>(t.otlp, t.node_id, t.runtime)?.unzip(),
        None => (None, None),
    };
    tracing_subscriber::registry().with(lines).with(spans).try_init()?;
    let _ = DROPPED.set(writer.error_counter());
    Ok(LogGuard { _traces: tracing, _worker: worker })
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
