//! Credentials (`/v3/credentials`) as a collection (one record: `Reader::credential`).

use idnode_storage::Result;

use super::reader::Reader;
use crate::state::cf;
use crate::state::model::Credential;

pub trait CredentialReads: Reader {
    /// Every credential, in id order.
    fn credentials(&self) -> Result<Vec<Credential>> {
        self.scan(cf::CREDENTIALS, b"")
    }
}

impl<R: Reader + ?Sized> CredentialReads for R {}
