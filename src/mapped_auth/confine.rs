//! What a login may reach, checked against the state at the login: the state moves on after
//! a ruleset is written (a group it names by name is created later and made privileged, a
//! role comes to imply `admin`, a user id it names belongs to someone else), and a ruleset
//! written before these checks existed was never checked at all.
//!
//! - A `local` login becomes only a user of the domain the rule resolved that this provider
//!   created or federated (its `federated` identities name the provider), or that SCIM
//!   provisioned for a realm of this provider (a live ownership record whose realm names the
//!   provider as its `idp_id`); never any other user, whatever the rule's `user_id` says.
//! - A ruleset of a domain binds only groups of that domain that are not privileged, and
//!   grants no role that is or implies `admin` or `service` (`mapping::targets`, the guard's
//!   definitions). A global ruleset, which only a cloud administrator can write, is the one
//!   place mapping into privileged groups and roles stays possible.

use crate::http::error::ApiResult;
use crate::mapping::engine::{Matched, ResolvedGroup};
use crate::mapping::model::MappingRuleSet;
use crate::mapping::targets;
use crate::openfga::OpenFga;
use crate::state::keys::ns;
use crate::state::model::{Group, User};
use crate::state::providers::Provider;
use crate::state::read::ScimReads;
use crate::state::scim::Kind;
use crate::state::Reader;

fn existing(view: &impl Reader, g: &ResolvedGroup) -> idnode_storage::Result<Option<Group>> {
    match &g.group_id {
        Some(id) => view.group(id),
        None => match view.id_by_name(ns::GROUP_NAME, &g.group_domain_id, &g.group_name)? {
            Some(id) => view.group(&id),
            None => Ok(None),
        },
    }
}

/// The matched rule's groups and roles, for a ruleset of a domain.
pub fn rule(view: &impl Reader, store: Option<&OpenFga>, rs: &MappingRuleSet, m: &Matched) -> ApiResult<()> {
    let Some(own) = rs.domain_id.as_deref() else { return Ok(()) };
    for g in &m.groups {
        targets::group_allowed(view, store, &m.rule_name, existing(view, g)?.as_ref(), &g.group_domain_id, own)?;
    }
    let roles: Vec<String> = m.authorizations.iter().flat_map(|a| a.roles().iter().map(|r| r.id.clone())).collect();
    targets::roles_allowed(view, &m.rule_name, &roles, own)
}

/// Whether SCIM provisioned `user` (still live) for a realm whose identity provider is `p`.
fn scim_owned(view: &impl Reader, user: &User, p: &Provider) -> idnode_storage::Result<bool> {
    let Some(ix) = view.scim_index(Kind::User, &user.id)? else {
        return Ok(false);
    };
    if ix.kind != Kind::User || ix.domain_id != user.domain_id || ix.deprovisioned_at.is_some() {
        return Ok(false);
    }
    let realm = view.scim_realm(&ix.domain_id, &ix.provider_id)?;
    Ok(realm.is_some_and(|r| r.idp_id == p.id))
}

/// An existing user a `local` login through `p` resolved to, in the rule's `domain`.
pub fn local_user(view: &impl Reader, user: &User, domain: &str, p: &Provider) -> ApiResult<()> {
    let made_here = user.federated.iter().any(|f| f.idp_id == p.id);
    if user.domain_id == domain && (made_here || scim_owned(view, user, p)?) {
        return Ok(());
    }
    Err(targets::refuse(
        "user_mapping_unauthorized",
        "The mapped user was neither created by this identity provider nor provisioned for it.",
    ))
}
