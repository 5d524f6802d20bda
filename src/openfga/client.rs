//! The calls the driver makes to an OpenFGA store: check, batch-check, read (following
//! continuation tokens), streamed-list-objects and write. Each call is bounded by the request
//! timeout, holds one of `max_concurrency` slots while it is on the wire, and is retried on a
//! transient failure (connection, timeout, 429, 5xx) up to `max_retries` times with an
//! exponential backoff; any other 4xx is returned at once. Nothing is cached.

use std::time::{Duration, Instant};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use reqwest::StatusCode;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::sync::Semaphore;
use tracing::Instrument;

use super::settings::OpenFgaSettings;
use super::tuples::Tuple;
use super::wire::{self, ReadKey, CONSISTENCY};
use crate::http::metrics::{labels, Labels};

/// Read pages followed at the most; a listing that needs more is cut there, with a warning.
pub const MAX_READ_PAGES: usize = 1000;
/// Tuples asked for per read page (the store's maximum).
const READ_PAGE_SIZE: u32 = 100;
/// Checks sent per batch-check call (the store's default `maxChecksPerBatchCheck`).
const BATCH_SIZE: usize = 50;

/// Why a call to the store failed.
#[derive(Debug, Clone, PartialEq)]
pub enum FgaError {
    /// Unreachable, too slow, throttling or failing (after every retry).
    Unavailable(String),
    /// The store refused the request (a 4xx other than 429): a model or setting mismatch.
    Refused { status: u16, message: String },
    /// A read that must be whole reached [`MAX_READ_PAGES`] with more to come.
    Truncated { tuples: usize },
}

/// What a read does when [`MAX_READ_PAGES`] pages did not reach the end.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AtBound {
    /// Fails ([`FgaError::Truncated`]): for what decides on the answer (the guard rails, a
    /// revoke, a delete's cleanup), which must never act on part of it.
    Fail,
    /// Returns what was read, with a warning: for a listing shown to a client.
    Cut,
}

impl std::fmt::Display for FgaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FgaError::Unavailable(why) => write!(f, "the OpenFGA store is unavailable: {why}"),
            FgaError::Refused { status, message } => {
                write!(f, "the OpenFGA store refused the request ({status}): {message}")
            }
            FgaError::Truncated { tuples } => write!(
                f,
                "an OpenFGA read reached its bound of {MAX_READ_PAGES} pages ({tuples} tuples) before its end; \
                 nothing was decided or changed on part of the answer"
            ),
        }
    }
}

/// One attempt's failure: whether another attempt may help.
enum Attempt {
    Transient(String),
    Final(FgaError),
}

/// The driver's metric series.
#[derive(Clone)]
pub struct FgaMetrics {
    /// `operation`, `outcome` (`ok`, `unavailable`, `refused`).
    pub calls: Family<Labels, Counter>,
    /// `operation`: attempts after the first.
    pub retries: Family<Labels, Counter>,
    /// `operation`: seconds a call took, retries included.
    pub latency: Family<Labels, Histogram>,
    /// Reads cut at [`MAX_READ_PAGES`] pages.
    pub truncated_reads: Counter,
}

impl FgaMetrics {
    pub fn new(registry: &mut Registry) -> Self {
        let m = FgaMetrics {
            calls: Family::default(),
            retries: Family::default(),
            latency: Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.0005, 2.5, 14))),
            truncated_reads: Counter::default(),
        };
        registry.register(
            "idnode_assignment_driver_calls",
            "Calls to the relationship store by operation and outcome",
            m.calls.clone(),
        );
        registry.register(
            "idnode_assignment_driver_retries",
            "Retried calls to the relationship store by operation",
            m.retries.clone(),
        );
        registry.register(
            "idnode_assignment_driver_call_duration_seconds",
            "Relationship store call latency, retries included",
            m.latency.clone(),
        );
        registry.register(
            "idnode_assignment_driver_truncated_reads",
            "Relationship store reads cut at the page bound",
            m.truncated_reads.clone(),
        );
        m
    }
}

pub struct Client {
    pub settings: OpenFgaSettings,
    http: reqwest::Client,
    slots: Semaphore,
    pub metrics: FgaMetrics,
    /// `<api_url>/stores/<store_id>/`.
    base: String,
}

