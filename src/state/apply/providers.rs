//! The provider registries' invariants: ids are unique, a `provider_id` is unique per kind
//! and domain (global providers share one scope; compared case-insensitively, as names are), the owning domain exists, and an update
//! keeps the record's kind and domain.

use super::super::cf;
use super::super::command::{not_found, Applied, ApplyError, ApplyResult};
use super::super::providers::{keys, Provider, ProviderApplied, ProviderCommand, ProviderKind};
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::fatal::Fatal;

pub fn apply(tx: &mut Tx<'_>, cmd: ProviderCommand) -> Result<ApplyResult, Fatal> {
    match cmd {
        ProviderCommand::Put { provider, create } => put(tx, *provider, create),
        ProviderCommand::Delete { kind, id } => delete(tx, kind, &id),
    }
}

fn conflict(m: String) -> Result<ApplyResult, Fatal> {
    Ok(Err(ApplyError::Conflict(m)))
}

fn put(tx: &mut Tx<'_>, p: Provider, create: bool) -> Result<ApplyResult, Fatal> {
    let kind = p.kind();
    let key = keys::record(kind, &p.id);
    let before = tx.get::<Provider>(cf::PROVIDERS, &key)?;
    match (&before, create) {
        (Some(_), true) => {
            return conflict(format!(
                "Conflict occurred attempting to store {} - Duplicate ID, {}.",
                kind.resource(),
                p.id
            ))
        }
        (None, false) => return Ok(Err(not_found(kind.resource(), &p.id))),
        (Some(b), false) if b.domain_id != p.domain_id => {
            return Ok(Err(ApplyError::Invalid("a provider's domain cannot change".into())))
        }
        _ => {}
    }
    if let Some(d) = &p.domain_id {
        if tx.domain(d)?.is_none() {
            return Ok(Err(not_found("domain", d)));
        }
    }
    let scope = p.domain_id.as_deref().unwrap_or("");
    if let Some(owner) = tx.id_by_name(kind.handle_ns(), scope, &p.provider_id)? {
        if owner != p.id {
            return conflict(format!(
                "Conflict occurred attempting to store {} - Duplicate provider_id, {}.",
                kind.resource(),
                p.provider_id
            ));
        }
    }
    if let Some(b) = &before {
        tx.delete_name(kind.handle_ns(), scope, &b.provider_id);
    }
    tx.put_name(kind.handle_ns(), scope, &p.provider_id, &p.id);
    tx.put(cf::PROVIDERS, key, &p)?;
    Ok(Ok(Applied::Providers(ProviderApplied::Provider(Box::new(p)))))
}

fn delete(tx: &mut Tx<'_>, kind: ProviderKind, id: &str) -> Result<ApplyResult, Fatal> {
    let key = keys::record(kind, id);
    let Some(p) = tx.get::<Provider>(cf::PROVIDERS, &key)? else {
        return Ok(Err(not_found(kind.resource(), id)));
    };
    tx.delete_name(kind.handle_ns(), p.domain_id.as_deref().unwrap_or(""), &p.provider_id);
    tx.delete(cf::PROVIDERS, key);
    Ok(Ok(Applied::Providers(ProviderApplied::Done)))
}

#[cfg(test)]
#[path = "providers_tests.rs"]
mod tests;
