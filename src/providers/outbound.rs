//! Requests this node makes to the providers administrators register (key sets, discovery
//! documents, token endpoints, Kubernetes TokenReview APIs): a domain manager chooses those
//! URLs, so without care they would let them make the node reach its own network (SSRF).
//!
//! Unless `[federation] allow_private_networks` is on, a request goes only to public
//! addresses: a URL whose host is a literal non-public address or `localhost` is refused
//! before anything is sent, and a name is resolved by [`PublicOnly`], which refuses the name
//! when any of its addresses is not public (so a name cannot be re-pointed at an internal
//! address between the check and the connect: the check is the resolution the connection
//! uses). Redirects are never followed and no proxy is used (a proxy would resolve the name
//! itself). Every request is bounded in time ([`TIMEOUT`]) and per target host in rate
//! (`[federation] outbound_rate_limit` per minute), and a host that could not be reached is
//! not asked again for [`DOWN_FOR`].

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use governor::{DefaultKeyedRateLimiter, Quota};
use tracing::Instrument;

/// Time allowed for one request, connect to last byte (and for the connect alone).
pub const TIMEOUT: Duration = Duration::from_secs(5);
/// How long a host that could not be reached (connect failure or timeout) is not asked again.
pub const DOWN_FOR: Duration = Duration::from_secs(10);
/// Hosts remembered as down at most (the oldest is forgotten first).
const MAX_DOWN_HOSTS: usize = 1024;

/// Whether `ip` is a public unicast address: not loopback, private, shared (CGNAT),
/// link-local, unspecified, broadcast, multicast, documentation, benchmarking or reserved;
/// for IPv6 also not unique-local (fc00::/7), link- or site-local, and not an embedding
/// (IPv4-mapped or -compatible, NAT64, 6to4) of an IPv4 address that is not public.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (b == 18 || b == 19))
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    if ip.is_unspecified() || ip.is_loopback() {
        return false;
    }
    // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible, deprecated)
    if s[..5] == [0; 5] && (s[5] == 0xffff || s[5] == 0) {
        return is_public_v4(embedded(s[6], s[7]));
    }
    // 64:ff9b::/96 (NAT64)
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return is_public_v4(embedded(s[6], s[7]));
    }
    // 2002::/16 (6to4)
    if s[0] == 0x2002 {
        return is_public_v4(embedded(s[1], s[2]));
    }
    !((s[0] & 0xff00) == 0xff00 // multicast
        || (s[0] & 0xfe00) == 0xfc00 // unique local
        || (s[0] & 0xffc0) == 0xfe80 // link-local
        || (s[0] & 0xffc0) == 0xfec0 // site-local (deprecated)
        || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
        || s[..4] == [0x100, 0, 0, 0]) // discard-only
}

/// Why `host` (a URL's host: a name, an IPv4 address or a bracketed IPv6 address) is not a
/// public one on its face, or `None`. Names other than `localhost` are judged when resolved.
pub fn literal_host_refusal(host: &url::Host<&str>) -> Option<&'static str> {
    match host {
        url::Host::Ipv4(ip) if !is_public_v4(*ip) => Some("a loopback, private or otherwise non-public address"),
        url::Host::Ipv6(ip) if !is_public_v6(*ip) => Some("a loopback, private or otherwise non-public address"),
        url::Host::Domain(d) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            (d == "localhost" || d.ends_with(".localhost")).then_some("localhost")
        }
        _ => None,
    }
}

/// Why the URL `u` may not be fetched under a public-only policy (unparsable, no host, or a
/// literal non-public host), or `None`.
pub fn url_refusal(u: &str) -> Option<String> {
    let Ok(url) = url::Url::parse(u) else { return Some("not a URL".into()) };
    let Some(host) = url.host() else { return Some("no host".into()) };
    literal_host_refusal(&host).map(|why| format!("its host is {why}"))
}

/// A DNS resolver that answers only names whose every address is public.
#[derive(Debug, Clone, Copy, Default)]
pub struct PublicOnly;

/// The error of a refused resolution (it names the host, never the addresses).
#[derive(Debug, thiserror::Error)]
#[error("{0} resolves to a non-public address")]
pub struct NotPublic(String);

/// The addresses of a resolution, all public, or an error: one non-public address refuses
/// the name (an attacker's name may list an internal address beside a public one).
pub fn only_public(name: &str, addrs: Vec<SocketAddr>) -> Result<Vec<SocketAddr>, NotPublic> {
    if addrs.iter().any(|a| !is_public(a.ip())) {
        return Err(NotPublic(name.to_string()));
    }
    Ok(addrs)
}

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let name = name.as_str().to_string();
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            let addrs = only_public(&name, addrs)?;
            Ok::<reqwest::dns::Addrs, Box<dyn std::error::Error + Send + Sync>>(Box::new(addrs.into_iter()))
        })
    }
}

