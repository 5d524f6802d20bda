//! The OAuth2 provider's records (`state::oauth2`): signing keys, clients, codes, device
//! grants, refresh families, consents and revoked access-token ids.

use idnode_storage::{decode, Result};

use super::reader::Reader;
use crate::state::cf;
use crate::state::oauth2::{keys, AuthCode, Client, Consent, DeviceGrant, RefreshFamily, SigningKeys};

pub trait OAuth2Reads: Reader {
    fn oauth2_signing_keys(&self, domain_id: &str) -> Result<Option<SigningKeys>> {
        self.get(cf::OAUTH2, &keys::signing_keys(domain_id))
    }

    /// Every domain's signing keys (one set per domain that has used its provider).
    fn oauth2_all_signing_keys(&self) -> Result<Vec<SigningKeys>> {
        self.scan(cf::OAUTH2, keys::SIGNING_KEYS_PREFIX)
    }

    fn oauth2_client(&self, domain_id: &str, client_id: &str) -> Result<Option<Client>> {
        self.get(cf::OAUTH2, &keys::client(domain_id, client_id))
    }

    /// The clients of a domain, in `client_id` order.
    fn oauth2_clients(&self, domain_id: &str) -> Result<Vec<Client>> {
        self.scan(cf::OAUTH2, &keys::clients_prefix(domain_id))
    }

    /// An authorization code by the keyed hash of its value.
    fn oauth2_code(&self, hash: &str) -> Result<Option<AuthCode>> {
        self.get(cf::OAUTH2, &keys::code(hash))
    }

    /// A device grant by the keyed hash of its device code.
    fn oauth2_device_grant(&self, hash: &str) -> Result<Option<DeviceGrant>> {
        self.get(cf::OAUTH2, &keys::device(hash))
    }

    /// The device-code hash a (normalized) user code points at; `None` also for an entry
    /// that is not text.
    fn oauth2_device_hash(&self, user_code: &str) -> Result<Option<String>> {
        Ok(self.get_raw(cf::OAUTH2, &keys::user_code(user_code))?.and_then(|h| String::from_utf8(h).ok()))
    }

    fn oauth2_family(&self, family_id: &str) -> Result<Option<RefreshFamily>> {
        self.get(cf::OAUTH2, &keys::family(family_id))
    }

    /// Every refresh family, live or not.
    fn oauth2_families(&self) -> Result<Vec<RefreshFamily>> {
        self.scan(cf::OAUTH2, keys::FAMILY_PREFIX)
    }

    /// Every refresh family of a user still stored (live or not, any client), through the
    /// `fu/{user}/{client}/{family}` index.
    fn oauth2_user_families(&self, user_id: &str) -> Result<Vec<RefreshFamily>> {
        let mut out = Vec::new();
        for (k, _) in self.scan_raw(cf::OAUTH2, &keys::user_families_prefix(user_id))? {
            let Some(id) = k.rsplit(|b| *b == b'/').next() else { continue };
            if let Some(f) = self.oauth2_family(&String::from_utf8_lossy(id))? {
                out.push(f);
            }
        }
        Ok(out)
    }

    /// When the family was last refreshed (recorded from cluster version 15 on).
    fn oauth2_family_last_used(&self, family_id: &str) -> Result<Option<i64>> {
        self.get(cf::OAUTH2, &keys::family_last_used(family_id))
    }

    fn oauth2_consent(&self, user_id: &str, client_id: &str) -> Result<Option<Consent>> {
        self.get(cf::OAUTH2, &keys::consent(user_id, client_id))
    }

    /// A user's consents, in client order.
    fn oauth2_consents(&self, user_id: &str) -> Result<Vec<Consent>> {
        self.scan(cf::OAUTH2, &keys::consents_prefix(user_id))
    }

    /// The revoked access-token ids of a domain with their tokens' expiry, in id order.
    fn oauth2_revoked_jtis(&self, domain_id: &str) -> Result<Vec<(String, i64)>> {
        let prefix = keys::revoked_jtis_prefix(domain_id);
        let mut out = Vec::new();
        for (key, v) in self.scan_raw(cf::OAUTH2, &prefix)? {
            let exp: i64 = decode(&v)?;
            out.push((String::from_utf8_lossy(&key[prefix.len()..]).into_owned(), exp));
        }
        Ok(out)
    }
}

impl<R: Reader + ?Sized> OAuth2Reads for R {}
