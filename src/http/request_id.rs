//! Request ids, as OpenStack services pass them along: a client's well-formed
//! `X-OpenStack-Request-Id` (Keystone's `req-<uuid>`) or `X-Request-Id` (a UUID, as load
//! balancers make them) names the request; otherwise the node makes a `req-<uuid>`. The id is
//! echoed on the answer, named in every log line of the request, in its audit events and on
//! the proposals a follower forwards, so one grep follows a request across members.

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderName, HeaderValue};

/// The header OpenStack services answer with (and accept from each other).
pub const OPENSTACK: HeaderName = HeaderName::from_static("x-openstack-request-id");
/// The header proxies and load balancers set.
pub const GENERIC: HeaderName = HeaderName::from_static("x-request-id");

/// The longest id taken from a client (a UUID with Keystone's prefix is 40 bytes).
const MAX_LEN: usize = 40;

/// One request's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(Arc<str>);

impl RequestId {
    /// The client's id when one of the headers holds a well-formed one, else a new one. A
    /// malformed id is dropped rather than refused: it is a log field, not an input.
    pub fn of(headers: &HeaderMap) -> RequestId {
        let given = |name: &HeaderName, ok: fn(&str) -> bool| {
            headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim).filter(|v| ok(v)).map(Arc::from)
        };
        given(&OPENSTACK, is_keystone_form)
            .or_else(|| given(&GENERIC, is_uuid_form))
            .map(RequestId)
            .unwrap_or_else(RequestId::new)
    }

    /// A fresh id in Keystone's form.
    pub fn new() -> RequestId {
        RequestId(Arc::from(format!("req-{}", uuid::Uuid::new_v4())))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn shared(&self) -> Arc<str> {
        self.0.clone()
    }

    /// The header value to answer with (every id here is ASCII without controls).
    pub fn header_value(&self) -> Option<HeaderValue> {
        HeaderValue::from_str(&self.0).ok()
    }
}

impl Default for RequestId {
    fn default() -> Self {
        RequestId::new()
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// oslo.middleware's rule for a global request id: `req-` and a lower-case hyphenated UUID.
fn is_keystone_form(v: &str) -> bool {
    v.strip_prefix("req-")
        .is_some_and(|u| u.len() == 36 && is_uuid_form(u) && !u.bytes().any(|b| b.is_ascii_uppercase()))
}

/// A UUID in its hyphenated or simple form, optionally with Keystone's prefix.
fn is_uuid_form(v: &str) -> bool {
    let bare = v.strip_prefix("req-").unwrap_or(v);
    v.len() <= MAX_LEN && uuid::Uuid::try_parse(bare).is_ok() && !bare.starts_with('{') && !bare.starts_with("urn:")
}

/// The id of the request being served on this task, if any (background jobs have none).
pub fn current() -> Option<Arc<str>> {
    idnode_raft::request_tag::current()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert((*k).clone(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn a_well_formed_openstack_id_is_kept() {
        let id = "req-3fa2b6c4-1d2e-4f50-9a8b-0c1d2e3f4a5b";
        assert_eq!(RequestId::of(&headers(&[(&OPENSTACK, id)])).as_str(), id);
    }

    #[test]
    fn a_load_balancer_uuid_is_kept() {
        let id = "3FA2B6C4-1D2E-4F50-9A8B-0C1D2E3F4A5B";
        assert_eq!(RequestId::of(&headers(&[(&GENERIC, id)])).as_str(), id);
        let simple = "3fa2b6c41d2e4f509a8b0c1d2e3f4a5b";
        assert_eq!(RequestId::of(&headers(&[(&GENERIC, simple)])).as_str(), simple);
    }

    #[test]
    fn the_openstack_header_wins_over_the_generic_one() {
        let os = "req-3fa2b6c4-1d2e-4f50-9a8b-0c1d2e3f4a5b";
        let generic = "9d7c3f1e-0b2a-4c5d-8e9f-a0b1c2d3e4f5";
        assert_eq!(RequestId::of(&headers(&[(&GENERIC, generic), (&OPENSTACK, os)])).as_str(), os);
    }

    #[test]
    fn malformed_ids_are_replaced() {
        for bad in [
            "",
            "req-",
            "hello",
            "req-3FA2B6C4-1D2E-4F50-9A8B-0C1D2E3F4A5B",
            "req-3fa2b6c4-1d2e-4f50-9a8b-0c1d2e3f4a5b\u{7f}",
            "req-3fa2b6c4-1d2e-4f50-9a8b-0c1d2e3f4a5b; drop",
            "{3fa2b6c4-1d2e-4f50-9a8b-0c1d2e3f4a5b}",
        ] {
            let Ok(v) = HeaderValue::from_str(bad) else { continue };
            let mut h = HeaderMap::new();
            h.insert(OPENSTACK, v);
            let id = RequestId::of(&h);
            assert_ne!(id.as_str(), bad);
            assert!(is_keystone_form(id.as_str()), "{id}");
        }
    }

    #[test]
    fn new_ids_are_in_keystones_form_and_differ() {
        let (a, b) = (RequestId::new(), RequestId::new());
        assert!(is_keystone_form(a.as_str()) && is_keystone_form(b.as_str()));
        assert_ne!(a, b);
    }
}
