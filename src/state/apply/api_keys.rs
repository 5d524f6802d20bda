//! API keys' invariants: a `client_id` and a secret hash belong to one key, a key belongs to
//! one domain for good (every command names it, and a key of another domain is not found),
//! and a revoked key never comes back.

use super::super::api_keys::{keys, ApiKey, ApiKeyApplied, ApiKeyCommand};
use super::super::cf;
use super::super::command::{not_found, Applied, ApplyError, ApplyResult};
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::fatal::Fatal;

/// Most uses one `Used` command records (bounded apply).
pub const MAX_USES: usize = 1000;

fn key_of(tx: &Tx<'_>, client_id: &str, domain_id: &str) -> Result<Option<ApiKey>, Fatal> {
    Ok(tx.get::<ApiKey>(cf::API_KEYS, &keys::record(client_id))?.filter(|k| k.domain_id == domain_id))
}

fn stored(tx: &mut Tx<'_>, k: ApiKey) -> Result<ApplyResult, Fatal> {
    tx.put(cf::API_KEYS, keys::record(&k.client_id), &k)?;
    Ok(Ok(Applied::ApiKeys(ApiKeyApplied::Key(Box::new(k)))))
}

pub fn apply(tx: &mut Tx<'_>, cmd: ApiKeyCommand) -> Result<ApplyResult, Fatal> {
    match cmd {
        ApiKeyCommand::Create(k) => {
            if tx.get_raw(cf::API_KEYS, &keys::record(&k.client_id))?.is_some()
                || tx.get_raw(cf::API_KEYS, &keys::by_hash(&k.secret_hash))?.is_some()
            {
                return Ok(Err(ApplyError::Conflict("An API key with this client_id already exists.".into())));
            }
            if tx.domain(&k.domain_id)?.is_none() {
                return Ok(Err(not_found("domain", &k.domain_id)));
            }
            tx.put(cf::API_KEYS, keys::by_hash(&k.secret_hash), &k.client_id)?;
            stored(tx, *k)
        }
        ApiKeyCommand::Update { client_id, domain_id, allowed_ips, description, enabled } => {
            let Some(mut k) = key_of(tx, &client_id, &domain_id)? else {
                return Ok(Err(not_found("api_key", &client_id)));
            };
            if enabled == Some(true) && k.revoked_at.is_some() {
                return Ok(Err(ApplyError::Conflict(format!(
                    "API key {client_id} is revoked: it cannot be re-enabled."
                ))));
            }
            if let Some(v) = allowed_ips {
                k.allowed_ips = v;
            }
            if let Some(v) = description {
                k.description = v;
            }
            if let Some(v) = enabled {
                k.enabled = v;
            }
            stored(tx, k)
        }
        ApiKeyCommand::Revoke { client_id, domain_id, by, at } => {
            let Some(mut k) = key_of(tx, &client_id, &domain_id)? else {
                return Ok(Err(not_found("api_key", &client_id)));
            };
            k.enabled = false;
            if k.revoked_at.is_none() {
                k.revoked_at = Some(at);
                k.revoked_by = Some(by);
            }
            stored(tx, k)
        }
        ApiKeyCommand::Used { uses } => {
            for (client_id, at) in uses.into_iter().take(MAX_USES) {
                if let Some(mut k) = tx.get::<ApiKey>(cf::API_KEYS, &keys::record(&client_id))? {
                    if k.last_used_at.is_none_or(|t| t < at) {
                        k.last_used_at = Some(at);
                        tx.put(cf::API_KEYS, keys::record(&client_id), &k)?;
                    }
                }
            }
            Ok(Ok(Applied::ApiKeys(ApiKeyApplied::Done)))
        }
        ApiKeyCommand::Reclaim { revoked_before, limit } => {
            let mut gone = Vec::new();
            for k in tx.scan::<ApiKey>(cf::API_KEYS, keys::RECORD_PREFIX)? {
                if gone.len() >= limit as usize {
                    break;
                }
                let due = k.revoked_at.is_some_and(|t| t <= revoked_before);
                if due {
                    tx.delete(cf::API_KEYS, keys::by_hash(&k.secret_hash));
                    tx.delete(cf::API_KEYS, keys::record(&k.client_id));
                    gone.push(k.client_id);
                }
            }
            Ok(Ok(Applied::ApiKeys(ApiKeyApplied::Reclaimed(gone))))
        }
    }
}
