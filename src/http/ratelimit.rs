//! Per-source rate limit on token issue (`POST /v3/auth/tokens`, `/v4/auth/tokens`): password
//! guessing and hashing load are bounded per client before any work is done. GCRA buckets
//! from `governor`, keyed by source IP (IPv6 by /64, since a host usually owns a whole /64).

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};

use super::metrics::labels;
use super::ApiError;
use crate::node::Node;

pub struct TokenRateLimit {
    limiter: DefaultKeyedRateLimiter<IpAddr>,
}

impl TokenRateLimit {
    /// None when `per_second` is 0 (disabled). A burst of 0 means one second's worth.
    pub fn new(per_second: u32, burst: u32) -> Option<Self> {
        let rate = NonZeroU32::new(per_second)?;
        let burst = NonZeroU32::new(burst).unwrap_or(rate);
        Some(TokenRateLimit { limiter: DefaultKeyedRateLimiter::keyed(Quota::per_second(rate).allow_burst(burst)) })
    }

    /// Ok, or the whole seconds (at least 1) until the source may try again.
    pub fn check(&self, source: IpAddr) -> Result<(), u64> {
        self.limiter.check_key(&bucket(source)).map_err(|not_until| {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
        })
    }

    /// Forgets sources whose buckets are full again, so the table stays small.
    pub fn housekeep(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }
}

fn bucket(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(prefix))
        }
        v4 => v4,
    }
}

/// Route layer for the token routes: only POST (issue) is limited.
pub async fn limit_token_issue(State(node): State<Arc<Node>>, req: Request, next: Next) -> Response {
    let issuing = req.method() == Method::POST && matches!(req.uri().path(), "/v3/auth/tokens" | "/v4/auth/tokens");
    let Some(limit) = node.token_rate_limit.as_ref().filter(|_| issuing) else {
        return next.run(req).await;
    };
    let source = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip())
        .unwrap_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED));
    match limit.check(source) {
        Ok(()) => next.run(req).await,
        Err(retry_after) => {
            let route = if req.uri().path().starts_with("/v4") { "/v4/auth/tokens" } else { "/v3/auth/tokens" };
            node.metrics.rate_limited.get_or_create(&labels(&[("route", route)])).inc();
            let mut err = ApiError::new(StatusCode::TOO_MANY_REQUESTS, "Too many token requests; retry later.");
            err.retry_after = Some(retry_after);
            err.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_refused_per_source() {
        let limit = TokenRateLimit::new(1, 3).unwrap();
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        for _ in 0..3 {
            assert_eq!(limit.check(a), Ok(()));
        }
        let retry = limit.check(a).unwrap_err();
        assert!((1..=2).contains(&retry), "{retry}");
        assert_eq!(limit.check(b), Ok(()), "other sources have their own bucket");
        assert!(TokenRateLimit::new(0, 10).is_none(), "0 disables");
    }

    #[test]
    fn ipv6_sources_share_their_64() {
        let limit = TokenRateLimit::new(1, 1).unwrap();
        assert_eq!(limit.check("2001:db8:1:2::1".parse().unwrap()), Ok(()));
        assert!(limit.check("2001:db8:1:2:ffff::9".parse().unwrap()).is_err(), "same /64");
        assert_eq!(limit.check("2001:db8:1:3::1".parse().unwrap()), Ok(()), "next /64");
        assert_eq!(limit.check("::ffff:192.0.2.7".parse().unwrap()), Ok(()));
        assert!(limit.check("192.0.2.7".parse().unwrap()).is_err(), "v4-mapped is the v4 source");
    }
}
