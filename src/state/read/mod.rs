//! Read access shared by services (a consistent `ReadView`) and by apply (`Tx`: the engine
//! plus the writes the current command has made so far).
//!
//! Column families and key layouts stay in the state floor: features read through the
//! `Reader` methods below and the typed readers of the sibling files, one extension trait per
//! part of the model (implemented for every `Reader`), so a view or a `Tx` reads alike.

use std::sync::Arc;

use idnode_keys::IndexHasher;
use idnode_storage::{decode, Batch, Engine, Pair, ReadView, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::cf;
use super::keys::{self, name_term};
use super::model::*;

mod api_keys;
mod assignment;
mod catalog;
mod credential;
mod identity;
mod mapping;
mod oauth2;
mod passkeys;
mod providers;
mod resource;
mod scim;
mod shadow;
mod token;

pub use api_keys::ApiKeyReads;
pub use assignment::AssignmentReads;
pub use catalog::CatalogReads;
pub use credential::CredentialReads;
pub use identity::IdentityReads;
pub use mapping::MappingReads;
pub use oauth2::OAuth2Reads;
pub use passkeys::PasskeyReads;
pub use providers::ProviderReads;
pub use resource::ResourceReads;
pub use scim::ScimReads;
pub use shadow::ShadowReads;
pub use token::TokenReads;

pub trait Reader {
    fn get_raw(&self, cf: &'static str, key: &[u8]) -> Result<Option<Vec<u8>>>;
    fn scan_raw(&self, cf: &'static str, prefix: &[u8]) -> Result<Vec<Pair>>;
    /// The hasher of index terms (the cluster's index key); `None` before bootstrap.
    fn index_hasher(&self) -> Result<Option<Arc<IndexHasher>>>;

    fn get<T: DeserializeOwned>(&self, cf: &'static str, key: &[u8]) -> Result<Option<T>> {
        self.get_raw(cf, key)?.map(|v| decode(&v)).transpose()
    }

    fn scan<T: DeserializeOwned>(&self, cf: &'static str, prefix: &[u8]) -> Result<Vec<T>> {
        self.scan_raw(cf, prefix)?.iter().map(|(_, v)| decode(v)).collect()
    }

    /// Whether `key` is present, without opening its value where the store allows it.
    fn contains_key(&self, cf: &'static str, key: &[u8]) -> Result<bool> {
        Ok(self.get_raw(cf, key)?.is_some())
    }

    /// The id a unique name in `ns`, scoped (e.g. by domain id), belongs to.
    fn id_by_name(&self, ns: &str, scope: &str, name: &str) -> Result<Option<String>> {
        let Some(h) = self.index_hasher()? else { return Ok(None) };
        let key = name_key(&h, ns, scope, name);
        Ok(self.get_raw(cf::NAMES, &key)?.and_then(|v| String::from_utf8(v).ok()))
    }

    /// Ids indexed under `term` in the non-unique index `ns`.
    fn member_ids(&self, ns: &str, term: &str) -> Result<Vec<String>> {
        let Some(h) = self.index_hasher()? else { return Ok(Vec::new()) };
        let prefix = member_prefix(&h, ns, term);
        Ok(self
            .scan_raw(cf::MEMBERS, &prefix)?
            .into_iter()
            .filter_map(|(k, _)| String::from_utf8(k[prefix.len()..].to_vec()).ok())
            .collect())
    }

    fn project(&self, id: &str) -> Result<Option<Project>> {
        self.get(cf::PROJECTS, id.as_bytes())
    }

    /// A project acting as a domain.
    fn domain(&self, id: &str) -> Result<Option<Project>> {
        Ok(self.project(id)?.filter(|p| p.is_domain))
    }

    fn user(&self, id: &str) -> Result<Option<User>> {
        self.get(cf::USERS, id.as_bytes())
    }

    fn role(&self, id: &str) -> Result<Option<Role>> {
        self.get(cf::ROLES, &keys::role(id))
    }

    fn group(&self, id: &str) -> Result<Option<Group>> {
        self.get(cf::GROUPS, &keys::group(id))
    }

    /// Ids of the groups `user_id` belongs to.
    fn group_ids_of_user(&self, user_id: &str) -> Result<Vec<String>> {
        let found: Vec<Membership> = self.scan(cf::GROUPS, &keys::user_groups_prefix(user_id))?;
        Ok(found.into_iter().map(|m| m.group_id).collect())
    }

    /// Ids of the users in `group_id`.
    fn member_user_ids(&self, group_id: &str) -> Result<Vec<String>> {
        let found: Vec<Membership> = self.scan(cf::GROUPS, &keys::members_prefix(group_id))?;
        Ok(found.into_iter().map(|m| m.user_id).collect())
    }

    fn is_member(&self, group_id: &str, user_id: &str) -> Result<bool> {
        Ok(self.get_raw(cf::GROUPS, &keys::member(group_id, user_id))?.is_some())
    }

    /// Every implication rule as (prior, implied).
    fn implied_rules(&self) -> Result<Vec<(String, String)>> {
        self.scan(cf::ROLES, keys::IMPLIED_PREFIX)
    }

    fn implied_rule_exists(&self, prior: &str, implied: &str) -> Result<bool> {
        Ok(self.get_raw(cf::ROLES, &keys::implied(prior, implied))?.is_some())
    }

    fn region(&self, id: &str) -> Result<Option<Region>> {
        self.get(cf::CATALOG, &keys::region(id))
    }

    fn service(&self, id: &str) -> Result<Option<Service>> {
        self.get(cf::CATALOG, &keys::service(id))
    }

    fn endpoint(&self, id: &str) -> Result<Option<Endpoint>> {
        self.get(cf::CATALOG, &keys::endpoint(id))
    }

    fn credential(&self, id: &str) -> Result<Option<Credential>> {
        self.get(cf::CREDENTIALS, id.as_bytes())
    }

    fn doc(&self, kind: DocKind, id: &str) -> Result<Option<Doc>> {
        self.get(cf::DOCS, &keys::doc(kind, id))
    }

    /// Every record of `kind`, in id order.
    fn docs(&self, kind: DocKind) -> Result<Vec<Doc>> {
        self.scan(cf::DOCS, &keys::doc_prefix(kind))
    }

    /// The records of `kind` that belong to `parent`.
    fn child_docs(&self, kind: DocKind, parent: &str) -> Result<Vec<Doc>> {
        self.scan(cf::DOCS, &keys::doc_children_prefix(kind, parent))
    }

    /// Whether the record `r` names exists.
    fn exists(&self, r: &Ref) -> Result<bool> {
        Ok(match r {
            Ref::Doc(kind, id) => self.get_raw(cf::DOCS, &keys::doc(*kind, id))?.is_some(),
            Ref::Domain(id) => self.domain(id)?.is_some(),
            Ref::Project(id) => self.project(id)?.is_some_and(|p| !p.is_domain),
            Ref::Endpoint(id) => self.get_raw(cf::CATALOG, &keys::endpoint(id))?.is_some(),
            Ref::User(id) => self.get_raw(cf::USERS, id.as_bytes())?.is_some(),
            Ref::Role(id) => self.get_raw(cf::ROLES, &keys::role(id))?.is_some(),
        })
    }

    fn password_state(&self, user_id: &str) -> Result<Option<PasswordState>> {
        self.get(cf::PASSWORDS, user_id.as_bytes())
    }

    fn bootstrap_info(&self) -> Result<Option<BootstrapInfo>> {
        self.get(cf::META, keys::META_BOOTSTRAP)
    }
}

/// Hashed key of a unique name in `ns`, scoped (e.g. by domain id).
fn name_key(h: &IndexHasher, ns: &str, scope: &str, name: &str) -> Vec<u8> {
    h.hash(ns.as_bytes(), name_term(scope, name).as_bytes()).to_vec()
}

/// Prefix of the non-unique index `ns` for `term`; entries are prefix || id.
fn member_prefix(h: &IndexHasher, ns: &str, term: &str) -> Vec<u8> {
    h.hash(ns.as_bytes(), term.as_bytes()).to_vec()
}

impl Reader for ReadView<'_> {
    fn get_raw(&self, cf: &'static str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get(cf, key)
    }
    fn scan_raw(&self, cf: &'static str, prefix: &[u8]) -> Result<Vec<Pair>> {
        self.scan_prefix(cf, prefix, usize::MAX)
    }
    fn contains_key(&self, cf: &'static str, key: &[u8]) -> Result<bool> {
        ReadView::exists(self, cf, key)
    }
    fn index_hasher(&self) -> Result<Option<Arc<IndexHasher>>> {
        super::index_key::hasher(ReadView::engine(self))
    }
}

/// What apply reads and writes through: reads see this command's own earlier writes. It
/// always has an index hasher (apply refuses every command but bootstrap before the cluster
/// has an index key), so index writes cannot fail.
pub struct Tx<'a> {
    pub engine: &'a Engine,
    pub batch: &'a mut Batch,
    pub index: Arc<IndexHasher>,
}

impl Tx<'_> {
    pub fn put<T: Serialize>(&mut self, cf: &'static str, key: Vec<u8>, value: &T) -> Result<()> {
        self.batch.put_t(cf, key, value)
    }

    pub fn delete(&mut self, cf: &'static str, key: Vec<u8>) {
        self.batch.delete(cf, key)
    }

    pub fn put_name(&mut self, ns: &str, scope: &str, name: &str, id: &str) {
        let key = name_key(&self.index, ns, scope, name);
        self.batch.put(cf::NAMES, key, id.as_bytes());
    }

    pub fn delete_name(&mut self, ns: &str, scope: &str, name: &str) {
        let key = name_key(&self.index, ns, scope, name);
        self.batch.delete(cf::NAMES, key);
    }

    pub fn add_member(&mut self, ns: &str, term: &str, id: &str) {
        let mut key = member_prefix(&self.index, ns, term);
        key.extend_from_slice(id.as_bytes());
        self.batch.put(cf::MEMBERS, key, &[]);
    }

    pub fn remove_member(&mut self, ns: &str, term: &str, id: &str) {
        let mut key = member_prefix(&self.index, ns, term);
        key.extend_from_slice(id.as_bytes());
        self.batch.delete(cf::MEMBERS, key);
    }
}

