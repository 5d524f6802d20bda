//! Users and groups as collections (one record: `Reader::user`, `Reader::group`).

use idnode_storage::Result;

use super::reader::Reader;
use crate::state::cf;
use crate::state::keys;
use crate::state::model::{Group, User};

pub trait IdentityReads: Reader {
    /// Every user, in id order.
    fn users(&self) -> Result<Vec<User>> {
        self.scan(cf::USERS, b"")
    }

    /// Every group, in id order.
    fn groups(&self) -> Result<Vec<Group>> {
        self.scan(cf::GROUPS, keys::GROUP_PREFIX)
    }
}

impl<R: Reader + ?Sized> IdentityReads for R {}
