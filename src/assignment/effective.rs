use std::collections::{BTreeSet, VecDeque};

use idnode_storage::Result;

use crate::state::keys;
use crate::state::model::{ActorKind, Assignment, Role, Target};
use crate::state::{cf, Reader};

/// The roles a user holds on a target: direct grants, closed over implication rules.
pub fn roles_of_user(r: &impl Reader, user_id: &str, target: &Target) -> Result<Vec<Role>> {
    let direct: Vec<Assignment> =
        r.scan(cf::ASSIGNMENTS, &keys::by_actor_target_prefix(ActorKind::User, user_id, target))?;
    let ids = implied_closure(r, direct.into_iter().filter(|a| !a.inherited).map(|a| a.role_id))?;
    let mut roles = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(role) = r.role(&id)? {
            roles.push(role);
        }
    }
    Ok(roles)
}

/// All roles reachable from `start` through implication rules (cycles are harmless).
pub fn implied_closure(r: &impl Reader, start: impl IntoIterator<Item = String>) -> Result<BTreeSet<String>> {
    let mut seen = BTreeSet::new();
    let mut queue: VecDeque<String> = start.into_iter().collect();
    while let Some(id) = queue.pop_front() {
        if !seen.insert(id.clone()) {
            continue;
        }
        let rules: Vec<(String, String)> = r.scan(cf::ROLES, &keys::implied_prefix(&id))?;
        queue.extend(rules.into_iter().map(|(_, implied)| implied));
    }
    Ok(seen)
}
