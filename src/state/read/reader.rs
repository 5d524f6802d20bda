//! The `Reader` trait: raw and typed reads of the model, the same whether they go through a
//! consistent `ReadView` (services) or a `Tx` (apply).

use std::sync::Arc;

use idnode_keys::IndexHasher;
use idnode_storage::{decode, Pair, ReadView, Result};
use serde::de::DeserializeOwned;

use crate::state::cf;
use crate::state::index_key;
use crate::state::keys::{self, name_term};
use crate::state::model::*;

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
            Ref::Service(id) => self.get_raw(cf::CATALOG, &keys::service(id))?.is_some(),
            Ref::Region(id) => self.get_raw(cf::CATALOG, &keys::region(id))?.is_some(),
        })
    }

    fn password_state(&self, user_id: &str) -> Result<Option<PasswordState>> {
        self.get(cf::PASSWORDS, user_id.as_bytes())
    }

    /// The last TOTP step the user proved (`Command::UseTotpStep`).
    fn totp_step(&self, user_id: &str) -> Result<Option<u64>> {
        self.get(cf::PASSWORDS, &keys::totp_step(user_id))
    }

    fn bootstrap_info(&self) -> Result<Option<BootstrapInfo>> {
        self.get(cf::META, keys::META_BOOTSTRAP)
    }
}

/// Hashed key of a unique name in `ns`, scoped (e.g. by domain id).
pub(super) fn name_key(h: &IndexHasher, ns: &str, scope: &str, name: &str) -> Vec<u8> {
    h.hash(ns.as_bytes(), name_term(scope, name).as_bytes()).to_vec()
}

/// Prefix of the non-unique index `ns` for `term`; entries are prefix || id.
pub(super) fn member_prefix(h: &IndexHasher, ns: &str, term: &str) -> Vec<u8> {
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
        index_key::hasher(ReadView::engine(self))
    }
}
