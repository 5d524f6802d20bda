//! Per-source rate limits on the routes that cost the server a password hash or let a client
//! guess secrets: token issue (`POST /v3/auth/tokens`, `/v4/auth/tokens`, and the mapped
//! logins, which also make this node call the provider), password change
//! (`POST /v3/users/{id}/password`) and signed-request tokens (`POST /v3/sigtokens`,
//! `/v3/ec2tokens`, `/v3/s3tokens`). Each class has its own buckets, so a client busy changing passwords
//! still gets tokens. GCRA buckets from `governor`, keyed by source IP (IPv6 by /64, since a
//! host usually owns a whole /64); the source is chosen by [`super::client_ip`]. The layer that
//! applies them to the public API is the router's (`serve::router::limit`).

use std::net::{IpAddr, Ipv6Addr};
use std::num::NonZeroU32;

use axum::http::Method;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};

use super::client_ip::Cidr;

/// The request classes that are limited, each with its own buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    TokenIssue,
    PasswordChange,
    SignedToken,
    /// The OAuth2 provider's token, device authorization, revoke, introspect and userinfo
    /// endpoints (answered with the RFC 6749 error body).
    OAuth2,
}

impl Class {
    /// The class of a request, by method and matched route template.
    pub fn of(method: &Method, route: &str) -> Option<Class> {
        if let Some(endpoint) = route.strip_prefix("/v4/oauth2/{domain_id}/") {
            return match endpoint {
                // A device authorization is an unauthenticated (public client) replicated write.
                "token" | "device_authorization" | "revoke" | "introspect" if method == Method::POST => {
                    Some(Class::OAuth2)
                }
                // The sign-in pages check passwords: the token-issue limit applies.
                "authorize/login" | "device/login" | "authorize/passkey" | "authorize/passkey/start"
                    if method == Method::POST =>
                {
                    Some(Class::TokenIssue)
                }
                "userinfo" if method == Method::POST || method == Method::GET => Some(Class::OAuth2),
                _ => None,
            };
        }
        if method != Method::POST {
            return None;
        }
        match route {
            "/v3/auth/tokens" | "/v4/auth/tokens" | "/v4/auth/passkey/start" | "/v4/auth/passkey/finish" => {
                Some(Class::TokenIssue)
            }
            // Logins through mappings: unauthenticated, and each may make this node call the
            // provider (discovery, token endpoint, key set, TokenReview).
            "/v4/federation/identity_providers/{idp_id}/auth"
            | "/v4/federation/identity_providers/{idp_id}/jwt"
            | "/v4/federation/oidc/callback"
            | "/v4/k8s_auth/instances/{instance_id}/auth"
            | "/v4/spiffe/trust_domains/{trust_domain_id}/auth" => Some(Class::TokenIssue),
            "/v3/users/{id}/password" => Some(Class::PasswordChange),
            "/v3/sigtokens" | "/v3/ec2tokens" | "/v3/s3tokens" => Some(Class::SignedToken),
            _ => None,
        }
    }

    /// The 429 message of Keystone's error body.
    pub fn message(self) -> &'static str {
        match self {
            Class::TokenIssue => "Too many token requests; retry later.",
            Class::PasswordChange => "Too many password change requests; retry later.",
            Class::SignedToken => "Too many signed-request token requests; retry later.",
            Class::OAuth2 => "Too many requests; retry later.",
        }
    }
}

/// One class's buckets, one per source.
pub struct SourceRateLimit {
    limiter: DefaultKeyedRateLimiter<IpAddr>,
}

