//! Projects, domains included (a domain is a project with `is_domain`).

use idnode_storage::Result;

use super::reader::Reader;
use crate::state::cf;
use crate::state::model::Project;

pub trait ResourceReads: Reader {
    /// Every project and domain, in id order.
    fn projects(&self) -> Result<Vec<Project>> {
        self.scan(cf::PROJECTS, b"")
    }
}

impl<R: Reader + ?Sized> ResourceReads for R {}
