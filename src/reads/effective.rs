//! Effective roles of a user: grants to the user and to the user's groups, closed over
//! implication rules, global roles only (domain-specific roles only imply others, as in
//! Keystone). Computed by the same expansion as the effective role assignment listing.

use std::collections::BTreeSet;

use idnode_storage::Result;

use super::listing::{self, Filter};
use crate::context::Core;
use crate::openfga::DriverError;
use crate::state::model::{Role, Target};
use crate::state::Reader;

/// The roles a user holds on a target, as tokens carry them.
pub fn roles_of_user(r: &impl Reader, user_id: &str, target: &Target) -> Result<Vec<Role>> {
    roles_of_user_with_groups(r, user_id, &[], target)
}

/// The roles a user holds on a target counting `groups` as its own too (a Keystone federated
/// login's groups, which Keystone's token names: their grants count, inherited and implied
/// ones included, whether or not the user is a member).
pub fn roles_of_user_with_groups(
    r: &impl Reader,
    user_id: &str,
    groups: &[String],
    target: &Target,
) -> Result<Vec<Role>> {
    let f = Filter {
        user: Some(user_id.to_string()),
        target: Some(target.clone()),
        effective: true,
        also_groups: groups.to_vec(),
        ..Filter::default()
    };
    let ids: BTreeSet<String> = listing::list(r, &f)?.into_iter().map(|e| e.role_id).collect();
    let mut roles = Vec::with_capacity(ids.len());
    for id in ids {
        if let Some(role) = r.role(&id)? {
            roles.push(role);
        }
    }
    Ok(roles)
}

/// Every target on which the user holds at least one effective role.
pub fn targets_of_user(r: &impl Reader, user_id: &str) -> Result<BTreeSet<Target>> {
    let f = Filter { user: Some(user_id.to_string()), effective: true, ..Filter::default() };
    Ok(listing::list(r, &f)?.into_iter().map(|e| e.target).collect())
}

/// The roles a user holds on a target, from the node's assignment driver: the relationship
/// store's model when the node has one, else the replicated grants.
pub async fn user_roles(core: &Core, user_id: &str, target: &Target) -> std::result::Result<Vec<Role>, DriverError> {
    match &core.fga {
        Some(fga) => fga.roles_of_user(&core.engine.read(), user_id, target).await,
        None => Ok(roles_of_user(&core.engine.snapshot(), user_id, target)?),
    }
}

/// The roles groups hold on a target (a virtual user's bound groups), from the node's
/// assignment driver.
pub async fn groups_roles(
    core: &Core,
    group_ids: &[String],
    target: &Target,
) -> std::result::Result<Vec<Role>, DriverError> {
    match &core.fga {
        Some(fga) => fga.roles_of_groups(&core.engine.read(), group_ids, target).await,
        None => {
            let view = core.engine.snapshot();
            let mut roles = Vec::new();
            for g in group_ids {
                let f = Filter { group: Some(g.clone()), target: Some(target.clone()), ..Filter::default() };
                for e in listing::list(&view, &f)? {
                    roles.extend(view.role(&e.role_id)?);
                }
            }
            Ok(roles)
        }
    }
}

/// [`roles_of_user_with_groups`] from the node's assignment driver.
pub async fn user_and_groups_roles(
    core: &Core,
    user_id: &str,
    group_ids: &[String],
    target: &Target,
) -> std::result::Result<Vec<Role>, DriverError> {
    match &core.fga {
        Some(fga) => {
            let view = core.engine.read();
            let mut roles = fga.roles_of_user(&view, user_id, target).await?;
            roles.extend(fga.roles_of_groups(&view, group_ids, target).await?);
            roles.sort_by(|a, b| a.id.cmp(&b.id));
            roles.dedup_by(|a, b| a.id == b.id);
            Ok(roles)
        }
        None => Ok(roles_of_user_with_groups(&core.engine.snapshot(), user_id, group_ids, target)?),
    }
}

/// Every target on which the user holds a role, from the node's assignment driver.
pub async fn user_targets(core: &Core, user_id: &str) -> std::result::Result<BTreeSet<Target>, DriverError> {
    match &core.fga {
        Some(fga) => fga.targets_of_user(&core.engine.read(), user_id).await,
        None => Ok(targets_of_user(&core.engine.snapshot(), user_id)?),
    }
}
