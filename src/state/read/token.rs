//! What token validation reads of the meta and revocation column families.

use idnode_keys::TokenKeyRing;
use idnode_storage::Result;

use super::reader::Reader;
use crate::state::cf;
use crate::state::keys;

pub trait TokenReads: Reader {
    /// The replicated token key ring; `None` before bootstrap.
    fn token_keys(&self) -> Result<Option<TokenKeyRing>> {
        self.get(cf::META, keys::META_TOKEN_KEYS)
    }

    /// Whether a token audit id is revoked (its entry is checked for presence only).
    fn audit_id_revoked(&self, audit_id: &str) -> Result<bool> {
        self.contains_key(cf::REVOCATIONS, audit_id.as_bytes())
    }
}

impl<R: Reader + ?Sized> TokenReads for R {}
