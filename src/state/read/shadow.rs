//! The shadow registry of virtual users and the groups `local` rules synced (`state::shadow`).

use idnode_storage::Result;

use super::reader::Reader;
use crate::state::cf;
use crate::state::shadow::{keys, VirtualUserMetadata};

pub trait ShadowReads: Reader {
    fn virtual_user_record(&self, user_id: &str) -> Result<Option<VirtualUserMetadata>> {
        self.get(cf::SHADOW, &keys::record(user_id))
    }

    /// The groups a `local` rule last synced a real user into (none when it never did).
    fn synced_groups(&self, user_id: &str) -> Result<Vec<String>> {
        Ok(self.get(cf::SHADOW, &keys::synced_groups(user_id))?.unwrap_or_default())
    }
}

impl<R: Reader + ?Sized> ShadowReads for R {}
