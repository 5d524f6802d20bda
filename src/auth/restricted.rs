//! The token method with a restricted token (`state::restrictions`): the new token stands
//! under the same restriction, so it is project-scoped and narrowed like its parent. Asking
//! for the parent's own scope (or for none) is a renewal, allowed only by `allow_renew`;
//! asking for another project is a re-scope, allowed only by `allow_rescope` and only to the
//! restriction's project when it names one. Keystone-NG refuses the same two.

use serde_json::Value;

use super::proven::Proven;
use super::scope;
use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::state::read::RestrictionReads;
use crate::token::TokenScope;

fn refuse(why: &str) -> ApiError {
    ApiError::forbidden(format!("You are not authorized to perform the requested action: {why}"))
}

/// The scope of the token a restricted parent buys, or why it buys none.
pub async fn scope(node: &Core, proven: &Proven, restriction_id: &str, asked: Option<&Value>) -> ApiResult<TokenScope> {
    let r = node.engine.read().token_restriction(restriction_id)?.ok_or_else(ApiError::unauthenticated)?;
    let parent = proven.parent.as_ref().map(|p| p.scope.clone()).ok_or_else(ApiError::unauthenticated)?;
    let wanted = match asked {
        None => parent.clone(),
        Some(a) => scope::requested(node, Some(a), &proven.user).await?,
    };
    if wanted == parent {
        if !r.allow_renew {
            return Err(refuse("the token's restriction does not allow renewing it."));
        }
        return Ok(wanted);
    }
    if !r.allow_rescope {
        return Err(refuse("the token's restriction does not allow re-scoping it."));
    }
    match &wanted {
        TokenScope::Project(p) if r.project_id.as_ref().is_none_or(|own| own == p) => Ok(wanted),
        TokenScope::Project(_) => Err(refuse("the token's restriction binds it to another project.")),
        _ => Err(refuse("a restricted token can only be scoped to a project.")),
    }
}
