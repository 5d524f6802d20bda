//! A user's or group's SCIM ownership records, dropped wherever the resource goes: shared by
//! the SCIM purge and by the v3 deletes of users, groups and domains.

use super::super::cf;
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::super::scim::{keys, Kind, ScimResourceIndex};
use super::fatal::Fatal;

/// Drops the SCIM records of a user or group that is going away, however it goes (a purge,
/// or the v3 API deleting it or its domain).
pub fn forget(tx: &mut Tx<'_>, kind: Kind, id: &str) -> Result<(), Fatal> {
    let Some(idx) = tx.get::<ScimResourceIndex>(cf::SCIM, &keys::index(kind, id))? else { return Ok(()) };
    if let Some(ext) = &idx.external_id {
        tx.delete_name(kind.external_ns(), &idx.domain_id, ext);
    }
    tx.delete(cf::SCIM, keys::owned(&idx.domain_id, &idx.provider_id, kind, id));
    tx.delete(cf::SCIM, keys::deprovisioned(kind, id));
    tx.delete(cf::SCIM, keys::index(kind, id));
    Ok(())
}
