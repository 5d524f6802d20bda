//! The Keystone operations on an OpenFGA store: grant, revoke, check, a user's roles on a
//! target (what tokens carry), the targets a user holds roles on, and the role assignment
//! listing (`listing.rs`). Roles, users and targets stay in raft; only who holds which role
//! where lives in the store.

use std::collections::BTreeSet;

use idnode_storage::Result as StorageResult;

use super::client::{AtBound, Client, FgaError};
use super::mapping::Mapping;
use super::tuples::{BadId, Tuple, Unmapped, Unusable, Vocabulary};
use super::wire::ReadKey;
use crate::state::model::{ActorKind, Assignment, Role, Target};
use crate::state::read::AssignmentReads;
use crate::state::Reader;

/// Why a driver operation failed.
#[derive(Debug, Clone, PartialEq)]
pub enum DriverError {
    /// A role the mapping does not name, or names onto a guarded role's relation (failed
    /// before any call).
    Unmapped(Unmapped),
    /// An id the store cannot hold (refused before it reaches a tuple).
    BadId(BadId),
    /// A listing shape the store cannot answer (the spec's 501 rows).
    NotImplemented(&'static str),
    /// An inherited grant (the store has no project tree to inherit along).
    Inherited,
    Store(FgaError),
    /// The node's own state could not be read.
    State(String),
}

impl std::fmt::Display for DriverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DriverError::Unmapped(e) => e.fmt(f),
            DriverError::BadId(e) => e.fmt(f),
            DriverError::NotImplemented(what) => write!(f, "{what} is not supported by the OpenFGA assignment driver"),
            DriverError::Inherited => f.write_str("The OpenFGA assignment driver does not support inherited grants."),
            DriverError::Store(e) => e.fmt(f),
            DriverError::State(e) => write!(f, "reading the node's state: {e}"),
        }
    }
}

impl From<FgaError> for DriverError {
    fn from(e: FgaError) -> Self {
        DriverError::Store(e)
    }
}

impl From<Unmapped> for DriverError {
    fn from(e: Unmapped) -> Self {
        DriverError::Unmapped(e)
    }
}

impl From<BadId> for DriverError {
    fn from(e: BadId) -> Self {
        DriverError::BadId(e)
    }
}

impl From<Unusable> for DriverError {
    fn from(e: Unusable) -> Self {
        match e {
            Unusable::Unmapped(e) => DriverError::Unmapped(e),
            Unusable::BadId(e) => DriverError::BadId(e),
        }
    }
}

impl From<idnode_storage::StorageError> for DriverError {
    fn from(e: idnode_storage::StorageError) -> Self {
        DriverError::State(e.to_string())
    }
}

pub type DriverResult<T> = Result<T, DriverError>;

/// The relationship-store driver of one node.
pub struct OpenFga {
    pub client: Client,
    /// The role table in force (`mapping.rs`).
    pub mapping: Mapping,
    /// Whether this node has seen the bootstrap administrator's grants in the store (until
    /// then nobody can administer a new cluster, and `/ready` says so).
    pub seeded: std::sync::atomic::AtomicBool,
}

impl OpenFga {
    pub fn new(client: Client) -> Self {
        let mapping = Mapping::new(&client.settings);
        OpenFga { client, mapping, seeded: std::sync::atomic::AtomicBool::new(false) }
    }

