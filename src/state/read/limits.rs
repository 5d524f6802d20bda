//! Unified limits (`state::limits`).

use idnode_storage::Result;

use super::reader::Reader;
use crate::state::cf;
use crate::state::limits::{keys, Limit, RegisteredLimit};

pub trait LimitReads: Reader {
    fn registered_limit(&self, id: &str) -> Result<Option<RegisteredLimit>> {
        self.get(cf::LIMITS, &keys::registered(id))
    }

    /// Every registered limit, in id order.
    fn registered_limits(&self) -> Result<Vec<RegisteredLimit>> {
        self.scan(cf::LIMITS, keys::REGISTERED_PREFIX)
    }

    fn limit(&self, id: &str) -> Result<Option<Limit>> {
        self.get(cf::LIMITS, &keys::limit(id))
    }

    /// Every project and domain limit, in id order.
    fn limits(&self) -> Result<Vec<Limit>> {
        self.scan(cf::LIMITS, keys::LIMIT_PREFIX)
    }
}

impl<R: Reader + ?Sized> LimitReads for R {}