/// The node's policy and bookkeeping for outbound provider requests (one per node).
pub struct Outbound {
    allow_private: bool,
    /// Requests per target host (`host:port`) and minute.
    limiter: Option<DefaultKeyedRateLimiter<String>>,
    /// Hosts that could not be reached, and when.
    down: Mutex<HashMap<String, Instant>>,
    client: reqwest::Client,
}

impl Outbound {
    /// `per_minute` 0: no rate limit.
    pub fn new(allow_private: bool, per_minute: u32) -> Result<Outbound, String> {
        let limiter = NonZeroU32::new(per_minute).map(|n| DefaultKeyedRateLimiter::keyed(Quota::per_minute(n)));
        let client = builder(allow_private).build().map_err(|e| format!("no HTTP client: {e}"))?;
        Ok(Outbound { allow_private, limiter, down: Mutex::new(HashMap::new()), client })
    }

    /// The policy tests use: loopback allowed, no rate limit.
    #[cfg(test)]
    pub fn permissive() -> Arc<Outbound> {
        Arc::new(Outbound::new(true, 0).expect("client"))
    }

    /// A client builder with the policy's limits (time, no redirects, no proxy) and, unless
    /// private networks are allowed, the public-only resolver.
    pub fn builder(&self) -> reqwest::ClientBuilder {
        builder(self.allow_private)
    }

