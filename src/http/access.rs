//! The outermost layer of the public API: it names the request (`request_id`), opens the span
//! every log line of the request carries, echoes the id on the answer (timeouts and refusals
//! included) and writes the access line (target `idnode::access`): method, route template,
//! status, duration, body bytes, client address, request id, and the user and project once an
//! extractor learned them ([`note_subject`]). Never a token, a query string or a body.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use axum::body::HttpBody;
use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::Router;
use idnode_raft::trace_context;
use tracing::field::Empty;
use tracing::Instrument;

use super::client_ip::{self, Cidr};
use super::request_id::{self, RequestId};

/// The route template a request matched, left on its answer by the router's inner layer (the
/// outer layer runs before routing, so it cannot see it).
#[derive(Debug, Clone)]
pub struct Route(pub Arc<str>);

impl Route {
    /// The request's route template, as the router's own layers see it.
    pub fn of(req: &Request) -> Route {
        Route(req.extensions().get::<MatchedPath>().map_or_else(|| Arc::from("unmatched"), |p| Arc::from(p.as_str())))
    }
}

/// Who a request turned out to come from.
#[derive(Debug, Default)]
struct Subject(OnceLock<(String, Option<String>)>);

tokio::task_local! {
    static SUBJECT: Arc<Subject>;
}

/// Names the user (and scoped project) of the request this task serves, for its access line;
/// the first note wins. Outside a request it does nothing.
pub fn note_subject(user_id: &str, project_id: Option<&str>) {
    let _ = SUBJECT.try_with(|s| s.0.set((user_id.to_string(), project_id.map(str::to_string))));
}

/// What the layer needs to know.
#[derive(Debug, Clone)]
pub struct AccessLog {
    /// Whether access lines are written (`[log] access`).
    pub enabled: bool,
    /// Proxies whose `X-Forwarded-For` names the client (`[api] trusted_proxies`).
    pub trusted_proxies: Arc<Vec<Cidr>>,
}

impl AccessLog {
    /// `router` under this layer: put it outside every other layer of the listener.
    pub fn wrap(self, router: Router) -> Router {
        router.layer(middleware::from_fn_with_state(self, stamp))
    }
}

async fn stamp(State(cfg): State<AccessLog>, mut req: Request, next: Next) -> Response {
    let start = Instant::now();
    let id = RequestId::of(req.headers());
    req.extensions_mut().insert(id.clone());
    let method = req.method().clone();
    let peer =
        req.extensions().get::<ConnectInfo<SocketAddr>>().map_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED), |c| c.0.ip());
    let client = client_ip::source(peer, req.headers(), &cfg.trusted_proxies);
    let span = tracing::info_span!(
        "request",
        request_id = %id,
        otel.kind = Empty,
        otel.status_code = Empty,
        http.request.method = Empty,
        http.route = Empty,
        http.response.status_code = Empty,
    );
    let traced = trace_context::enabled();
    if traced {
        // The server span of a trace the caller may have started (`traceparent`).
        span.record("otel.kind", "server");
        span.record("http.request.method", method.as_str());
        trace_context::adopt(&span, req.headers());
    }
    let subject = Arc::new(Subject::default());
    let work = idnode_raft::request_tag::scope(id.shared(), SUBJECT.scope(subject.clone(), next.run(req)));
    let mut resp = work.instrument(span.clone()).await;
    if let Some(v) = id.header_value() {
        resp.headers_mut().insert(request_id::OPENSTACK, v);
    }
    let route = resp.extensions().get::<Route>().map_or("unmatched", |r| &r.0);
    if cfg.enabled {
        let who = subject.0.get();
        let bytes = resp.body().size_hint().exact();
        let _in = span.enter();
        tracing::info!(
            target: "idnode::access",
            method = %method,
            route = %route,
            status = resp.status().as_u16(),
            duration_ms = start.elapsed().as_secs_f64() * 1e3,
            bytes,
            client = %client,
            user_id = who.map(|(u, _)| u.as_str()),
            project_id = who.and_then(|(_, p)| p.as_deref()),
            "request"
        );
    }
    if traced {
        trace_context::rename(&span, format!("{method} {route}"));
        span.record("http.route", route);
        span.record("http.response.status_code", i64::from(resp.status().as_u16()));
        if resp.status().is_server_error() {
            span.record("otel.status_code", "error");
        }
    }
    resp
}
