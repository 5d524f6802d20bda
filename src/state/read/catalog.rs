//! The service catalog's collections, each in id order.

use idnode_storage::Result;

use super::reader::Reader;
use crate::state::cf;
use crate::state::keys;
use crate::state::model::{Endpoint, Region, Service};

pub trait CatalogReads: Reader {
    fn regions(&self) -> Result<Vec<Region>> {
        self.scan(cf::CATALOG, keys::REGION_PREFIX)
    }

    fn services(&self) -> Result<Vec<Service>> {
        self.scan(cf::CATALOG, keys::SERVICE_PREFIX)
    }

    fn endpoints(&self) -> Result<Vec<Endpoint>> {
        self.scan(cf::CATALOG, keys::ENDPOINT_PREFIX)
    }
}

impl<R: Reader + ?Sized> CatalogReads for R {}
