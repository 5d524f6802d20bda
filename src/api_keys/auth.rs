//! Presenting an API key (`Authorization: Bearer kscim_…`): the checks every use runs, and
//! the batched `last_used_at`. Every refusal is the same 401 (unknown, malformed, wrong
//! checksum, disabled, revoked, expired, source outside `allowed_ips`), and the work does not
//! depend on how much of a guessed secret is right: the key is found by the secret's keyed
//! hash, and the stored hash is compared in constant time.
//!
//! `last_used_at` is never a write per request: each node notes uses in memory and reports
//! them through raft once per [`REPORT_EVERY`] in one command (`ApiKeyCommand::Used`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::secret;
use crate::context::Core;
use crate::http::client_ip::Cidr;
use crate::http::error::{ApiError, ApiResult};
use crate::state::api_keys::{ApiKey, ApiKeyCommand};
use crate::state::read::ApiKeyReads;
use crate::state::Command;

pub const REPORT_EVERY: Duration = Duration::from_secs(60);

fn denied() -> ApiError {
    ApiError::unauthorized("The API key is not valid.")
}

/// Uses noted since the last report, per key: the latest time.
#[derive(Default)]
pub struct Usage {
    seen: Mutex<HashMap<String, i64>>,
}

impl Usage {
    fn note(&self, client_id: &str, at: i64) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let t = seen.entry(client_id.to_string()).or_insert(at);
        *t = (*t).max(at);
    }

    fn take(&self) -> Vec<(String, i64)> {
        std::mem::take(&mut *self.seen.lock().unwrap_or_else(|p| p.into_inner())).into_iter().collect()
    }
}

/// Whether `source` may use a key limited to `allowed` (none: anywhere).
pub fn source_allowed(allowed: Option<&[String]>, source: IpAddr) -> bool {
    allowed.is_none_or(|list| list.iter().any(|c| c.parse::<Cidr>().is_ok_and(|c| c.contains(source))))
}

/// The key a request presents, if every check passes; else 401 (what SCIM's caller does,
/// without its cache).
#[cfg(test)]
pub fn authenticate(node: &Core, usage: &Usage, authorization: Option<&str>, source: IpAddr) -> ApiResult<ApiKey> {
    find(node, usage, &presented_hash(node, authorization)?, source)
}

/// The key whose secret has keyed hash `hash`, if a use of it from `source` passes [`admit`].
pub fn find(node: &Core, usage: &Usage, hash: &str, source: IpAddr) -> ApiResult<ApiKey> {
    let view = node.engine.read();
    let client_id: Option<String> = view.api_key_id_by_hash(hash)?;
    let key: ApiKey = match client_id {
        Some(id) => view.api_key(&id)?.ok_or_else(denied)?,
        None => return Err(denied()),
    };
    admit(usage, &key, hash, source)?;
    Ok(key)
}

/// The keyed hash of the secret an `Authorization: Bearer kscim_…` header presents (401 when
/// there is none, or it is malformed or fails its checksum).
pub fn presented_hash(node: &Core, authorization: Option<&str>) -> ApiResult<String> {
    let token = authorization.and_then(|v| v.strip_prefix("Bearer ")).map(str::trim).ok_or_else(denied)?;
    let secret = secret::parse(token).ok_or_else(denied)?;
    secret::hash(node, secret)
}

/// The checks of a use of `key`, found by `hash`, from `source` now (401 unless all pass);
/// notes the use for `last_used_at`. Callers that kept the key (per applied state) run these
/// on every request: expiry and the source change without a write.
pub fn admit(usage: &Usage, key: &ApiKey, hash: &str, source: IpAddr) -> ApiResult<()> {
    let now = crate::clock::now_secs();
    let usable = idnode_keys::constant_time_eq(key.secret_hash.as_bytes(), hash.as_bytes())
        && key.enabled
        && key.revoked_at.is_none()
        && now < key.expires_at
        && source_allowed(key.allowed_ips.as_deref(), source);
    if !usable {
        return Err(denied());
    }
    usage.note(&key.client_id, now);
    Ok(())
}

/// Reports the uses noted on this node (one command), if any.
pub async fn report(node: &Core, usage: &Usage) -> ApiResult<usize> {
    let uses = usage.take();
    let n = uses.len();
    let chunks: Vec<&[(String, i64)]> = uses.chunks(crate::state::apply::API_KEY_USES_PER_COMMAND).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        if let Err(e) = node.propose(Command::ApiKeys(ApiKeyCommand::Used { uses: chunk.to_vec() })).await {
            // Kept for the next report.
            chunks[i..].iter().flat_map(|c| c.iter()).for_each(|(id, at)| usage.note(id, *at));
            return Err(e);
        }
    }
    Ok(n)
}

/// Reports uses every [`REPORT_EVERY`] until the node stops.
pub async fn report_every(node: Arc<Core>, usage: Arc<Usage>) {
    let mut ticks = tokio::time::interval(REPORT_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        if let Err(e) = report(&node, &usage).await {
            tracing::warn!("API key usage report failed (kept for the next one): {}", e.message);
        }
    }
}
