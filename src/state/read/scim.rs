//! SCIM realms and the ownership records of the resources they provision (`state::scim`).

use idnode_storage::{decode, Result};

use super::reader::Reader;
use crate::state::cf;
use crate::state::scim::{keys, Kind, ScimRealm, ScimResourceIndex};

pub trait ScimReads: Reader {
    /// The realm of a provider coordinate.
    fn scim_realm(&self, domain_id: &str, provider_id: &str) -> Result<Option<ScimRealm>> {
        self.get(cf::SCIM, &keys::realm(domain_id, provider_id))
    }

    /// The realms of a domain, in `provider_id` order.
    fn scim_realms_of_domain(&self, domain_id: &str) -> Result<Vec<ScimRealm>> {
        self.scan(cf::SCIM, &keys::realm(domain_id, ""))
    }

    /// Whether `provider_id` has an enabled realm in `domain_id` (any domain when `None`): the
    /// mapping administration then refuses `project` authorizations.
    fn scim_realm_active(&self, domain_id: Option<&str>, provider_id: &str) -> Result<bool> {
        let prefix = match domain_id {
            Some(d) => keys::realm(d, ""),
            None => keys::REALM_PREFIX.to_vec(),
        };
        let realms: Vec<ScimRealm> = self.scan(cf::SCIM, &prefix)?;
        Ok(realms.iter().any(|x| x.enabled && x.provider_id == provider_id))
    }

    /// The ownership record of a user or group, live or deprovisioned.
    fn scim_index(&self, kind: Kind, id: &str) -> Result<Option<ScimResourceIndex>> {
        self.get(cf::SCIM, &keys::index(kind, id))
    }

    /// The ids of a realm's live resources of one kind, in id order.
    fn scim_owned_ids(&self, domain_id: &str, provider_id: &str, kind: Kind) -> Result<Vec<String>> {
        let prefix = keys::owned_prefix(domain_id, provider_id, kind);
        Ok(self
            .scan_raw(cf::SCIM, &prefix)?
            .into_iter()
            .filter_map(|(k, _)| String::from_utf8(k[prefix.len()..].to_vec()).ok())
            .collect())
    }

    /// The ownership records of every realm's resources deprovisioned at or before `cutoff`
    /// (unix seconds): the janitor's worklist.
    fn scim_deprovisioned_by(&self, cutoff: i64) -> Result<Vec<ScimResourceIndex>> {
        let mut due = Vec::new();
        for (k, v) in self.scan_raw(cf::SCIM, keys::DEPROVISIONED_PREFIX)? {
            let when: i64 = decode(&v)?;
            let Some((kind, id)) = std::str::from_utf8(&k[keys::DEPROVISIONED_PREFIX.len()..])
                .ok()
                .and_then(|rest| rest.split_once('/'))
                .and_then(|(kind, id)| Kind::parse(kind).map(|k| (k, id.to_string())))
            else {
                continue;
            };
            if when <= cutoff {
                if let Some(idx) = self.scim_index(kind, &id)? {
                    due.push(idx);
                }
            }
        }
        Ok(due)
    }
}

impl<R: Reader + ?Sized> ScimReads for R {}
