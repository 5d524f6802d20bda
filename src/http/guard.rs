//! The bounds every listener (API, ops, peer) puts around its handlers: a request timeout and
//! a global limit on requests in flight. Without them a slow client, a stuck leader or a flood
//! holds tasks, sockets and memory without end. A request beyond the limit waits for a slot
//! (within its timeout) rather than being refused at once, so short bursts queue instead of
//! failing; one that has not been answered when its time is up gets 503 with Keystone's error
//! body and `Retry-After`.

use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower::limit::GlobalConcurrencyLimitLayer;

use super::ApiError;

/// The ops listener answers probes and scrapes (small, quick requests) and operator calls,
/// the longest of which is `idnode cluster check` (up to a minute for the members' digests,
/// plus the forward to the leader).
const OPS_TIMEOUT: Duration = Duration::from_secs(75);
const OPS_MAX_CONCURRENT: usize = 64;
/// Peer traffic comes from at most four other members (a five-node cluster), each forwarding
/// up to its own API limit of writes, plus raft's own RPCs: the peer limit leaves room for all
/// of them, so forwarded work can never starve heartbeats into an election.
const PEER_FORWARDERS: usize = 4;
const PEER_RAFT_HEADROOM: usize = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenerLimits {
    /// From the request's arrival to its answer, waiting for a slot included.
    pub timeout: Duration,
    pub max_concurrent: usize,
}

impl ListenerLimits {
    /// The public API: `[api] request_timeout_s` and `[api] max_concurrent_requests`.
    pub fn api(request_timeout_s: u64, max_concurrent_requests: usize) -> Self {
        ListenerLimits { timeout: Duration::from_secs(request_timeout_s), max_concurrent: max_concurrent_requests }
    }

    pub fn ops() -> Self {
        ListenerLimits { timeout: OPS_TIMEOUT, max_concurrent: OPS_MAX_CONCURRENT }
    }

    /// The peer listener: `timeout` comes from the raft layer, which knows its longest
    /// legitimate request (snapshot chunks, forwarded writes, consistency checks).
    /// `api_max_concurrent` is the public API's `[api] max_concurrent_requests`.
    pub fn peer(api_max_concurrent: usize, timeout: Duration) -> Self {
        let max_concurrent = api_max_concurrent.saturating_mul(PEER_FORWARDERS) + PEER_RAFT_HEADROOM;
        ListenerLimits { timeout, max_concurrent }
    }
}

/// `router` with at most `limits.max_concurrent` requests running at once across all its
/// routes, and an answer within `limits.timeout`.
pub fn bounded(router: Router, limits: ListenerLimits) -> Router {
    within(slotted(router, limits), limits)
}

/// `router` with at most `limits.max_concurrent` requests running at once (the inner half of
/// [`bounded`], for a listener that checks something between the two halves).
pub fn slotted(router: Router, limits: ListenerLimits) -> Router {
    router.layer(GlobalConcurrencyLimitLayer::new(limits.max_concurrent))
}

/// `router` answering within `limits.timeout` (the outer half of [`bounded`]).
pub fn within(router: Router, limits: ListenerLimits) -> Router {
    router.layer(middleware::from_fn_with_state(limits.timeout, answer_within))
}

async fn answer_within(State(limit): State<Duration>, req: Request, next: Next) -> Response {
    // A cheap handle (shared bytes), read only when the request timed out.
    let uri = req.uri().clone();
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(resp) => resp,
        Err(_) => {
            tracing::warn!(path = uri.path(), "request timed out after {limit:?}");
            ApiError::unavailable(format!(
                "The server did not answer within {} s (a write may still take effect); retry later.",
                limit.as_secs_f64()
            ))
            .into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use axum::body::Body;
    use axum::http::StatusCode;
    use axum::routing::get;
    use tokio::sync::Notify;
    use tower::ServiceExt;

    use super::*;

    fn get_req(path: &str) -> Request {
        Request::get(path).body(Body::empty()).unwrap()
    }

    #[tokio::test]
    async fn a_slow_handler_gets_the_timeout_answer() {
        let router = Router::new()
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    "late"
                }),
            )
            .route("/fast", get(|| async { "ok" }));
        let app = bounded(router, ListenerLimits { timeout: Duration::from_millis(50), max_concurrent: 8 });
        let r = app.clone().oneshot(get_req("/slow")).await.unwrap();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers()["retry-after"], "1");
        let body: serde_json::Value =
            serde_json::from_slice(&axum::body::to_bytes(r.into_body(), 1 << 16).await.unwrap()).unwrap();
        assert_eq!(body["error"]["code"], 503);
        assert!(body["error"]["message"].as_str().unwrap().contains("within 0.05 s"), "{body}");
        assert_eq!(app.oneshot(get_req("/fast")).await.unwrap().status(), StatusCode::OK);
    }

    #[tokio::test]
    async fn the_limit_holds_across_routes() {
        let started = Arc::new(Notify::new());
        let release = Arc::new(Notify::new());
        let (s, r) = (started.clone(), release.clone());
        let router = Router::new()
            .route(
                "/hold",
                get(move || async move {
                    s.notify_one();
                    r.notified().await;
                    "held"
                }),
            )
            .route("/fast", get(|| async { "ok" }));
        let app = bounded(router, ListenerLimits { timeout: Duration::from_secs(3600), max_concurrent: 1 });
        let holder = tokio::spawn(app.clone().oneshot(get_req("/hold")));
        started.notified().await;
        // Another route, same listener: it waits for the slot.
        let waiting = tokio::time::timeout(Duration::from_millis(200), app.clone().oneshot(get_req("/fast"))).await;
        assert!(waiting.is_err(), "a second request ran while the only slot was taken");
        release.notify_one();
        assert_eq!(holder.await.unwrap().unwrap().status(), StatusCode::OK);
        assert_eq!(app.oneshot(get_req("/fast")).await.unwrap().status(), StatusCode::OK);
    }
}
