//! Roles, implication rules and role assignments (stored under three key orders, `keys.rs`).

use idnode_storage::Result;

use super::reader::Reader;
use crate::state::cf;
use crate::state::keys;
use crate::state::model::{ActorKind, Assignment, Role, Target};

/// The by-actor order holds every assignment once.
const BY_ACTOR_PREFIX: &[u8] = b"a/";

pub trait AssignmentReads: Reader {
    /// Every role, in id order.
    fn roles(&self) -> Result<Vec<Role>> {
        self.scan(cf::ROLES, keys::ROLE_PREFIX)
    }

    /// The implication rules of `prior_id` as (prior, implied), in implied-id order.
    fn implied_rules_of(&self, prior_id: &str) -> Result<Vec<(String, String)>> {
        self.scan(cf::ROLES, &keys::implied_prefix(prior_id))
    }

    /// Whether exactly this grant is stored (a direct grant, not an effective one).
    fn grant_stored(&self, a: &Assignment) -> Result<bool> {
        let [key, ..] = keys::assignment_keys(a);
        Ok(self.get_raw(cf::ASSIGNMENTS, &key)?.is_some())
    }

    /// Every assignment, in by-actor order.
    fn assignments(&self) -> Result<Vec<Assignment>> {
        self.scan(cf::ASSIGNMENTS, BY_ACTOR_PREFIX)
    }

    /// The assignments of one actor (inherited or not), on any target.
    fn assignments_of_actor(&self, kind: ActorKind, id: &str) -> Result<Vec<Assignment>> {
        self.scan(cf::ASSIGNMENTS, &keys::by_actor_prefix(kind, id))
    }

    /// The assignments of one actor (inherited or not) on one target.
    fn assignments_of_actor_on(&self, kind: ActorKind, id: &str, target: &Target) -> Result<Vec<Assignment>> {
        self.scan(cf::ASSIGNMENTS, &keys::by_actor_target_prefix(kind, id, target))
    }

    /// The assignments (inherited or not) of one role, of any actor on any target.
    fn assignments_of_role(&self, role_id: &str) -> Result<Vec<Assignment>> {
        self.scan(cf::ASSIGNMENTS, &keys::by_role_prefix(role_id))
    }

    /// The assignments (inherited or not) on one target, of any actor.
    fn assignments_on(&self, target: &Target) -> Result<Vec<Assignment>> {
        self.scan(cf::ASSIGNMENTS, &keys::by_target_prefix(target))
    }
}

impl<R: Reader + ?Sized> AssignmentReads for R {}
