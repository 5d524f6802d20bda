//! Bootstrap: once per cluster. A second bootstrap (another node, a restart) is a no-op.

use idnode_keys::IndexKey;

use super::super::cf;
use super::super::command::{Applied, ApplyResult, Bootstrap};
use super::super::index_key;
use super::super::keys::{self, ns};
use super::super::model::BootstrapInfo;
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::fatal::Fatal;
use super::{assignment, identity, resource};

/// The index key goes in first; `tx` already hashes with it (see `apply_to`).
pub fn apply(tx: &mut Tx<'_>, key: &IndexKey, b: Bootstrap) -> Result<ApplyResult, Fatal> {
    if tx.bootstrap_info()?.is_some() {
        return Ok(Ok(Applied::Bootstrapped { fresh: false }));
    }
    index_key::put(tx.batch, key);
    let admin_role_id = b.roles.first().map(|r| r.id.clone()).unwrap_or_default();
    let info = BootstrapInfo {
        admin_user_id: b.user.id.clone(),
        admin_project_id: b.project.id.clone(),
        admin_role_id,
        at: b.at,
    };
    // The state is empty at this point, so these creates cannot be refused.
    for step in [resource::create(tx, b.domain)?, resource::create(tx, b.project)?, identity::create(tx, b.user)?] {
        if let Err(e) = step {
            return Ok(Err(e));
        }
    }
    for r in &b.roles {
        tx.put_name(ns::ROLE_NAME, r.domain_id.as_deref().unwrap_or(""), &r.name, &r.id);
        tx.put(cf::ROLES, keys::role(&r.id), r)?;
    }
    for (prior, implied) in &b.implied {
        tx.put(cf::ROLES, keys::implied(prior, implied), &(prior.clone(), implied.clone()))?;
    }
    for a in &b.assignments {
        assignment::put(tx, a)?;
    }
    tx.put(cf::CATALOG, keys::region(&b.region.id), &b.region)?;
    tx.put(cf::CATALOG, keys::service(&b.service.id), &b.service)?;
    for e in &b.endpoints {
        tx.put(cf::CATALOG, keys::endpoint(&e.id), e)?;
    }
    tx.put(cf::META, keys::META_TOKEN_KEYS.to_vec(), &b.token_keys)?;
    tx.put(cf::META, keys::META_BOOTSTRAP.to_vec(), &info)?;
    Ok(Ok(Applied::Bootstrapped { fresh: true }))
}