impl SourceRateLimit {
    /// None when `per_second` is 0 (disabled). A burst of 0 means one second's worth.
    pub fn new(per_second: u32, burst: u32) -> Option<Self> {
        let rate = NonZeroU32::new(per_second)?;
        let burst = NonZeroU32::new(burst).unwrap_or(rate);
        Some(SourceRateLimit { limiter: DefaultKeyedRateLimiter::keyed(Quota::per_second(rate).allow_burst(burst)) })
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

/// The node's limits: the same quota (`[auth] rate_limit_per_second`, `rate_limit_burst`) for
/// every class, separate buckets per class, and the proxies whose `X-Forwarded-For` counts.
pub struct RateLimits {
    token: Option<SourceRateLimit>,
    password: Option<SourceRateLimit>,
    signed: Option<SourceRateLimit>,
    oauth2: Option<SourceRateLimit>,
    pub(crate) trusted_proxies: Vec<Cidr>,
}

impl RateLimits {
    /// `oauth2`: the `[oauth2]` quota (per second, burst) of the provider's endpoints.
    pub fn new(per_second: u32, burst: u32, oauth2: (u32, u32), trusted_proxies: Vec<Cidr>) -> Self {
        RateLimits {
            token: SourceRateLimit::new(per_second, burst),
            password: SourceRateLimit::new(per_second, burst),
            signed: SourceRateLimit::new(per_second, burst),
            oauth2: SourceRateLimit::new(oauth2.0, oauth2.1),
            trusted_proxies,
        }
    }

    pub fn class(&self, class: Class) -> Option<&SourceRateLimit> {
        match class {
            Class::TokenIssue => self.token.as_ref(),
            Class::PasswordChange => self.password.as_ref(),
            Class::SignedToken => self.signed.as_ref(),
            Class::OAuth2 => self.oauth2.as_ref(),
        }
    }

    pub fn housekeep(&self) {
        [&self.token, &self.password, &self.signed, &self.oauth2]
            .into_iter()
            .flatten()
            .for_each(SourceRateLimit::housekeep);
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

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;

    use super::*;

    #[test]
    fn burst_then_refused_per_source() {
        let limit = SourceRateLimit::new(1, 3).unwrap();
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        for _ in 0..3 {
            assert_eq!(limit.check(a), Ok(()));
        }
        let retry = limit.check(a).unwrap_err();
        assert!((1..=2).contains(&retry), "{retry}");
        assert_eq!(limit.check(b), Ok(()), "other sources have their own bucket");
        assert!(SourceRateLimit::new(0, 10).is_none(), "0 disables");
    }

    #[test]
    fn ipv6_sources_share_their_64() {
        let limit = SourceRateLimit::new(1, 1).unwrap();
        assert_eq!(limit.check("2001:db8:1:2::1".parse().unwrap()), Ok(()));
        assert!(limit.check("2001:db8:1:2:ffff::9".parse().unwrap()).is_err(), "same /64");
        assert_eq!(limit.check("2001:db8:1:3::1".parse().unwrap()), Ok(()), "next /64");
        assert_eq!(limit.check("::ffff:192.0.2.7".parse().unwrap()), Ok(()));
        assert!(limit.check("192.0.2.7".parse().unwrap()).is_err(), "v4-mapped is the v4 source");
    }

    #[test]
    fn classes_by_method_and_route() {
        assert_eq!(Class::of(&Method::POST, "/v4/auth/tokens"), Some(Class::TokenIssue));
        assert_eq!(Class::of(&Method::POST, "/v3/users/{id}/password"), Some(Class::PasswordChange));
        assert_eq!(Class::of(&Method::POST, "/v3/ec2tokens"), Some(Class::SignedToken));
        assert_eq!(Class::of(&Method::POST, "/v3/s3tokens"), Some(Class::SignedToken));
        assert_eq!(Class::of(&Method::GET, "/v3/auth/tokens"), None, "validation is not limited");
        assert_eq!(Class::of(&Method::POST, "/v3/users"), None);
        let device = "/v4/oauth2/{domain_id}/device_authorization";
        assert_eq!(Class::of(&Method::POST, device), Some(Class::OAuth2), "a replicated write, like /token");
        for login in [
            "/v4/federation/identity_providers/{idp_id}/auth",
            "/v4/federation/identity_providers/{idp_id}/jwt",
            "/v4/federation/oidc/callback",
            "/v4/k8s_auth/instances/{instance_id}/auth",
            "/v4/spiffe/trust_domains/{trust_domain_id}/auth",
        ] {
            assert_eq!(Class::of(&Method::POST, login), Some(Class::TokenIssue), "{login}");
        }
    }

    /// Through the real router: the unauthenticated browser-login start is limited per
    /// source like token issue (its route template is the one the router matches).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_federation_browser_start_is_limited_per_source() {
        use crate::testkit::TestNode;
        use serde_json::json;

        let t =
            TestNode::start_with(&[("auth", "rate_limit_per_second", "1"), ("auth", "rate_limit_burst", "2")]).await;
        let path = "/v4/federation/identity_providers/no-such-idp/auth";
        let body = json!({"redirect_uri": "https://app.example/cb"});
        let mut passed = 0;
        let limited = loop {
            let r = t.call(Method::POST, path, None, Some(body.clone())).await;
            if r.status == StatusCode::TOO_MANY_REQUESTS || passed == 10 {
                break r;
            }
            assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
            passed += 1;
        };
        // (the node's start-up login came from the same test address and took one)
        assert!((1..10).contains(&passed), "{passed} requests passed");
        assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS, "{}", limited.body);
        assert!(limited.headers.contains_key("retry-after"));
    }

    /// Through the real router: the password change and signed-token routes answer 429 with
    /// `Retry-After` once their source is over the limit, each class on its own buckets, and a
    /// trusted proxy's `X-Forwarded-For` names the source.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn password_change_and_signed_tokens_are_limited_per_source() {
        use crate::state::Reader;
        use crate::testkit::{send_with_headers, TestNode};
        use serde_json::json;

        // The test client's address is 192.0.2.1 (see testkit), listed here as a proxy.
        let t = TestNode::start_with(&[
            ("auth", "rate_limit_per_second", "1"),
            ("auth", "rate_limit_burst", "2"),
            ("api", "trusted_proxies", "192.0.2.1"),
        ])
        .await;
        let user = t.node.engine.read().bootstrap_info().unwrap().unwrap().admin_user_id;
        let path = format!("/v3/users/{user}/password");
        let change = json!({"user": {"original_password": "wrong", "password": "another-password"}});
        let send = |headers: &'static [(&'static str, &'static str)]| {
            send_with_headers(&t.router, Method::POST, &path, headers, Some(change.clone()))
        };
        // The burst passes, then 429 (a slow machine may refill one token in between).
        let mut passed = 0;
        let limited = loop {
            let r = send(&[]).await;
            if r.status == StatusCode::TOO_MANY_REQUESTS || passed == 10 {
                break r;
            }
            passed += 1;
        };
        assert!((2..10).contains(&passed), "{passed} requests passed");
        assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS, "{}", limited.body);
        assert_eq!(limited.body["error"]["message"], "Too many password change requests; retry later.");
        let retry: u64 = limited.headers["retry-after"].to_str().unwrap().parse().unwrap();
        assert!((1..=2).contains(&retry), "{retry}");
        // Behind the trusted proxy, the forwarded client has its own bucket.
        let r = send(&[("x-forwarded-for", "203.0.113.50, 198.51.100.9")]).await;
        assert_ne!(r.status, StatusCode::TOO_MANY_REQUESTS, "{}", r.body);

        // Another class, another bucket: token issue still works for this source.
        let scope = json!({"project": {"name": "admin", "domain": {"id": "default"}}});
        assert_eq!(t.try_token("admin", "secret", scope).await.status, StatusCode::OK);

        let unsigned = json!({"credentials": {"access": "nope", "signature": "x", "params": {}}});
        let mut limited = None;
        for i in 0..10 {
            let route = if i % 2 == 0 { "/v3/sigtokens" } else { "/v3/ec2tokens" };
            let r = t.call(Method::POST, route, None, Some(unsigned.clone())).await;
            if r.status == StatusCode::TOO_MANY_REQUESTS {
                limited = Some((i, r));
                break;
            }
            assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{route}: {}", r.body);
        }
        let (i, r) = limited.expect("signed-request tokens are limited");
        assert!(i >= 2, "the burst passes first");
        assert!(r.headers.contains_key("retry-after"));
    }

    #[test]
    fn classes_have_their_own_buckets() {
        let limits = RateLimits::new(1, 1, (1, 1), Vec::new());
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        assert_eq!(limits.class(Class::PasswordChange).unwrap().check(a), Ok(()));
        assert!(limits.class(Class::PasswordChange).unwrap().check(a).is_err());
        assert_eq!(limits.class(Class::TokenIssue).unwrap().check(a), Ok(()));
        assert_eq!(limits.class(Class::SignedToken).unwrap().check(a), Ok(()));
        assert!(RateLimits::new(0, 5, (0, 0), Vec::new()).token.is_none());
    }
}
