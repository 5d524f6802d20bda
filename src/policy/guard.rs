//! Guard rails on delegated administration. Keystone's personas let a domain manager manage
//! the users, groups, projects and grants of its domain; nothing in the policy files stops
//! that authority from reaching the cloud's own administrators (reset the bootstrap admin's
//! password, grant oneself a role on the admin project, which the strict mode treats as system
//! scope). These checks run after `enforce`, in every `[policy] admin_scope`, whatever the
//! policy files say, and only a cloud administrator (`Persona::cloud_admin`) passes them. They
//! run before anything is proposed, so a refused request changes nothing.

use std::collections::BTreeSet;

use crate::http::error::{ApiError, ApiResult};
use crate::openfga::driver::blocking;
use crate::openfga::{DriverError, OpenFga};
use crate::policy::persona::Persona;
use crate::reads::{hierarchy, listing};
use crate::state::model::{ActorKind, Assignment, Target};
use crate::state::Reader;
use crate::token::{Delegation, TokenScope, ValidToken};

/// Who passes the guard rails: a cloud administrator (`Persona::cloud_admin`), but never by
/// way of a domain-scoped token. In Keystone's mode (`admin_scope = any`) an admin of a
/// domain is a cloud administrator for policy; the guard rails keep that authority from
/// climbing out of the domain (it cannot hand out `admin` or `service`, touch the admin
/// project or the cloud's administrators).
pub(crate) fn cloud_admin(ctx: &ValidToken) -> bool {
    Persona { ctx }.cloud_admin() && !matches!(ctx.payload.scope, TokenScope::Domain(_))
}

fn refuse(what: &str) -> ApiError {
    ApiError::forbidden(format!("Only a cloud administrator may {what}."))
}