    /// The shared client (public roots) built by [`Outbound::builder`].
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// Sends `req` with `client` (built by [`Outbound::builder`]) if the policy allows it: its
    /// host is not a literal non-public one, is not known to be down, and is within its rate.
    /// The error says why, for the server's log only.
    pub async fn send(
        &self,
        client: &reqwest::Client,
        req: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, String> {
        let mut req = req.build().map_err(|e| format!("no request: {}", e.without_url()))?;
        let host_name = req.url().host_str().unwrap_or("").to_string();
        let span = idnode_raft::traced_span!(
            "outbound",
            otel.name = %format_args!("{} {host_name}", req.method()),
            otel.kind = "client",
            server.address = %host_name,
            url.path = req.url().path(),
        );
        idnode_raft::trace_context::inject_within(&span, req.headers_mut());
        self.send_built(client, req).instrument(span).await
    }

    async fn send_built(&self, client: &reqwest::Client, req: reqwest::Request) -> Result<reqwest::Response, String> {
        let url = req.url();
        let host = url.host().ok_or("the URL has no host")?;
        if !self.allow_private {
            if let Some(why) = literal_host_refusal(&host) {
                return Err(format!("refused: the host is {why}"));
            }
        }
        let target = format!("{host}:{}", url.port_or_known_default().unwrap_or(0));
        if self.is_down(&target) {
            return Err(format!("{target} could not be reached recently; not asked again yet"));
        }
        if let Some(l) = &self.limiter {
            l.check_key(&target).map_err(|_| format!("too many requests to {target}"))?;
        }
        match client.execute(req).await {
            Ok(resp) => Ok(resp),
            Err(e) => {
                if e.is_connect() || e.is_timeout() {
                    self.mark_down(target);
                }
                Err(format!("request failed: {}", describe(&e.without_url())))
            }
        }
    }

    fn is_down(&self, target: &str) -> bool {
        let down = self.down.lock().unwrap_or_else(|p| p.into_inner());
        down.get(target).is_some_and(|at| at.elapsed() < DOWN_FOR)
    }

    fn mark_down(&self, target: String) {
        let mut down = self.down.lock().unwrap_or_else(|p| p.into_inner());
        down.retain(|_, at| at.elapsed() < DOWN_FOR);
        if down.len() >= MAX_DOWN_HOSTS {
            if let Some(oldest) = down.iter().min_by_key(|(_, at)| **at).map(|(k, _)| k.clone()) {
                down.remove(&oldest);
            }
        }
        down.insert(target, Instant::now());
    }

    /// Forgets hosts whose quota is full again.
    pub fn housekeep(&self) {
        if let Some(l) = &self.limiter {
            l.retain_recent();
            l.shrink_to_fit();
        }
    }
}

fn builder(allow_private: bool) -> reqwest::ClientBuilder {
    let b = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .connect_timeout(TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy();
    if allow_private {
        b
    } else {
        b.dns_resolver(Arc::new(PublicOnly))
    }
}

/// An error with its causes (TLS and resolver failures are in the sources).
pub fn describe(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        out.push_str(": ");
        out.push_str(&s.to_string());
        src = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_are_public() {
        let public =
            ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "2a00:1450:4001::1", "::ffff:8.8.8.8", "2002:808:808::1"];
        for ip in public {
            assert!(is_public(ip.parse().unwrap()), "{ip} is public");
        }
        let private = [
            "127.0.0.1",
            "127.1.2.3",
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "0.1.2.3",
            "100.64.0.1",
            "192.0.0.8",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "192.0.2.1",
            "::1",
            "::",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "64:ff9b::a00:1",
            "2002:7f00:1::1",
            "100::1",
        ];
        for ip in private {
            assert!(!is_public(ip.parse().unwrap()), "{ip} is not public");
        }
    }

    #[test]
    fn literal_loopback_private_and_localhost_hosts_are_refused_by_url() {
        for u in [
            "http://127.0.0.1:8080/jwks",
            "https://10.0.0.1/jwks",
            "https://[::1]/x",
            "https://[::ffff:127.0.0.1]/x",
            "https://[fd00::1]/x",
            "https://[fe80::1]/x",
            "https://localhost/x",
            "https://LocalHost./x",
            "https://api.localhost/x",
            "https://169.254.169.254/latest",
            "https://0.0.0.0/",
            "https://2130706433/",
        ] {
            assert!(url_refusal(u).is_some(), "{u} is refused");
        }
        for u in ["https://idp.example.com/jwks", "https://8.8.8.8/jwks", "https://[2606:4700::1]/x"] {
            assert_eq!(url_refusal(u), None, "{u} is allowed");
        }
    }

    #[tokio::test]
    async fn the_resolver_refuses_names_with_a_non_public_address() {
        use reqwest::dns::Resolve;
        use std::str::FromStr;
        // `localhost` resolves to loopback without DNS (the hosts file).
        let err = PublicOnly.resolve(reqwest::dns::Name::from_str("localhost").unwrap()).await.err();
        assert!(err.is_some_and(|e| e.to_string().contains("non-public")), "localhost refused at resolution");
        let mixed = vec!["8.8.8.8:0".parse().unwrap(), "10.0.0.1:0".parse().unwrap()];
        assert!(only_public("rebind.example", mixed).is_err(), "one private address refuses the name");
        let fine = vec!["8.8.8.8:0".parse().unwrap(), "[2606:4700::1]:0".parse().unwrap()];
        assert_eq!(only_public("ok.example", fine.clone()).unwrap(), fine);
    }

    /// A loopback server is not reached under the public-only policy, neither by address nor
    /// by a name that resolves to it; with private networks allowed it is.
    #[tokio::test]
    async fn a_loopback_server_is_reached_only_when_private_networks_are_allowed() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let h = hits.clone();
        let app = axum::Router::new().route(
            "/x",
            axum::routing::get(move || {
                h.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                async { "ok" }
            }),
        );
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let strict = Outbound::new(false, 0).unwrap();
        for u in [format!("http://127.0.0.1:{port}/x"), format!("http://localhost:{port}/x")] {
            let err = strict.send(strict.client(), strict.client().get(&u)).await.unwrap_err();
            assert!(err.contains("refused") || err.contains("non-public"), "{u}: {err}");
        }
        // The resolver, not only the literal check: a client built by the policy refuses a
        // name that resolves to loopback even when asked directly.
        let direct = strict.client().get(format!("http://localhost:{port}/x")).send().await;
        assert!(direct.is_err(), "the resolver refuses localhost");
        assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 0, "nothing reached the server");
        let open = Outbound::new(true, 0).unwrap();
        let r = open.send(open.client(), open.client().get(format!("http://127.0.0.1:{port}/x"))).await.unwrap();
        assert_eq!(r.status(), 200);
    }

    #[tokio::test]
    async fn requests_per_host_are_limited_and_an_unreachable_host_is_not_retried_at_once() {
        let o = Outbound::new(true, 2).unwrap();
        // Nothing listens on port 1: a connect failure.
        let url = "http://127.0.0.1:1/x";
        let first = o.send(o.client(), o.client().get(url)).await.unwrap_err();
        assert!(first.contains("request failed"), "{first}");
        let second = o.send(o.client(), o.client().get(url)).await.unwrap_err();
        assert!(second.contains("not asked again"), "{second}");
        let limited = Outbound::new(true, 2).unwrap();
        for _ in 0..2 {
            let e = limited.send(limited.client(), limited.client().get("http://127.0.0.1:3/x")).await.unwrap_err();
            assert!(!e.contains("too many"), "{e}");
            limited.down.lock().unwrap().clear();
        }
        let e = limited.send(limited.client(), limited.client().get("http://127.0.0.1:3/x")).await.unwrap_err();
        assert!(e.contains("too many requests"), "{e}");
    }
}
