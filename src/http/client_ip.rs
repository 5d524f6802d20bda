//! Which address a request comes from, for per-source limits. The TCP peer, unless the peer is
//! one of the operator's proxies (`[api] trusted_proxies`): then the `X-Forwarded-For` chain
//! is walked from the right (the hop nearest to us) past every trusted proxy, and the first
//! address not trusted is the client. Everything left of it was written by the client or
//! hops it chose, so it is never believed: a client cannot pick its own bucket.

use std::net::IpAddr;
use std::str::FromStr;

use axum::http::HeaderMap;

/// An address block (`10.0.0.0/8`, `2001:db8::/32`, or one address).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    net: IpAddr,
    prefix: u8,
}

impl Cidr {
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.net, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                masked(u32::from(net).into(), self.prefix, 32) == masked(u32::from(ip).into(), self.prefix, 32)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                masked(net.into(), self.prefix, 128) == masked(ip.into(), self.prefix, 128)
            }
            _ => false,
        }
    }
}

/// The top `prefix` bits of a `width`-bit address.
fn masked(addr: u128, prefix: u8, width: u32) -> u128 {
    match u32::from(prefix) {
        0 => 0,
        p => addr >> (width - p.min(width)),
    }
}

impl FromStr for Cidr {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let net: IpAddr = addr.parse().map_err(|_| format!("{s:?} is not an IP address or CIDR block"))?;
        let net = net.to_canonical();
        let width = if net.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => width,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= width)
                .ok_or_else(|| format!("{s:?}: the prefix length must be a number from 0 to {width}"))?,
        };
        Ok(Cidr { net, prefix })
    }
}

/// A comma- or space-separated list of addresses and blocks (`[api] trusted_proxies`).
pub fn parse_list(text: &str) -> Result<Vec<Cidr>, String> {
    text.split(|c: char| c == ',' || c.is_whitespace()).filter(|p| !p.is_empty()).map(str::parse).collect()
}

/// One `X-Forwarded-For` entry: an address, possibly with a port (`192.0.2.1:4711`,
/// `[2001:db8::1]:4711`), as some proxies write it.
fn forwarded_addr(entry: &str) -> Option<IpAddr> {
    let entry = entry.trim();
    if let Ok(ip) = entry.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Some(rest) = entry.strip_prefix('[') {
        return rest.split_once(']').and_then(|(ip, _)| ip.parse().ok());
    }
    entry.rsplit_once(':').and_then(|(ip, _)| ip.parse::<std::net::Ipv4Addr>().ok()).map(IpAddr::V4)
}

/// The source of a request that arrived from `peer` with `headers`.
pub fn source(peer: IpAddr, headers: &HeaderMap, trusted: &[Cidr]) -> IpAddr {
    let is_trusted = |ip: IpAddr| trusted.iter().any(|c| c.contains(ip));
    if !is_trusted(peer) {
        return peer;
    }
    // Several headers form one list, in order.
    let chain: Vec<&str> =
        headers.get_all("x-forwarded-for").iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).collect();
    let mut nearest = peer;
    for entry in chain.iter().rev() {
        match forwarded_addr(entry) {
            Some(ip) if is_trusted(ip) => nearest = ip,
            Some(ip) => return ip,
            // A trusted hop passed on something that is no address: go no further than that hop.
            None => return nearest,
        }
    }
    nearest
}

/// The source address of a request (the peer, or what trusted proxies say it forwarded for),
/// as the rate limits and API keys' `allowed_ips` see it.
pub struct SourceIp(pub IpAddr);

/// The router state's word on which proxies' forwarding headers to believe
/// (`[api] trusted_proxies`).
pub trait TrustedProxies {
    fn trusted_proxies(&self) -> &[Cidr];
}

impl<T: TrustedProxies> TrustedProxies for std::sync::Arc<T> {
    fn trusted_proxies(&self) -> &[Cidr] {
        (**self).trusted_proxies()
    }
}

impl<S: TrustedProxies + Send + Sync> axum::extract::FromRequestParts<S> for SourceIp {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self, Self::Rejection> {
        let peer = parts
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|c| c.0.ip())
            .unwrap_or(IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED));
        Ok(SourceIp(source(peer, &parts.headers, state.trusted_proxies())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn xff(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append("x-forwarded-for", HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn blocks_parse_and_match() {
        let list = parse_list("10.0.0.0/8, 192.0.2.7 2001:db8::/32").unwrap();
        assert!(list[0].contains(ip("10.200.1.1")) && !list[0].contains(ip("11.0.0.1")));
        assert!(list[1].contains(ip("192.0.2.7")) && !list[1].contains(ip("192.0.2.8")));
        assert!(list[1].contains(ip("::ffff:192.0.2.7")), "a v4-mapped peer is its v4 address");
        assert!(list[2].contains(ip("2001:db8:ffff::1")) && !list[2].contains(ip("2001:db9::1")));
        assert!(!list[0].contains(ip("::a00:1")), "families never match");
        assert!("0.0.0.0/0".parse::<Cidr>().unwrap().contains(ip("203.0.113.9")));
        for bad in ["10.0.0.0/33", "2001:db8::/129", "proxy.example", "10.0.0.0/x", "10.0.0/8"] {
            assert!(bad.parse::<Cidr>().is_err(), "{bad}");
        }
        assert_eq!(parse_list("").unwrap(), vec![]);
    }

    #[test]
    fn an_untrusted_peer_is_the_source_whatever_the_header_says() {
        let trusted = parse_list("10.0.0.1").unwrap();
        let h = xff(&["198.51.100.7"]);
        assert_eq!(source(ip("203.0.113.5"), &h, &trusted), ip("203.0.113.5"));
        assert_eq!(source(ip("203.0.113.5"), &h, &[]), ip("203.0.113.5"), "no proxies configured");
    }

    #[test]
    fn a_trusted_chain_is_walked_from_the_right() {
        let trusted = parse_list("10.0.0.0/8").unwrap();
        let lb = ip("10.0.0.1");
        // The client forged the left-most entry; the proxies appended the real hops.
        let h = xff(&["6.6.6.6, 198.51.100.7, 10.1.1.1"]);
        assert_eq!(source(lb, &h, &trusted), ip("198.51.100.7"));
        let split = xff(&["6.6.6.6", "198.51.100.7:5123, 10.1.1.1"]);
        assert_eq!(source(lb, &split, &trusted), ip("198.51.100.7"), "several headers, a port");
        let v6 = xff(&["[2001:db8::7]:443"]);
        assert_eq!(source(lb, &v6, &trusted), ip("2001:db8::7"));
        // Every hop trusted: the farthest one is the source.
        assert_eq!(source(lb, &xff(&["10.9.9.9, 10.1.1.1"]), &trusted), ip("10.9.9.9"));
        assert_eq!(source(lb, &HeaderMap::new(), &trusted), lb, "no header: the proxy itself");
        // Garbage after trusted hops stops the walk at the last trusted hop.
        assert_eq!(source(lb, &xff(&["198.51.100.7, unknown, 10.1.1.1"]), &trusted), ip("10.1.1.1"));
    }
}