impl Tx<'_> {
    /// At most `limit` pairs with `start <= key < end`, this command's (and this batch's)
    /// own writes included: bounded work whatever the column family holds, and the same
    /// answer however a replica groups entries into batches.
    pub fn scan_before(&self, cf: &'static str, start: &[u8], end: &[u8], limit: usize) -> Result<Vec<Pair>> {
        let pending: Vec<(&[u8], Option<&[u8]>)> =
            self.batch.pending_with_prefix(cf, start).filter(|(k, _)| *k < end).collect();
        let deleted = pending.iter().filter(|(_, v)| v.is_none()).count();
        let mut merged: std::collections::BTreeMap<Vec<u8>, Vec<u8>> =
            self.engine.read().scan_range(cf, start, Some(end), limit + deleted)?.into_iter().collect();
        for (k, v) in pending {
            match v {
                Some(v) => merged.insert(k.to_vec(), v.to_vec()),
                None => merged.remove(k),
            };
        }
        Ok(merged.into_iter().take(limit).collect())
    }
}

impl Reader for Tx<'_> {
    fn get_raw(&self, cf: &'static str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.batch.get(cf, key) {
            Some(v) => Ok(v.map(<[u8]>::to_vec)),
            None => self.engine.read().get(cf, key),
        }
    }

    fn scan_raw(&self, cf: &'static str, prefix: &[u8]) -> Result<Vec<Pair>> {
        let mut merged: std::collections::BTreeMap<Vec<u8>, Vec<u8>> =
            self.engine.read().scan_prefix(cf, prefix, usize::MAX)?.into_iter().collect();
        for (k, v) in self.batch.pending_with_prefix(cf, prefix) {
            match v {
                Some(v) => merged.insert(k.to_vec(), v.to_vec()),
                None => merged.remove(k),
            };
        }
        Ok(merged.into_iter().collect())
    }

    fn index_hasher(&self) -> Result<Option<Arc<IndexHasher>>> {
        Ok(Some(self.index.clone()))
    }
}
