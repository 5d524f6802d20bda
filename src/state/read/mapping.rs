//! Stored mapping rulesets (`state::mapping`) and their revision counter.

use idnode_storage::Result;

use super::reader::Reader;
use crate::state::cf;
use crate::state::mapping::{keys, MappingRecord};

pub trait MappingReads: Reader {
    fn mapping_record(&self, mapping_id: &str) -> Result<Option<MappingRecord>> {
        self.get(cf::MAPPINGS, &keys::ruleset(mapping_id))
    }

    /// Every stored ruleset, in `mapping_id` order.
    fn mapping_records(&self) -> Result<Vec<MappingRecord>> {
        self.scan(cf::MAPPINGS, keys::RULESET_PREFIX)
    }

    /// The rulesets' revision (`keys::REVISION`); 0 before any ruleset write.
    fn mappings_revision(&self) -> Result<u64> {
        Ok(self.get(cf::MAPPINGS, keys::REVISION)?.unwrap_or(0))
    }
}

impl<R: Reader + ?Sized> MappingReads for R {}