    /// The role table as the store sees it, from the node's roles.
    pub fn vocabulary(&self, r: &impl Reader) -> StorageResult<Vocabulary<'_>> {
        Ok(Vocabulary::new(&self.client.settings, &self.mapping.table(), &r.roles()?))
    }

    /// Writes the grant's canonical relationship (a grant already there is no error).
    pub async fn grant(&self, r: &impl Reader, a: &Assignment) -> DriverResult<()> {
        if a.inherited {
            return Err(DriverError::Inherited);
        }
        let t = self.vocabulary(r)?.canonical(a)?;
        self.client.write(&[t], &[]).await?;
        Ok(())
    }

    /// Deletes every spelling of the grant the store holds; an absent grant is no error.
    pub async fn revoke(&self, r: &impl Reader, a: &Assignment) -> DriverResult<()> {
        if a.inherited {
            return Ok(());
        }
        let held = self.stored(&self.vocabulary(r)?.spellings(a)?).await?;
        if !held.is_empty() {
            self.client.write(&[], &held).await?;
        }
        Ok(())
    }

    /// Whether the model resolves the grant (the grant check has no direct mode).
    pub async fn check(&self, r: &impl Reader, a: &Assignment) -> DriverResult<bool> {
        if a.inherited {
            return Ok(false);
        }
        let spellings = self.vocabulary(r)?.spellings(a)?;
        Ok(self.client.batch_check(&spellings).await?.into_iter().any(|allowed| allowed))
    }

    /// The spellings the store holds as written (exact reads, no resolution).
    pub(super) async fn stored(&self, spellings: &[Tuple]) -> DriverResult<Vec<Tuple>> {
        let reads = spellings.iter().map(|t| async move {
            let key = ReadKey {
                user: Some(t.user.clone()),
                relation: Some(t.relation.clone()),
                object: Some(t.object.clone()),
            };
            Ok::<_, FgaError>(self.client.read(&key, AtBound::Fail).await?.contains(t).then(|| t.clone()))
        });
        Ok(futures::future::try_join_all(reads).await?.into_iter().flatten().collect())
    }

    /// Which of `relations` the model resolves for the actor on the target: one check when a
    /// single spelling is asked, else one batch check over every relation and spelling.
    pub(super) async fn resolved_relations(
        &self,
        v: &Vocabulary<'_>,
        (kind, id): (ActorKind, &str),
        target: &Target,
        relations: &[&str],
    ) -> DriverResult<BTreeSet<String>> {
        let (users, objects) = (v.actors(kind, id)?, v.objects(target)?);
        let mut asked = Vec::new();
        for rel in relations {
            for u in &users {
                for o in &objects {
                    asked.push(Tuple { user: u.clone(), relation: rel.to_string(), object: o.clone() });
                }
            }
        }
        let answers = match asked.as_slice() {
            [one] => vec![self.client.check(one).await?],
            _ => self.client.batch_check(&asked).await?,
        };
        Ok(asked.into_iter().zip(answers).filter(|(_, allowed)| *allowed).map(|(t, _)| t.relation).collect())
    }

    /// The roles the model resolves for the user on the target: every mapped relation asked at
    /// once, each allowed relation giving its roles.
    pub async fn roles_of_user(&self, r: &impl Reader, user_id: &str, target: &Target) -> DriverResult<Vec<Role>> {
        let v = self.vocabulary(r)?;
        let held = self.resolved_relations(&v, (ActorKind::User, user_id), target, &v.relations()).await?;
        Self::roles_of(r, &v, &held)
    }

    /// The roles the model resolves for groups on the target (a virtual user's bound groups,
    /// asked as the usersets `group:<id>#member`): one batch check per group.
    pub async fn roles_of_groups(
        &self,
        r: &impl Reader,
        group_ids: &[String],
        target: &Target,
    ) -> DriverResult<Vec<Role>> {
        let v = self.vocabulary(r)?;
        let relations = v.relations();
        let asks = group_ids.iter().map(|g| self.resolved_relations(&v, (ActorKind::Group, g), target, &relations));
        let held: BTreeSet<String> = futures::future::try_join_all(asks).await?.into_iter().flatten().collect();
        Self::roles_of(r, &v, &held)
    }

    fn roles_of(r: &impl Reader, v: &Vocabulary<'_>, held: &BTreeSet<String>) -> DriverResult<Vec<Role>> {
        let mut roles = Vec::new();
        for rel in held {
            for id in v.roles(rel) {
                roles.extend(r.role(id)?);
            }
        }
        roles.sort_by(|a, b| a.id.cmp(&b.id));
        roles.dedup_by(|a, b| a.id == b.id);
        Ok(roles)
    }

    /// The assignments the model resolves for the user, on any target: one streamed listing
    /// per (user spelling, target type, relation).
    pub async fn resolved_for_user(
        &self,
        r: &impl Reader,
        user_id: &str,
        role: Option<&str>,
    ) -> DriverResult<Vec<Assignment>> {
        let v = self.vocabulary(r)?;
        let relations = match role {
            Some(id) => vec![v.relation(id)?],
            None => v.relations(),
        };
        let mut asked = Vec::new();
        for u in v.actors(ActorKind::User, user_id)? {
            for (_, ty) in v.target_types() {
                for rel in &relations {
                    asked.push((u.clone(), rel.to_string(), ty.to_string()));
                }
            }
        }
        let lists = asked.iter().map(|(u, rel, ty)| self.client.list_objects(u, rel, ty));
        let objects = futures::future::try_join_all(lists).await?;
        let mut out = BTreeSet::new();
        for ((_, rel, _), objects) in asked.iter().zip(objects) {
            for object in objects {
                let Some(target) = v.target_of(&object) else { continue };
                for role_id in v.roles(rel).iter().filter(|id| role.is_none_or(|want| want == id.as_str())) {
                    out.insert(Assignment {
                        actor_kind: ActorKind::User,
                        actor_id: user_id.to_string(),
                        target: target.clone(),
                        role_id: role_id.clone(),
                        inherited: false,
                    });
                }
            }
        }
        Ok(out.into_iter().collect())
    }

    /// Every target on which the user holds at least one role, as the model resolves it.
    pub async fn targets_of_user(&self, r: &impl Reader, user_id: &str) -> DriverResult<BTreeSet<Target>> {
        Ok(self.resolved_for_user(r, user_id, None).await?.into_iter().map(|a| a.target).collect())
    }

    /// Every grant stored for the actor, on any target (a read per spelling and target type).
    /// Whole or an error: the guard rails decide on it, and must not on part of it.
    pub async fn grants_of_actor(&self, r: &impl Reader, kind: ActorKind, id: &str) -> DriverResult<Vec<Assignment>> {
        let v = self.vocabulary(r)?;
        let mut keys = Vec::new();
        for user in v.actors(kind, id)? {
            for (_, ty) in v.target_types() {
                keys.push(ReadKey { user: Some(user.clone()), relation: None, object: Some(format!("{ty}:")) });
            }
        }
        self.read_grants(&v, keys, AtBound::Fail).await
    }

    /// The grants stored for the filter, mapped back to roles (tuples that are not ours are
    /// skipped).
    pub(super) async fn read_grants(
        &self,
        v: &Vocabulary<'_>,
        keys: Vec<ReadKey>,
        at_bound: AtBound,
    ) -> DriverResult<Vec<Assignment>> {
        let reads = keys.iter().map(|k| self.client.read(k, at_bound));
        let tuples = futures::future::try_join_all(reads).await?;
        Ok(tuples.iter().flatten().flat_map(|t| v.grants(t)).collect())
    }
}

