//! Passkeys and their pending ceremonies (`state::passkeys`).

use idnode_storage::Result;

use super::reader::Reader;
use crate::state::cf;
use crate::state::passkeys::{keys, Ceremony, StoredPasskey};

pub trait PasskeyReads: Reader {
    /// The user's passkeys, in id order.
    fn passkeys_of_user(&self, user_id: &str) -> Result<Vec<StoredPasskey>> {
        self.scan(cf::PASSKEYS, &keys::of_user(user_id))
    }

    fn passkey(&self, user_id: &str, passkey_id: &str) -> Result<Option<StoredPasskey>> {
        self.get(cf::PASSKEYS, &keys::passkey(user_id, passkey_id))
    }

    /// `user_id/passkey_id` of the passkey holding a credential id (base64url).
    fn passkey_owner(&self, credential_id: &str) -> Result<Option<String>> {
        self.get(cf::PASSKEYS, &keys::credential(credential_id))
    }

    /// The pending ceremony of a challenge (base64url), expired or not.
    fn passkey_ceremony(&self, challenge: &str) -> Result<Option<Ceremony>> {
        self.get(cf::PASSKEYS, &keys::ceremony(challenge))
    }
}

impl<R: Reader + ?Sized> PasskeyReads for R {}
