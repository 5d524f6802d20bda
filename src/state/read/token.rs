//! What token validation and the revocation events list read of the meta and revocation
//! column families.

use idnode_keys::TokenKeyRing;
use idnode_storage::{decode, Result};

use super::reader::Reader;
use crate::state::cf;
use crate::state::keys;
use crate::state::model::Revocation;

pub trait TokenReads: Reader {
    /// The replicated token key ring; `None` before bootstrap.
    fn token_keys(&self) -> Result<Option<TokenKeyRing>> {
        self.get(cf::META, keys::META_TOKEN_KEYS)
    }

    /// The imported Keystone fernet keys (`Command::SetKeystoneFernetKeys`), if any.
    fn keystone_fernet_keys(&self) -> Result<Option<Vec<String>>> {
        self.get(cf::META, keys::META_KEYSTONE_FERNET)
    }

    /// Keystone's `[auth] methods` as imported, when they are not its defaults.
    fn keystone_auth_methods(&self) -> Result<Option<Vec<String>>> {
        self.get(cf::META, keys::META_KEYSTONE_AUTH_METHODS)
    }

    /// Whether a token audit id is revoked (its entry is checked for presence only).
    fn audit_id_revoked(&self, audit_id: &str) -> Result<bool> {
        self.contains_key(cf::REVOCATIONS, audit_id.as_bytes())
    }

    /// Every stored revocation as (audit id, record), in audit id order, those past their time
    /// but not yet pruned included. The expiry index shares the column family under its own
    /// prefix (empty values, keys with a `/`, which no audit id has): it is skipped.
    fn revocations(&self) -> Result<Vec<(String, Revocation)>> {
        let mut out = Vec::new();
        for (key, value) in self.scan_raw(cf::REVOCATIONS, b"")? {
            if key.starts_with(keys::REVOCATION_EXPIRY) {
                continue;
            }
            out.push((String::from_utf8_lossy(&key).into_owned(), decode(&value)?));
        }
        Ok(out)
    }
}

impl<R: Reader + ?Sized> TokenReads for R {}
