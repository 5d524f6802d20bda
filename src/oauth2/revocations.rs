//! The revoked access-token ids a domain publishes (`/jwks/revocation`), read from the state
//! once per applied state and domain rather than on every request: the list is public and
//! unauthenticated, and each read walks every revoked id of the domain.

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue};
use axum::response::Response;

use super::provider::Provider;
use crate::clock::now_secs;
use crate::context::Core;
use crate::state::read::OAuth2Reads;

/// Domains' lists kept at most, and their bytes.
pub const CACHED_DOMAINS: usize = 1024;
pub const CACHED_BYTES: usize = 32 << 20;

/// A domain's rendered list, exact until `valid_until` (the earliest `exp` in it) as long as
/// the state does not change.
pub struct RevokedList {
    body: Bytes,
    valid_until: i64,
}

#[allow(clippy::ptr_arg)] // the signature of the cache's size function: its keys are Strings
pub fn footprint(domain_id: &String, list: &Arc<RevokedList>) -> usize {
    domain_id.len() + list.body.len()
}

/// `{"revoked_jtis": [...]}`: the domain's revoked ids whose token has not expired at `at`.
pub fn compute(node: &Core, domain_id: &str, at: i64) -> Result<RevokedList, idnode_storage::StorageError> {
    let mut ids = Vec::new();
    let mut valid_until = i64::MAX;
    for (id, exp) in node.engine.read().oauth2_revoked_jtis(domain_id)? {
        if exp > at {
            valid_until = valid_until.min(exp);
            ids.push(id);
        }
    }
    let body = serde_json::to_vec(&serde_json::json!({ "revoked_jtis": ids }))
        .map_err(|e| idnode_storage::StorageError::Codec(e.to_string()))?;
    Ok(RevokedList { body: Bytes::from(body), valid_until })
}

/// The list as of the state this node has applied, from the cache when it holds it.
pub fn current(
    node: &Core,
    provider: &Provider,
    domain_id: &str,
) -> Result<Arc<RevokedList>, idnode_storage::StorageError> {
    let version = node.app.state_version();
    let at = now_secs();
    let key = domain_id.to_string();
    if let Some(list) = provider.revoked.get(&key, version).filter(|l| at < l.valid_until) {
        return Ok(list);
    }
    let list = Arc::new(compute(node, domain_id, at)?);
    provider.revoked.insert(key, list.clone(), version);
    Ok(list)
}

/// The list as a JSON answer that relying parties may cache for `max_age` seconds.
pub fn response(list: &RevokedList, max_age: u32) -> Response {
    let mut resp = Response::new(Body::from(list.body.clone()));
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Ok(v) = HeaderValue::from_str(&format!("public, max-age={max_age}")) {
        headers.insert(header::CACHE_CONTROL, v);
    }
    resp
}

#[cfg(test)]
impl RevokedList {
    pub fn ids(&self) -> Vec<String> {
        let v: serde_json::Value = serde_json::from_slice(&self.body).unwrap_or_default();
        v["revoked_jtis"].as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_string)).collect()
    }
}
