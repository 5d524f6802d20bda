//! OTLP traces (`[otlp] traces`): the spans the node opens (the HTTP request, policy decisions,
//! raft's propose → forward → commit → apply, OpenFGA store calls, outbound federation calls)
//! become OpenTelemetry spans through `tracing-opentelemetry`, sampled by
//! `[otlp] trace_sample_ratio` (parent-based: a caller's sampled `traceparent` is honoured),
//! batched by the OpenTelemetry SDK on a thread of its own and exported by the project's
//! OTLP/HTTP exporter (protobuf) to `[otlp] endpoint`'s `/v1/traces`. A collector that is down
//! drops batches; requests never wait on it.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::KeyValue;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use crate::config::OtlpSettings;

mod client;

/// Bound on one export.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where spans go: the endpoint's `/v1/traces` (as `OTEL_EXPORTER_OTLP_ENDPOINT` is read).
pub fn traces_url(endpoint: &str) -> String {
    let e = endpoint.trim_end_matches('/');
    let base = e.strip_suffix("/v1/metrics").unwrap_or(e);
    if base.ends_with("/v1/traces") {
        base.to_string()
    } else {
        format!("{base}/v1/traces")
    }
}

/// The exporting half: dropping it sends what is batched and stops the exporter thread.
pub struct Tracing {
    provider: SdkTracerProvider,
}

impl Drop for Tracing {
    fn drop(&mut self) {
        if let Err(e) = self.provider.shutdown() {
            eprintln!("idnode: OTLP traces not all sent at exit: {e}");
        }
    }
}

/// The layer that turns the node's spans into OpenTelemetry spans, when traces are on.
/// `runtime` runs the exports' HTTP calls.
pub fn layer<S>(
    otlp: &OtlpSettings,
    node_id: u64,
    runtime: tokio::runtime::Handle,
) -> anyhow::Result<Option<(impl Layer<S>, Tracing)>>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    let (true, Some(endpoint)) = (otlp.traces, otlp.endpoint.as_deref()) else { return Ok(None) };
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(traces_url(endpoint))
        .with_timeout(EXPORT_TIMEOUT)
        .with_http_client(client::Client::new(runtime, EXPORT_TIMEOUT)?)
        .build()?;
    let resource = Resource::builder_empty()
        .with_service_name("idnode")
        .with_attributes([
            KeyValue::new("service.version", crate::build_info::VERSION),
            KeyValue::new("service.instance.id", node_id.to_string()),
        ])
        .build();
    let provider = SdkTracerProvider::builder()
        .with_resource(resource)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(otlp.trace_sample_ratio))))
        .with_batch_exporter(exporter)
        .build();
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let tracer = provider.tracer("idnode");
    // The node's own spans at info: not the libraries' (openraft's are many and internal).
    let only_ours = Targets::new()
        .with_target("idnode", LevelFilter::INFO)
        .with_target("idnode_raft", LevelFilter::INFO)
        .with_default(LevelFilter::OFF);
    let layer = tracing_opentelemetry::layer().with_tracer(tracer).with_filter(only_ours);
    idnode_raft::trace_context::enable();
    Ok(Some((layer, Tracing { provider })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_names_the_traces_path_once() {
        assert_eq!(traces_url("http://c:4318"), "http://c:4318/v1/traces");
        assert_eq!(traces_url("http://c:4318/"), "http://c:4318/v1/traces");
        assert_eq!(traces_url("http://c:4318/v1/traces"), "http://c:4318/v1/traces");
    }
}