/// Whether any of `role_ids` is, or implies, `admin` or `service`.
pub(crate) fn holds_guarded_role(r: &impl Reader, role_ids: &[String]) -> ApiResult<bool> {
    let closure = listing::implied_closure(r, role_ids)?;
    for id in closure {
        if r.role(&id)?.is_some_and(|role| role.is_guarded()) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The configured admin project (Keystone's `is_admin_project`), once bootstrapped.
fn admin_project(r: &impl Reader) -> ApiResult<Option<String>> {
    Ok(r.bootstrap_info()?.map(|b| b.admin_project_id))
}

/// Whether a grant of this shape lands on the admin project: directly, or inherited onto it.
fn reaches_admin_project(r: &impl Reader, target: &Target, inherited: bool) -> ApiResult<bool> {
    let Some(admin) = admin_project(r)? else { return Ok(false) };
    Ok(match target {
        Target::Project(p) if *p == admin && !inherited => true,
        Target::System => false,
        t if inherited => hierarchy::reach(r, t)?.contains(&admin),
        _ => false,
    })
}

/// A user holding `admin` or `service` anywhere (directly, through a group, inherited or
/// implied) or any role on the system: in the replicated grants, or in the relationship store
/// when the node has one.
pub fn privileged_user(r: &impl Reader, store: Option<&OpenFga>, user_id: &str) -> ApiResult<bool> {
    let f = listing::Filter { user: Some(user_id.to_string()), effective: true, ..Default::default() };
    let mut held: Vec<(Target, String)> = listing::list(r, &f)?.into_iter().map(|e| (e.target, e.role_id)).collect();
    if let Some(fga) = store {
        match blocking(fga.resolved_for_user(r, user_id, None)) {
            Ok(found) => held.extend(found.into_iter().map(|a| (a.target, a.role_id))),
            Err(e) => return Ok(fail_closed(&e)),
        }
    }
    if held.iter().any(|(t, _)| *t == Target::System) {
        return Ok(true);
    }
    let roles: BTreeSet<String> = held.into_iter().map(|(_, role)| role).collect();
    holds_guarded_role(r, &roles.into_iter().collect::<Vec<_>>())
}

/// A group whose grants make its members privileged, or that reach the admin project: in the
/// replicated grants, or in the relationship store when the node has one.
pub fn privileged_group(r: &impl Reader, store: Option<&OpenFga>, group_id: &str) -> ApiResult<bool> {
    let f = listing::Filter { group: Some(group_id.to_string()), ..Default::default() };
    let mut grants: Vec<Assignment> = listing::list(r, &f)?.into_iter().map(|e| e.grant).collect();
    if let Some(fga) = store {
        match blocking(fga.grants_of_actor(r, ActorKind::Group, group_id)) {
            Ok(found) => grants.extend(found),
            Err(e) => return Ok(fail_closed(&e)),
        }
    }
    for a in &grants {
        if a.target == Target::System || reaches_admin_project(r, &a.target, a.inherited)? {
            return Ok(true);
        }
    }
    let roles: Vec<String> = grants.into_iter().map(|a| a.role_id).collect();
    holds_guarded_role(r, &roles)
}

/// A store that cannot say whether an actor is privileged: the actor counts as privileged, so
/// only a cloud administrator passes (the rails never open because the store is down).
fn fail_closed(e: &DriverError) -> bool {
    tracing::warn!("guard rails: the relationship store could not answer ({e}); treating the actor as privileged");
    true
}

/// Update, disable, delete or set the password of `user_id`.
pub fn change_user(r: &impl Reader, store: Option<&OpenFga>, ctx: &ValidToken, user_id: &str) -> ApiResult<()> {
    if cloud_admin(ctx) || !privileged_user(r, store, user_id)? {
        return Ok(());
    }
    Err(refuse("change, disable or delete a user who holds the admin or service role or a system role"))
}

/// Update or delete a group, or change its members.
pub fn change_group(r: &impl Reader, store: Option<&OpenFga>, ctx: &ValidToken, group_id: &str) -> ApiResult<()> {
    if cloud_admin(ctx) || !privileged_group(r, store, group_id)? {
        return Ok(());
    }
    Err(refuse("change a group that holds the admin or service role, a system role or a role on the admin project"))
}

/// Create or revoke a grant (direct or inherited).
pub fn change_grant(r: &impl Reader, ctx: &ValidToken, a: &Assignment) -> ApiResult<()> {
    if cloud_admin(ctx) {
        return Ok(());
    }
    if a.target == Target::System {
        return Err(refuse("grant or revoke a role on the system"));
    }
    if reaches_admin_project(r, &a.target, a.inherited)? {
        return Err(refuse("grant or revoke a role on the admin project"));
    }
    if holds_guarded_role(r, std::slice::from_ref(&a.role_id))? {
        return Err(refuse("grant or revoke the admin or service role, or a role that implies one"));
    }
    Ok(())
}

/// Update or delete a project: the admin project is the cloud administrators' own.
pub fn change_project(r: &impl Reader, ctx: &ValidToken, project_id: &str) -> ApiResult<()> {
    if cloud_admin(ctx) || admin_project(r)?.as_deref() != Some(project_id) {
        return Ok(());
    }
    Err(refuse("change or delete the admin project"))
}

/// Disable or delete a domain: the one holding the bootstrap administrator is the cloud
/// administrators' own, and losing it locks everyone out.
pub fn disable_domain(r: &impl Reader, ctx: &ValidToken, domain_id: &str) -> ApiResult<()> {
    if cloud_admin(ctx) {
        return Ok(());
    }
    let Some(b) = r.bootstrap_info()? else { return Ok(()) };
    let admin_domain = r.user(&b.admin_user_id)?.map(|u| u.domain_id);
    if admin_domain.as_deref() == Some(domain_id) {
        return Err(refuse("disable or delete the domain of the bootstrap administrator"));
    }
    Ok(())
}

/// Whether `ctx` is `user_id` acting on its own behalf: its own token, not one minted for a
/// trust (even an impersonating one), a mapping rule, a Keystone federated login or OAuth1
/// access token, or a signed request. An application credential's token counts only when the
/// credential is unrestricted, Keystone's mark of one that may create further credentials.
fn acting_as_itself(ctx: &ValidToken, user_id: &str) -> bool {
    if ctx.user.id != user_id || ctx.payload.is_delegated() {
        return false;
    }
    match &ctx.payload.delegation {
        Delegation::None => true,
        Delegation::AppCred(_) => ctx.app_cred.as_ref().is_some_and(|a| a.unrestricted),
        Delegation::Trust(_) | Delegation::Mapped(_) | Delegation::Federated(_) | Delegation::OAuth1(_) => false,
    }
}

/// Create, or rewrite, anything that lets its holder sign in as `user_id`: a passkey, a
/// credential (EC2 or any `/v3/credentials` record), an application credential, a password.
/// Whoever holds it becomes that user, so for a user who holds the admin or service role or
/// a system role only a cloud administrator or the user itself may (see
/// [`acting_as_itself`]); for anyone else policy alone decides.
pub fn add_authenticator(r: &impl Reader, store: Option<&OpenFga>, ctx: &ValidToken, user_id: &str) -> ApiResult<()> {
    if cloud_admin(ctx) || acting_as_itself(ctx, user_id) || !privileged_user(r, store, user_id)? {
        return Ok(());
    }
    Err(refuse(
        "give a way to sign in (a passkey, a credential or a password) to a user who holds the admin or service role \
         or a system role",
    ))
}

/// Rename or remove a way `user_id` signs in (a passkey), or end its OAuth2 sessions. It
/// gives nobody a way in, but it reaches the user: for a user who holds the admin or service
/// role or a system role, only a cloud administrator or the user itself may.
pub fn manage_sign_in(r: &impl Reader, store: Option<&OpenFga>, ctx: &ValidToken, user_id: &str) -> ApiResult<()> {
    if cloud_admin(ctx) || acting_as_itself(ctx, user_id) || !privileged_user(r, store, user_id)? {
        return Ok(());
    }
    Err(refuse(
        "change the passkeys or end the sessions of a user who holds the admin or service role or a system role",
    ))
}

/// [`change_user`] for a caller that is never a cloud administrator (an API key, e.g. a SCIM
/// realm's): it may not update, disable or delete a privileged user.
pub fn change_user_by_key(r: &impl Reader, store: Option<&OpenFga>, user_id: &str) -> ApiResult<()> {
    if !privileged_user(r, store, user_id)? {
        return Ok(());
    }
    Err(refuse("change, disable or delete a user who holds the admin or service role or a system role"))
}

/// [`change_group`] for a caller that is never a cloud administrator (an API key): it may not
/// change, or change the members of, a privileged group.
pub fn change_group_by_key(r: &impl Reader, store: Option<&OpenFga>, group_id: &str) -> ApiResult<()> {
    if !privileged_group(r, store, group_id)? {
        return Ok(());
    }
    Err(refuse("change a group that holds the admin or service role, a system role or a role on the admin project"))
}

/// Create, change or delete a token restriction (its old and its new form): one bound to a
/// privileged user or to the admin project, or naming a role that is or implies `admin` or
/// `service`, shapes what the cloud administrators' tokens carry, so it is theirs alone.
pub fn change_restriction(
    r: &impl Reader,
    store: Option<&OpenFga>,
    ctx: &ValidToken,
    user_id: Option<&str>,
    project_id: Option<&str>,
    role_ids: &[String],
) -> ApiResult<()> {
    if cloud_admin(ctx) {
        return Ok(());
    }
    if let Some(u) = user_id {
        if privileged_user(r, store, u)? {
            return Err(refuse(
                "bind a token restriction to a user who holds the admin or service role or a system role",
            ));
        }
    }
    if project_id.is_some() && admin_project(r)?.as_deref() == project_id {
        return Err(refuse("bind a token restriction to the admin project"));
    }
    if holds_guarded_role(r, role_ids)? {
        return Err(refuse("name the admin or service role, or a role that implies one, in a token restriction"));
    }
    Ok(())
}

/// Create, change or delete a global object (an identity provider or mapping ruleset of no
/// domain): global providers feed global rulesets, which may map logins to any domain, so a
/// domain's own administrators (a domain-scoped admin in Keystone's mode included) never
/// touch them.
pub fn change_global(ctx: &ValidToken, domain_id: Option<&str>, what: &str) -> ApiResult<()> {
    if domain_id.is_some() || cloud_admin(ctx) {
        return Ok(());
    }
    Err(refuse(what))
}
