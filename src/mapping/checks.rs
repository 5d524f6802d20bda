//! The spec's two-tier create checks ("Mapping administration (v4)"), which read state and
//! the caller's token; the stateless ones are `validate`. They run on every write (create,
//! PUT, rule mutation), so a rule a domain manager could not create cannot be reached by
//! replacing or mutating one either.
//!
//! Tier 1: a rule with `is_system` needs a system administrator. Tier 2, for everyone but a
//! cloud administrator (`policy::guard::cloud_admin`, never by a domain-scoped token): the
//! ruleset stays in the operator's own domain (the domain of the token's scope, else the
//! user's), its `source` is a provider of that domain, the operator holds every role it
//! grants on the target, and `admin` on the domain of every group it binds (by id or by
//! name); and what the ruleset names stays in the domain and is not privileged (`targets`:
//! no group, role or user of another domain, no privileged group, no role that is or implies
//! `admin` or `service`, no privileged user). Roles exist: apply checks that (422
//! `role_not_found`).
//! And for everyone: a `provider_id` with an enabled SCIM realm (in the ruleset's domain; any,
//! for a global ruleset) refuses `project` authorizations (422
//! `scim_realm_project_authorization`): a realm's keys act on their domain only; and a rule's
//! `token_restriction_id` names an existing restriction of the ruleset's domain.

use std::collections::{BTreeMap, BTreeSet};

use super::model::{Authorization, DomainResolutionMode, MappingRule, MappingRuleSet};
use super::targets;
use super::MappingError;
use crate::http::error::{ApiError, ApiResult};
use crate::openfga::driver::blocking;
use crate::openfga::OpenFga;
use crate::policy::{guard, Persona};
use crate::reads::listing;
use crate::state::keys::ns;
use crate::state::model::Target;
use crate::state::read::{RestrictionReads, ScimReads};
use crate::state::Reader;
use crate::token::ValidToken;

/// Bypasses tier 2.
pub fn is_admin(ctx: &ValidToken) -> bool {
    guard::cloud_admin(ctx)
}

/// May write `is_system` rules: a cloud administrator on the system or the admin project.
pub fn is_system_admin(ctx: &ValidToken) -> bool {
    let p = Persona { ctx };
    p.cloud_admin() && (p.system_scoped() || ctx.is_admin_project)
}

/// The operator's own domain.
pub fn own_domain(ctx: &ValidToken) -> String {
    Persona { ctx }.scope_domain().map(str::to_string).unwrap_or_else(|| ctx.user.domain_id.clone())
}

fn refuse(key: &'static str, message: impl Into<String>) -> ApiError {
    MappingError::new(403, key, message).into()
}

/// Checked before the stateless validation (which forces `domain_id` null in these modes).
pub fn mode(ctx: &ValidToken, rs: &MappingRuleSet) -> ApiResult<()> {
    if rs.domain_resolution_mode != DomainResolutionMode::Fixed && !is_admin(ctx) {
        return Err(MappingError::invalid(
            "domain_resolution_mode_requires_admin",
            "Only an administrator may use the claims_or_mapping and claims_only domain resolution modes.",
        )
        .into());
    }
    Ok(())
}

/// A ruleset of a provider with an enabled SCIM realm grants no project authorization.
pub fn scim_realm(r: &impl Reader, rs: &MappingRuleSet) -> ApiResult<()> {
    let project =
        rs.rules.iter().find(|rule| rule.authorizations.iter().any(|a| matches!(a, Authorization::Project { .. })));
    if let Some(rule) = project {
        if r.scim_realm_active(rs.domain_id.as_deref(), &rs.provider_id)? {
            return Err(MappingError::invalid(
                "scim_realm_project_authorization",
                format!(
                    "Rule {:?}: provider {} has an active SCIM realm, so its rulesets grant no project authorization.",
                    rule.name, rs.provider_id
                ),
            )
            .into());
        }
    }
    Ok(())
}

/// Every token restriction the rules name exists, and (for a ruleset of a domain) is that
/// domain's: a restriction only narrows, but another domain's is not the writer's to use.
pub fn restrictions(r: &impl Reader, rs: &MappingRuleSet) -> ApiResult<()> {
    for rule in &rs.rules {
        let Some(id) = &rule.token_restriction_id else { continue };
        let Some(found) = r.token_restriction(id)? else {
            return Err(MappingError::invalid(
                "token_restriction_not_found",
                format!("Rule {:?}: token restriction {id} does not exist.", rule.name),
            )
            .into());
        };
        if rs.domain_id.as_ref().is_some_and(|d| *d != found.domain_id) {
            return Err(refuse(
                "cross_domain_mapping",
                format!("Rule {:?}: token restriction {id} belongs to another domain.", rule.name),
            ));
        }
    }
    Ok(())
}

