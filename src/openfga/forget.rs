//! What a delete takes out of the store: the grants of a deleted user or group, the grants on
//! a deleted project or domain (with everything a domain owns), and the group memberships
//! that name a deleted user or group. Raft removes its own copy of these in the same delete;
//! the store has no cascade of its own, and a grant left behind would come back to a SCIM
//! user re-created under its deterministic id. Only our relations on our types are deleted
//! (the store may hold other applications' tuples), in every type of each kind.
//!
//! It runs before the raft delete: a store that cannot answer refuses the delete, which then
//! changes nothing in raft, and the delete can be retried. A raft delete that fails after the
//! store was cleaned leaves an entity without its grants (fewer rights, never more).

use std::collections::BTreeSet;

use super::client::AtBound;
use super::driver::{DriverError, DriverResult, OpenFga};
use super::settings::Kind;
use super::tuples::{Tuple, Vocabulary};
use super::wire::ReadKey;
use crate::http::error::ApiError;
use crate::state::keys::ns;
use crate::state::model::{ActorKind, Project, Target};
use crate::state::read::ScimReads;
use crate::state::scim::Kind as ScimKind;
use crate::state::Reader;

/// OpenFGA's default bound on the tuples of one write.
const MAX_TUPLES_PER_WRITE: usize = 100;

/// The entities a delete removes, whose relationships must go with them.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Gone {
    pub actors: Vec<(ActorKind, String)>,
    pub targets: Vec<Target>,
    /// Groups whose grants go but whose memberships stay (a deprovisioned SCIM group keeps
    /// its membership as a snapshot).
    pub grants_only: bool,
}

impl Gone {
    pub fn user(id: &str) -> Self {
        Gone { actors: vec![(ActorKind::User, id.to_string())], ..Gone::default() }
    }

    pub fn group(id: &str) -> Self {
        Gone { actors: vec![(ActorKind::Group, id.to_string())], ..Gone::default() }
    }

    /// A group's grants only (SCIM deprovisioning clears them at once and keeps the rest).
    pub fn group_grants(id: &str) -> Self {
        Gone { grants_only: true, ..Gone::group(id) }
    }

    pub fn project(id: &str) -> Self {
        Gone { targets: vec![Target::Project(id.to_string())], ..Gone::default() }
    }

    /// A domain and what its delete removes with it: its projects, users and groups.
    pub fn domain(r: &impl Reader, id: &str) -> idnode_storage::Result<Self> {
        let mut gone = Gone { targets: vec![Target::Domain(id.to_string())], ..Gone::default() };
        gone.targets.extend(r.member_ids(ns::PROJECTS_OF_DOMAIN, id)?.into_iter().map(Target::Project));
        gone.actors.extend(r.member_ids(ns::USERS_OF_DOMAIN, id)?.into_iter().map(|u| (ActorKind::User, u)));
        gone.actors.extend(r.member_ids(ns::GROUPS_OF_DOMAIN, id)?.into_iter().map(|g| (ActorKind::Group, g)));
        Ok(gone)
    }
}

impl OpenFga {
    /// Deletes every relationship of ours that names what is gone; the count deleted. Every
    /// read is whole before anything is deleted: a read cut at its page bound refuses the
    /// delete, which would otherwise leave grants behind for a re-created id.
    pub async fn forget(&self, gone: &Gone) -> DriverResult<usize> {
        let keys = self.keys_naming(gone);
        let reads = keys.iter().map(|k| self.client.read(k, AtBound::Fail));
        let found = futures::future::try_join_all(reads).await?;
        let table = self.mapping.table();
        let ours: BTreeSet<&str> = table.values().map(String::as_str).collect();
        let member = self.client.settings.group_member_relation.as_str();
        let doomed: BTreeSet<Tuple> = found
            .into_iter()
            .flatten()
            .filter(|t| ours.contains(t.relation.as_str()) || (!gone.grants_only && t.relation == member))
            .collect();
        let doomed: Vec<Tuple> = doomed.into_iter().collect();
        for chunk in doomed.chunks(MAX_TUPLES_PER_WRITE) {
            self.client.write(&[], chunk).await?;
        }
        if !doomed.is_empty() {
            tracing::info!(deleted = doomed.len(), "assignment driver: removed the relationships of deleted entities");
        }
        Ok(doomed.len())
    }

