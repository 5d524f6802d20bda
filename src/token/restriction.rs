//! What a token restriction (`state::restrictions`) leaves of a token at validation. The
//! restriction is read as this node has applied it, every time the token is validated (the
//! token caches are keyed by the applied state), so a restriction changed or deleted on one
//! node narrows or kills its tokens everywhere as soon as each node applies the change.

use super::payload::{TokenPayload, TokenScope};
use crate::reads::listing;
use crate::state::model::Role;
use crate::state::read::RestrictionReads;
use crate::state::Reader;

/// Narrows `roles` to the restriction's (and what they imply), after checking that the token
/// still fits it: project-scoped (to its project, when it names one) and, when it names a
/// user, that user's. A restriction that is gone takes its tokens with it. The inner error
/// says why the token no longer stands.
pub fn narrow(
    view: &impl Reader,
    payload: &TokenPayload,
    roles: &mut Vec<Role>,
) -> idnode_storage::Result<Result<(), &'static str>> {
    let Some(id) = &payload.restriction else { return Ok(Ok(())) };
    let Some(r) = view.token_restriction(id)? else { return Ok(Err("token restriction gone")) };
    let TokenScope::Project(project) = &payload.scope else {
        return Ok(Err("a restricted token is project-scoped"));
    };
    if r.project_id.as_ref().is_some_and(|p| p != project) {
        return Ok(Err("token restriction bound to another project"));
    }
    if r.user_id.as_ref().is_some_and(|u| *u != payload.user_id) {
        return Ok(Err("token restriction bound to another user"));
    }
    let allowed = listing::implied_closure(view, &r.role_ids)?;
    roles.retain(|role| allowed.contains(&role.id));
    Ok(Ok(()))
}
