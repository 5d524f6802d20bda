//! Pushes the ops listener's metrics to an OpenTelemetry collector over OTLP/HTTP
//! (`[otlp] endpoint`, every `[otlp] interval` seconds), for sites that collect with
//! OpenTelemetry instead of scraping `/metrics`: the same registry, translated by `encode`,
//! sent in OTLP/HTTP's JSON encoding (`application/json`) to `/v1/metrics`. JSON rather than
//! protobuf: the protobuf types (opentelemetry-proto, prost) change the features of a build
//! dependency RocksDB's bindings share, which rebuilds RocksDB (docs/decisions.md).
//! A collector that is down costs a warning per interval, nothing else.

pub mod encode;
pub mod traces;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::config::Config;

/// The node's metrics as OpenMetrics text; the exporter is handed this rather than the node,
/// so it depends on nothing above it.
pub type MetricsText = Box<dyn Fn() -> Result<String, std::fmt::Error> + Send + Sync>;

/// Bound on one export.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

fn unix_nanos() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

/// Where exports go: the endpoint as given when it names the metrics path, else its
/// `/v1/metrics` (as `OTEL_EXPORTER_OTLP_ENDPOINT` is read).
pub fn metrics_url(endpoint: &str) -> String {
    let e = endpoint.trim_end_matches('/');
    if e.ends_with("/v1/metrics") {
        e.to_string()
    } else {
        format!("{e}/v1/metrics")
    }
}

/// One export of the node's current metrics.
pub async fn export(
    metrics: &MetricsText,
    node_id: u64,
    http: &reqwest::Client,
    url: &str,
    start: u64,
) -> anyhow::Result<()> {
    let text = metrics()?;
    let body = encode::request(&text, node_id, start, unix_nanos());
    let resp = http.post(url).json(&body).send().await?;
    if !resp.status().is_success() {
        anyhow::bail!("the collector answered {}", resp.status());
    }
    Ok(())
}

/// Starts the exporter when an endpoint is configured.
pub fn spawn(cfg: &Config, metrics: MetricsText) -> Option<tokio::task::JoinHandle<()>> {
    let url = metrics_url(cfg.otlp.endpoint.as_deref()?);
    let every = Duration::from_secs(cfg.otlp.interval_s);
    let node_id = cfg.node_id;
    let start = unix_nanos();
    Some(tokio::spawn(async move {
        let http = match reqwest::Client::builder().timeout(EXPORT_TIMEOUT).build() {
            Ok(h) => h,
            Err(e) => return tracing::error!("OTLP exporter not started: {e}"),
        };
        tracing::info!(%url, "pushing metrics over OTLP every {every:?}");
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            if let Err(e) = export(&metrics, node_id, &http, &url, start).await {
                tracing::warn!(%url, "OTLP metrics export failed: {e:#}");
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use axum::routing::post;
    use serde_json::Value;

    use super::*;
    use crate::testkit::TestNode;

    #[test]
    fn the_endpoint_names_the_metrics_path_once() {
        assert_eq!(metrics_url("http://c:4318"), "http://c:4318/v1/metrics");
        assert_eq!(metrics_url("http://c:4318/"), "http://c:4318/v1/metrics");
        assert_eq!(metrics_url("http://c:4318/v1/metrics"), "http://c:4318/v1/metrics");
    }

    /// A collector on loopback receives the node's series as an OTLP/JSON export request.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_collector_on_loopback_receives_the_metrics() {
        let got: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
        let sink = got.clone();
        let app = axum::Router::new().route(
            "/v1/metrics",
            post(move |headers: axum::http::HeaderMap, body: axum::Json<Value>| async move {
                let ct = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
                sink.lock().unwrap().push((ct, body.0));
                "{}"
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let endpoint = format!("http://{addr}");
        let t = TestNode::start_with(&[("otlp", "endpoint", &endpoint), ("otlp", "interval", "1")]).await;
        let node = t.node.clone();
        let task = spawn(&t.node.cfg, Box::new(move || node.metrics_text())).expect("an endpoint is configured");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while got.lock().unwrap().is_empty() {
            assert!(tokio::time::Instant::now() < deadline, "no export arrived");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        task.abort();
        let (ct, req) = got.lock().unwrap()[0].clone();
        assert_eq!(ct, "application/json");
        let metrics = req["resourceMetrics"][0]["scopeMetrics"][0]["metrics"].as_array().unwrap().clone();
        let find = |name: &str| metrics.iter().find(|m| m["name"] == name).cloned().unwrap_or(Value::Null);
        assert!(find("idnode_raft_applied_index")["gauge"]["dataPoints"][0]["asDouble"].as_f64().is_some());
        assert_eq!(find("idnode_raft_proposals")["sum"]["isMonotonic"], true);
        assert!(find("idnode_raft_apply_seconds")["histogram"]["dataPoints"].is_array());
        assert!(metrics.len() > 30, "every family of /metrics: {}", metrics.len());
    }
}
