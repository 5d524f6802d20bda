//! Users and groups as collections (one record: `Reader::user`, `Reader::group`).

use idnode_storage::Result;

use super::reader::Reader;
use crate::state::cf;
use crate::state::keys;
use crate::state::model::{ExpiringMembership, Group, User};

pub trait IdentityReads: Reader {
    /// Every user, in id order.
    fn users(&self) -> Result<Vec<User>> {
        self.scan(cf::USERS, b"")
    }

    /// When the user's information last changed (unix micros): the time apply recorded, or
    /// the creation time for a user no change was recorded for (unchanged since, or changed
    /// before the cluster ran version `apply::USER_UPDATED_VERSION`).
    fn user_updated_at(&self, user: &User) -> Result<i64> {
        Ok(self.get::<i64>(cf::PASSWORDS, &keys::user_updated(&user.id))?.unwrap_or(user.created_at))
    }

    /// Every group, in id order.
    fn groups(&self) -> Result<Vec<Group>> {
        self.scan(cf::GROUPS, keys::GROUP_PREFIX)
    }

    /// A user's expiring memberships, expired ones included (whether one still counts
    /// depends on the reader's clock: `reads::groups`).
    fn expiring_memberships_of_user(&self, user_id: &str) -> Result<Vec<ExpiringMembership>> {
        self.scan(cf::GROUPS, &keys::expiring_of_user_prefix(user_id))
    }

    /// A group's expiring memberships, expired ones included.
    fn expiring_members_of_group(&self, group_id: &str) -> Result<Vec<ExpiringMembership>> {
        self.scan(cf::GROUPS, &keys::expiring_of_group_prefix(group_id))
    }
}

impl<R: Reader + ?Sized> IdentityReads for R {}