impl Client {
    pub fn new(settings: OpenFgaSettings, metrics: FgaMetrics) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder().timeout(settings.timeout).connect_timeout(settings.timeout).build()?;
        let base = format!("{}/stores/{}/", settings.api_url.as_str().trim_end_matches('/'), settings.store_id);
        let slots = Semaphore::new(settings.max_concurrency);
        Ok(Client { settings, http, slots, metrics, base })
    }

    fn model(&self) -> Option<&str> {
        self.settings.model_id.as_deref()
    }

    /// Whether the model resolves the relationship (through usersets, group membership, …).
    pub async fn check(&self, t: &Tuple) -> Result<bool, FgaError> {
        let body =
            wire::CheckRequest { tuple_key: t.into(), authorization_model_id: self.model(), consistency: CONSISTENCY };
        let r: wire::CheckResponse = self.call("check", &body).await?;
        Ok(r.allowed)
    }

    /// `check` for each tuple, in batches, answers in the same order.
    pub async fn batch_check(&self, tuples: &[Tuple]) -> Result<Vec<bool>, FgaError> {
        let calls = tuples.chunks(BATCH_SIZE).map(|chunk| async move {
            let checks = chunk
                .iter()
                .enumerate()
                .map(|(i, t)| wire::BatchCheckItem { tuple_key: t.into(), correlation_id: format!("c{i}") })
                .collect();
            let body =
                wire::BatchCheckRequest { checks, authorization_model_id: self.model(), consistency: CONSISTENCY };
            let r: wire::BatchCheckResponse = self.call("batch-check", &body).await?;
            (0..chunk.len())
                .map(|i| match r.result.get(&format!("c{i}")) {
                    Some(one) if one.error.is_none() => Ok(one.allowed),
                    Some(one) => Err(FgaError::Unavailable(format!(
                        "a batched check failed: {}",
                        one.error.clone().unwrap_or_default()
                    ))),
                    None => Err(FgaError::Unavailable("a batched check got no answer".into())),
                })
                .collect::<Result<Vec<bool>, FgaError>>()
        });
        let answers = futures::future::try_join_all(calls).await?;
        Ok(answers.into_iter().flatten().collect())
    }

    /// Every stored tuple matching the filter, following continuation tokens for up to
    /// [`MAX_READ_PAGES`] pages; beyond, as `at_bound` says (counted either way).
    pub async fn read(&self, key: &ReadKey, at_bound: AtBound) -> Result<Vec<Tuple>, FgaError> {
        let mut out = Vec::new();
        let mut token = String::new();
        for page in 1..=MAX_READ_PAGES {
            let body = wire::ReadRequest {
                tuple_key: key,
                page_size: READ_PAGE_SIZE,
                continuation_token: &token,
                consistency: CONSISTENCY,
            };
            let r: wire::ReadResponse = self.call("read", &body).await?;
            out.extend(r.tuples.into_iter().map(|t| Tuple::from(t.key)));
            if r.continuation_token.is_empty() {
                return Ok(out);
            }
            if page == MAX_READ_PAGES {
                self.metrics.truncated_reads.inc();
                if at_bound == AtBound::Fail {
                    let e = FgaError::Truncated { tuples: out.len() };
                    tracing::error!("{e}");
                    return Err(e);
                }
                tracing::warn!(
                    pages = MAX_READ_PAGES,
                    tuples = out.len(),
                    "OpenFGA read reached its page bound: the listing is cut here"
                );
            }
            token = r.continuation_token;
        }
        Ok(out)
    }

    /// Whether the store answers a one-tuple read (for `/ready`).
    pub async fn probe(&self) -> Result<(), FgaError> {
        let system = self.settings.types(super::settings::Kind::System).first().cloned().unwrap_or_default();
        let key = ReadKey { object: Some(format!("{system}:all")), ..ReadKey::default() };
        let body =
            wire::ReadRequest { tuple_key: &key, page_size: 1, continuation_token: "", consistency: CONSISTENCY };
        let _: wire::ReadResponse = self.call("read", &body).await?;
        Ok(())
    }

    /// The objects of `object_type` on which `user` holds `relation`, as the model resolves
    /// it, through the streaming form (the other form cuts its answer at a maximum).
    pub async fn list_objects(&self, user: &str, relation: &str, object_type: &str) -> Result<Vec<String>, FgaError> {
        let body = wire::ListObjectsRequest {
            object_type,
            relation,
            user,
            authorization_model_id: self.model(),
            consistency: CONSISTENCY,
        };
        let text = self.call_raw("streamed-list-objects", &body).await?;
        let mut out = Vec::new();
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let line: wire::StreamLine = serde_json::from_str(line)
                .map_err(|e| FgaError::Unavailable(format!("streamed-list-objects: unreadable line ({e})")))?;
            if let Some(err) = line.error {
                return Err(FgaError::Unavailable(format!("streamed-list-objects ended with an error: {err}")));
            }
            out.extend(line.result.map(|r| r.object));
        }
        Ok(out)
    }

    /// Writes and deletes relationships in one transaction; an existing write or a missing
    /// delete is no error.
    pub async fn write(&self, writes: &[Tuple], deletes: &[Tuple]) -> Result<(), FgaError> {
        let keys = |ts: &[Tuple]| ts.iter().map(wire::TupleKey::from).collect::<Vec<_>>();
        let body = wire::WriteRequest {
            writes: (!writes.is_empty()).then(|| wire::Writes { tuple_keys: keys(writes), on_duplicate: "ignore" }),
            deletes: (!deletes.is_empty()).then(|| wire::Deletes { tuple_keys: keys(deletes), on_missing: "ignore" }),
            authorization_model_id: self.model(),
        };
        let _: serde_json::Value = self.call("write", &body).await?;
        Ok(())
    }

    async fn call<T: DeserializeOwned>(&self, op: &'static str, body: &impl Serialize) -> Result<T, FgaError> {
        let text = self.call_raw(op, body).await?;
        serde_json::from_str(&text).map_err(|e| FgaError::Unavailable(format!("{op}: unreadable answer ({e})")))
    }

    /// POSTs `body` to the store's `op` endpoint with retries; the answer's text.
    async fn call_raw(&self, op: &'static str, body: &impl Serialize) -> Result<String, FgaError> {
        let span = idnode_raft::traced_span!("openfga", otel.name = %format_args!("openfga {op}"), otel.kind = "client", fga.operation = op);
        self.call_traced(op, body).instrument(span).await
    }

    async fn call_traced(&self, op: &'static str, body: &impl Serialize) -> Result<String, FgaError> {
        let started = Instant::now();
        let mut attempt = 0u32;
        let outcome = loop {
            match self.attempt(op, body).await {
                Ok(text) => break Ok(text),
                Err(Attempt::Final(e)) => break Err(e),
                Err(Attempt::Transient(why)) if attempt >= self.settings.max_retries => {
                    break Err(FgaError::Unavailable(format!("{op}: {why}")))
                }
                Err(Attempt::Transient(why)) => {
                    let wait = self.settings.retry_backoff.saturating_mul(1u32 << attempt.min(16));
                    tracing::debug!(operation = op, attempt, "OpenFGA {why}: retrying in {wait:?}");
                    self.metrics.retries.get_or_create(&labels(&[("operation", op)])).inc();
                    tokio::time::sleep(wait.min(Duration::from_secs(30))).await;
                    attempt += 1;
                }
            }
        };
        let result = match &outcome {
            Ok(_) => "ok",
            Err(FgaError::Unavailable(_)) => "unavailable",
            Err(FgaError::Refused { .. } | FgaError::Truncated { .. }) => "refused",
        };
        self.metrics.calls.get_or_create(&labels(&[("operation", op), ("outcome", result)])).inc();
        self.metrics.latency.get_or_create(&labels(&[("operation", op)])).observe(started.elapsed().as_secs_f64());
        outcome
    }

    async fn attempt(&self, op: &str, body: &impl Serialize) -> Result<String, Attempt> {
        let _slot = self.slots.acquire().await.map_err(|_| Attempt::Transient("the driver is shutting down".into()))?;
        let mut traced = reqwest::header::HeaderMap::new();
        idnode_raft::trace_context::inject(&mut traced);
        let mut req = self.http.post(format!("{}{op}", self.base)).headers(traced).json(body);
        if let Some(token) = &self.settings.api_token {
            req = req.bearer_auth(&token.0);
        }
        let resp = req.send().await.map_err(|e| Attempt::Transient(describe(e)))?;
        let status = resp.status();
        let text = resp.text().await.map_err(|e| Attempt::Transient(describe(e)))?;
        if status.is_success() {
            return Ok(text);
        }
        let err: wire::ErrorBody = serde_json::from_str(&text).unwrap_or_default();
        let message = if err.message.is_empty() { text.chars().take(200).collect() } else { err.message };
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            return Err(Attempt::Transient(format!("{status}: {message}")));
        }
        Err(Attempt::Final(FgaError::Refused { status: status.as_u16(), message: format!("{op}: {message}") }))
    }
}

/// A transport error in words, without the request's URL or headers.
fn describe(e: reqwest::Error) -> String {
    if e.is_timeout() {
        "timed out".into()
    } else if e.is_connect() {
        "cannot connect".into()
    } else {
        format!("transport error ({})", e.without_url())
    }
}
