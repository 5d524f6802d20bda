//! Token restrictions (`state::restrictions`).

use idnode_storage::Result;

use super::reader::Reader;
use crate::state::cf;
use crate::state::restrictions::{keys, TokenRestriction};

pub trait RestrictionReads: Reader {
    fn token_restriction(&self, id: &str) -> Result<Option<TokenRestriction>> {
        self.get(cf::RESTRICTIONS, &keys::record(id))
    }

    /// Every restriction, in id order.
    fn token_restrictions(&self) -> Result<Vec<TokenRestriction>> {
        self.scan(cf::RESTRICTIONS, keys::RECORD_PREFIX)
    }
}

impl<R: Reader + ?Sized> RestrictionReads for R {}