/// Both tiers, on a validated ruleset.
pub fn tiers(r: &impl Reader, store: Option<&OpenFga>, ctx: &ValidToken, rs: &MappingRuleSet) -> ApiResult<()> {
    if rs.rules.iter().any(|rule| rule.identity.is_system) && !is_system_admin(ctx) {
        return Err(ApiError::forbidden("Only a system administrator may create a rule with is_system."));
    }
    if is_admin(ctx) {
        return Ok(());
    }
    mode(ctx, rs)?;
    let own = own_domain(ctx);
    if rs.domain_id.as_deref() != Some(own.as_str()) {
        return Err(refuse("cross_domain_mapping", format!("A mapping you create must belong to your domain {own}.")));
    }
    targets::source_in_domain(r, &rs.source, &own)?;
    let held = held_roles(r, store, &ctx.user.id)?;
    let holds = |target: &Target, role: &str| held.get(target).is_some_and(|s| s.contains(role));
    for rule in &rs.rules {
        for auth in &rule.authorizations {
            let target = match auth {
                Authorization::Project { project_id, project_domain_id, .. } => {
                    let actual = r.project(project_id)?.map(|p| p.domain_id);
                    if *project_domain_id != own || actual.is_some_and(|d| d != own) {
                        return Err(refuse(
                            "cross_domain_mapping",
                            format!("Rule {:?}: project {project_id} is outside your domain {own}.", rule.name),
                        ));
                    }
                    Target::Project(project_id.clone())
                }
                Authorization::Domain { domain_id, .. } => {
                    if *domain_id != own {
                        return Err(refuse(
                            "domain_mapping_unauthorized",
                            format!(
                                "Rule {:?}: only an administrator may grant roles on domain {domain_id}.",
                                rule.name
                            ),
                        ));
                    }
                    Target::Domain(domain_id.clone())
                }
                Authorization::System { .. } => {
                    return Err(MappingError::invalid(
                        "system_scope_requires_is_system",
                        format!("Rule {:?}: a system authorization needs is_system and an administrator.", rule.name),
                    )
                    .into())
                }
            };
            if let Some(role) = auth.roles().iter().find(|role| !holds(&target, &role.id)) {
                return Err(refuse(
                    "role_grant_unauthorized",
                    format!("Rule {:?}: you do not hold role {} on the rule's target.", rule.name, role.id),
                ));
            }
        }
        let roles: Vec<String> =
            rule.authorizations.iter().flat_map(|a| a.roles().iter().map(|r| r.id.clone())).collect();
        targets::roles_allowed(r, &rule.name, &roles, &own)?;
        let admin_role = r.id_by_name(ns::ROLE_NAME, "", "admin")?;
        for g in &rule.groups {
            // By id or by a name no claim decides, the group that exists gets the same checks.
            let existing = targets::bound_group(r, g, &own)?;
            let domain = g.group_domain_id.clone().unwrap_or_else(|| own.clone());
            targets::group_allowed(r, store, &rule.name, existing.as_ref(), &domain, &own)?;
            if !admin_role.as_deref().is_some_and(|a| holds(&Target::Domain(own.clone()), a)) {
                return Err(refuse(
                    "group_assignment_unauthorized",
                    format!("Rule {:?}: you need the admin role on the domain of group {}.", rule.name, g.group_name),
                ));
            }
        }
        user_allowed(r, store, rule, &own)?;
    }
    Ok(())
}

/// A user the rule names by a `user_id` no claim decides: of the domain, and not privileged
/// (whether the login may become it is decided again at each login: `mapped_auth`).
fn user_allowed(r: &impl Reader, store: Option<&OpenFga>, rule: &MappingRule, own: &str) -> ApiResult<()> {
    let Some(id) = rule.identity.user_id.as_deref().and_then(|t| targets::literal(t, own)) else { return Ok(()) };
    let Some(user) = r.user(&id)? else { return Ok(()) };
    if user.domain_id != own {
        return Err(refuse(
            "cross_domain_mapping",
            format!("Rule {:?}: user {id} is outside your domain {own}.", rule.name),
        ));
    }
    if guard::privileged_user(r, store, &id)? {
        return Err(refuse(
            "user_mapping_unauthorized",
            format!("Rule {:?}: user {id} holds the admin or service role or a system role.", rule.name),
        ));
    }
    Ok(())
}

/// The roles the user holds on each target: direct, through groups, inherited and implied,
/// and what the relationship store resolves when the node has one (a store that cannot answer
/// gives none: the checks then refuse).
fn held_roles(
    r: &impl Reader,
    store: Option<&OpenFga>,
    user_id: &str,
) -> ApiResult<BTreeMap<Target, BTreeSet<String>>> {
    let f = listing::Filter { user: Some(user_id.to_string()), effective: true, ..Default::default() };
    let mut out: BTreeMap<Target, BTreeSet<String>> = BTreeMap::new();
    for e in listing::list(r, &f)? {
        out.entry(e.target).or_default().insert(e.role_id);
    }
    if let Some(fga) = store {
        match blocking(fga.resolved_for_user(r, user_id, None)) {
            Ok(found) => {
                for a in found {
                    out.entry(a.target).or_default().insert(a.role_id);
                }
            }
            Err(e) => tracing::warn!("mapping checks: the relationship store could not answer ({e})"),
        }
    }
    Ok(out)
}