    /// The reads that find them: an actor's tuples on each target type (and its memberships),
    /// every tuple on a target, and a group's member tuples. Reads by an object's type need
    /// the user, so each target is read by its full object name. An id the store cannot hold
    /// (`tuples::store_id`) was never written there, so it has nothing to read.
    fn keys_naming(&self, gone: &Gone) -> Vec<ReadKey> {
        let s = &self.client.settings;
        let v = Vocabulary::new(s, &Default::default(), &[]);
        let member = s.group_member_relation.as_str();
        let read = |user: Option<&str>, relation: Option<&str>, object: String| ReadKey {
            user: user.map(str::to_string),
            relation: relation.map(str::to_string),
            object: Some(object),
        };
        let mut keys = Vec::new();
        for (kind, id) in &gone.actors {
            let Ok(users) = v.actors(*kind, id) else { continue };
            for u in &users {
                keys.extend(v.target_types().into_iter().map(|(_, ty)| read(Some(u), None, format!("{ty}:"))));
            }
            if gone.grants_only {
                continue;
            }
            for u in &users {
                match kind {
                    // The user's memberships (synced by the deployment, rule 9).
                    ActorKind::User => {
                        keys.extend(s.types(Kind::Group).iter().map(|g| read(Some(u), Some(member), format!("{g}:"))));
                    }
                    // The group's members: the userset's object is the group itself.
                    ActorKind::Group => {
                        let group = u.split_once('#').map_or(u.as_str(), |(g, _)| g);
                        keys.push(read(None, Some(member), group.to_string()));
                    }
                }
            }
        }
        for target in gone.targets.iter().filter(|t| **t != Target::System) {
            keys.extend(v.objects(target).into_iter().flatten().map(|o| read(None, None, o)));
        }
        keys
    }
}

impl Gone {
    /// What deleting project (or domain) `p` removes, or None when raft will refuse the
    /// delete (an enabled domain, a project with children): the store then keeps everything.
    /// The conditions mirror `state::apply::resource::delete`, which stays the authority.
    pub fn of_project_delete(r: &impl Reader, p: &Project) -> idnode_storage::Result<Option<Self>> {
        if p.is_domain {
            return (!p.enabled).then(|| Gone::domain(r, &p.id)).transpose();
        }
        for id in r.member_ids(ns::PROJECTS_OF_DOMAIN, &p.domain_id)? {
            if r.project(&id)?.is_some_and(|c| c.parent_id.as_deref() == Some(p.id.as_str())) {
                return Ok(None);
            }
        }
        Ok(Some(Gone::project(&p.id)))
    }

    /// What purging a SCIM resource removes, or None when raft will refuse the purge (it is
    /// not deprovisioned, or unknown).
    pub fn of_scim_purge(r: &impl Reader, kind: ScimKind, id: &str) -> idnode_storage::Result<Option<Self>> {
        let due = r.scim_index(kind, id)?.is_some_and(|i| i.deprovisioned_at.is_some());
        Ok(due.then(|| match kind {
            ScimKind::User => Gone::user(id),
            ScimKind::Group => Gone::group(id),
        }))
    }
}

/// Before a delete that removes what `gone` names: the store forgets it (nothing to do on the
/// raft driver). A store that cannot answer is a 503, and the delete is not made.
pub async fn forget_in(fga: Option<&OpenFga>, gone: Option<Gone>) -> Result<(), ApiError> {
    let (Some(fga), Some(gone)) = (fga, gone) else { return Ok(()) };
    fga.forget(&gone).await.map(|_| ()).map_err(DriverError::or_unavailable)
}
