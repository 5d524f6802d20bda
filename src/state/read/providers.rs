//! The provider registries (OIDC identity providers, Kubernetes issuers, SPIFFE trust domains).

use idnode_storage::Result;

use super::reader::Reader;
use crate::state::cf;
use crate::state::providers::{keys, Provider, ProviderKind};

pub trait ProviderReads: Reader {
    fn provider(&self, kind: ProviderKind, id: &str) -> Result<Option<Provider>> {
        self.get(cf::PROVIDERS, &keys::record(kind, id))
    }

    /// Every provider of `kind`, in id order.
    fn providers_of_kind(&self, kind: ProviderKind) -> Result<Vec<Provider>> {
        self.scan(cf::PROVIDERS, &keys::records_prefix(kind))
    }
}

impl<R: Reader + ?Sized> ProviderReads for R {}
