//! W3C trace context across members and outbound calls, and the spans of a proposal's path
//! (`raft.propose`, `raft.forward`, `raft.commit`, `raft.apply`).
//!
//! The process installs an OpenTelemetry layer only when `[otlp] traces` is on and then calls
//! [`enable`]; until then every span here is `Span::none()` and no header is written, so a
//! node without tracing pays one relaxed load per proposal.
//!
//! A proposal's apply runs on the state machine's task, far from the request that made it; the
//! leader files the proposal's `raft.commit` span under its request id ([`file_commit`]) and the
//! apply step finds it there ([`apply_span`]), so the tree reads request → propose → (forward →
//! leader) → commit → apply.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use opentelemetry::trace::TraceContextExt;
use opentelemetry_http::{HeaderExtractor, HeaderInjector};
use reqwest::header::HeaderMap;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Turns the spans and the propagation on (once the OpenTelemetry layer is installed).
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Whether traces are being collected.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Writes the current span's context into an outgoing request's headers.
pub fn inject(headers: &mut HeaderMap) {
    inject_within(&Span::current(), headers);
}

/// Writes `span`'s context into an outgoing request's headers (`traceparent`).
pub fn inject_within(span: &Span, headers: &mut HeaderMap) {
    if !enabled() || span.is_none() {
        return;
    }
    let cx = span.context();
    // The propagator is the process's (W3C trace context), set with the layer.
    opentelemetry::global::get_text_map_propagator(|p| p.inject_context(&cx, &mut HeaderInjector(&mut *headers)));
}

/// Makes `span` a child of the caller's span named in `headers` (`traceparent`), if any.
pub fn adopt(span: &Span, headers: &HeaderMap) {
    if !enabled() || !headers.contains_key("traceparent") {
        return;
    }
    let parent = opentelemetry::global::get_text_map_propagator(|p| p.extract(&HeaderExtractor(headers)));
    let _ = span.set_parent(parent);
}

/// Names `span` once its name is known (a server span learns its route after routing, when
/// its children have already started it, so the `otel.name` field no longer applies).
pub fn rename(span: &Span, name: String) {
    if enabled() && !span.is_none() {
        span.context().span().update_name(name);
    }
}

/// A log index as a span attribute: OpenTelemetry's integers are signed (tracing's `u64`
/// values would arrive as strings).
pub fn attr_index(index: u64) -> i64 {
    i64::try_from(index).unwrap_or(i64::MAX)
}

/// A span when traces are on, else `Span::none()` (the fields are not even evaluated).
#[macro_export]
macro_rules! traced_span {
    ($($arg:tt)*) => {
        if $crate::trace_context::enabled() { ::tracing::info_span!($($arg)*) } else { ::tracing::Span::none() }
    };
}

/// Commit spans of the proposals this leader is writing, by request id.
fn commits() -> &'static Mutex<HashMap<[u8; 16], Span>> {
    static FILED: OnceLock<Mutex<HashMap<[u8; 16], Span>>> = OnceLock::new();
    FILED.get_or_init(Mutex::default)
}

/// Files `span` as the commit of proposal `request_id` until the guard drops.
pub(crate) fn file_commit(request_id: [u8; 16], span: &Span) -> Option<Filed> {
    if span.is_none() {
        return None;
    }
    commits().lock().ok()?.insert(request_id, span.clone());
    Some(Filed(request_id))
}

/// Takes the filing back when the proposal's answer is in.
pub(crate) struct Filed([u8; 16]);

impl Drop for Filed {
    fn drop(&mut self) {
        if let Ok(mut m) = commits().lock() {
            m.remove(&self.0);
        }
    }
}

/// The span of applying proposal `request_id` at `index`: under its commit span when this
/// member is the leader that wrote it, else none (followers' applies are not traced).
pub(crate) fn apply_span(request_id: &[u8; 16], index: u64) -> Span {
    if !enabled() {
        return Span::none();
    }
    match commits().lock().ok().and_then(|m| m.get(request_id).cloned()) {
        Some(commit) => tracing::info_span!(parent: &commit, "raft.apply", raft.index = attr_index(index)),
        None => Span::none(),
    }
}