/// The assignment API's statuses: 400 for an inherited grant, a role the table does not map
/// (or maps onto a guarded role's relation) and an id the store cannot hold; 501 for the
/// listing shapes the store cannot answer; 500 for any other driver failure (with words that
/// say which, never the store's credentials). The role table's refusals are client errors: the
/// request asks for what this node's table cannot spell, and nothing in the store failed.
impl From<DriverError> for crate::http::error::ApiError {
    fn from(e: DriverError) -> Self {
        use crate::http::error::ApiError;
        use axum::http::StatusCode;
        match e {
            DriverError::Inherited | DriverError::BadId(_) => ApiError::bad_request(e.to_string()),
            DriverError::Unmapped(_) => {
                tracing::warn!("assignment driver: {e}");
                ApiError::bad_request(e.to_string())
            }
            DriverError::NotImplemented(_) => ApiError::new(StatusCode::NOT_IMPLEMENTED, e.to_string()),
            DriverError::State(cause) => ApiError::internal(cause),
            DriverError::Store(_) => {
                tracing::error!("assignment driver: {e}");
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
            }
        }
    }
}

impl DriverError {
    /// For a token (issue or validation) or a delete: a store that cannot answer is a 503, so
    /// a client retries instead of getting a token with fewer roles than the store holds, or a
    /// delete that left grants behind.
    pub fn or_unavailable(self) -> crate::http::error::ApiError {
        match self {
            DriverError::Store(FgaError::Unavailable(_)) => {
                tracing::warn!("assignment driver: {self}");
                crate::http::error::ApiError::unavailable("The role assignment store is unavailable; try again.")
            }
            other => other.into(),
        }
    }
}

/// Runs a driver call to its end from synchronous code (the guard rails are checks deep in
/// synchronous validation), on the multi-threaded runtime the server runs on. Anywhere else it
/// refuses, and callers fail closed.
pub fn blocking<T>(call: impl std::future::Future<Output = DriverResult<T>>) -> DriverResult<T> {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(|| h.block_on(call)),
        _ => Err(DriverError::State("the relationship store can only be asked on the multi-threaded runtime".into())),
    }
}
