//! SCIM realms' invariants: one realm per (`domain_id`, `provider_id`), in an existing domain,
//! always naming a registered OIDC identity provider.

use super::super::command::{not_found, Applied, ApplyError, ApplyResult};
use super::super::providers::{keys as provider_keys, ProviderKind};
use super::super::scim::{keys, ScimApplied, ScimCommand, ScimRealm};
use super::super::{cf, Reader, Tx};
use super::Fatal;

pub fn apply(tx: &mut Tx<'_>, cmd: ScimCommand) -> Result<ApplyResult, Fatal> {
    match cmd {
        ScimCommand::PutRealm { realm, create } => put_realm(tx, *realm, create),
    }
}

fn put_realm(tx: &mut Tx<'_>, mut realm: ScimRealm, create: bool) -> Result<ApplyResult, Fatal> {
    let key = keys::realm(&realm.domain_id, &realm.provider_id);
    let before = tx.get::<ScimRealm>(cf::SCIM, &key)?;
    match (&before, create) {
        (Some(_), true) => {
            return Ok(Err(ApplyError::Conflict(format!(
                "A SCIM realm for provider {} already exists in domain {}.",
                realm.provider_id, realm.domain_id
            ))))
        }
        (None, false) => return Ok(Err(not_found("scim_realm", &realm.provider_id))),
        (Some(old), false) => realm.created_at = old.created_at,
        (None, true) => {}
    }
    if tx.domain(&realm.domain_id)?.is_none() {
        return Ok(Err(not_found("domain", &realm.domain_id)));
    }
    if tx.get_raw(cf::PROVIDERS, &provider_keys::record(ProviderKind::Oidc, &realm.idp_id))?.is_none() {
        return Ok(Err(not_found("identity_provider", &realm.idp_id)));
    }
    tx.put(cf::SCIM, key, &realm)?;
    Ok(Ok(Applied::Scim(ScimApplied::Realm(Box::new(realm)))))
}
