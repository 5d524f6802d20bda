//! OS-ENDPOINT-POLICY associations go with what they name: deleting an endpoint, a service
//! (and the endpoints it takes along) or regions deletes their associations in the same
//! apply, so no replica ever holds one naming a missing record. (A deleted policy's go
//! through `DocKind::referrers`.)

use std::collections::BTreeSet;

use super::super::model::DocKind;
use super::super::read::reader::Reader;
use super::super::read::tx::Tx;
use super::fatal::Fatal;

const KIND: DocKind = DocKind::PolicyAssociation;

/// The association of an endpoint.
pub fn forget_endpoint(tx: &mut Tx<'_>, endpoint_id: &str) -> Result<(), Fatal> {
    if let Some(doc) = tx.doc(KIND, &format!("endpoint/{endpoint_id}"))? {
        super::doc::remove(tx, &doc)?;
    }
    Ok(())
}

/// The associations of a service, alone or with a region.
pub fn forget_service(tx: &mut Tx<'_>, service_id: &str) -> Result<(), Fatal> {
    let key = format!("service/{service_id}");
    if let Some(doc) = tx.doc(KIND, &key)? {
        super::doc::remove(tx, &doc)?;
    }
    super::doc::remove_children(tx, KIND, &key)
}

/// The associations naming any of `regions`.
pub fn forget_regions(tx: &mut Tx<'_>, regions: &BTreeSet<String>) -> Result<(), Fatal> {
    for doc in tx.docs(KIND)? {
        let body: serde_json::Value = serde_json::from_str(&doc.body).unwrap_or_default();
        if body.get("region_id").and_then(serde_json::Value::as_str).is_some_and(|r| regions.contains(r)) {
            super::doc::remove(tx, &doc)?;
        }
    }
    Ok(())
}
