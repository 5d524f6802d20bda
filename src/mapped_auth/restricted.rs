//! A rule that names a token restriction (`token_restriction_id`) mints restricted tokens:
//! project-scoped, to the restriction's project when it names one, and only for the user it
//! binds when it binds one. The restriction is checked against the state at the login (it may
//! have been deleted since the ruleset was written); a rule whose restriction is gone logs
//! nobody in rather than minting an unrestricted token.

use serde_json::Value;

use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::mapping::model::MappingRuleSet;
use crate::state::model::User;
use crate::state::read::RestrictionReads;
use crate::state::restrictions::TokenRestriction;
use crate::token::TokenScope;

/// The restriction the matched rule names, if any, once it is known to stand for this login.
pub fn of_rule(node: &Core, rs: &MappingRuleSet, rule_name: &str, user: &User) -> ApiResult<Option<TokenRestriction>> {
    let Some(id) = rs.rules.iter().find(|r| r.name == rule_name).and_then(|r| r.token_restriction_id.as_ref()) else {
        return Ok(None);
    };
    let r = node
        .engine
        .read()
        .token_restriction(id)?
        .filter(|r| rs.domain_id.as_ref().is_none_or(|d| *d == r.domain_id))
        .ok_or_else(|| ApiError::unauthorized("The mapping rule's token restriction does not exist."))?;
    if r.user_id.as_ref().is_some_and(|u| *u != user.id) {
        return Err(ApiError::unauthorized("The mapped identity is not the user the token restriction is bound to."));
    }
    Ok(Some(r))
}

/// The project a restricted login's token is scoped to.
pub async fn scope(node: &Core, r: &TokenRestriction, asked: Option<&Value>, user: &User) -> ApiResult<TokenScope> {
    let wanted = match (&r.project_id, asked) {
        (Some(p), None) => return Ok(TokenScope::Project(p.clone())),
        (_, asked) => crate::auth::scope::requested(node, asked, user).await?,
    };
    match (&wanted, &r.project_id) {
        (TokenScope::Project(p), Some(own)) if p != own => Err(ApiError::forbidden(
            "You are not authorized to perform the requested action: the token restriction binds this login to \
             another project.",
        )),
        (TokenScope::Project(_), _) => Ok(wanted),
        _ => Err(ApiError::forbidden(
            "You are not authorized to perform the requested action: a restricted token is project-scoped; name a \
             project in the scope.",
        )),
    }
}
