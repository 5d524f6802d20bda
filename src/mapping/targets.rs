//! What a ruleset reaches outside itself: the provider its `source` names, and the groups,
//! roles and user its rules bind. A ruleset of a domain feeds on, and hands out, only what
//! belongs to that domain and is not privileged (the guard's definition); the write-time
//! checks (`checks`, for everyone but a cloud administrator) and every login through a
//! domain-bound ruleset (`mapped_auth`, since the state moves on after a ruleset is written)
//! ask the same questions here.

use super::model::{GroupBinding, Source};
use super::template::{self, Part};
use super::MappingError;
use crate::http::error::{ApiError, ApiResult};
use crate::openfga::OpenFga;
use crate::policy::guard;
use crate::state::keys::ns;
use crate::state::model::Group;
use crate::state::providers::{Provider, ProviderConfig, ProviderKind};
use crate::state::read::ProviderReads;
use crate::state::Reader;

pub fn refuse(key: &'static str, message: impl Into<String>) -> ApiError {
    MappingError::new(403, key, message).into()
}

/// A template's value when no claim decides it (`${enclosing_domain_id}` is `enclosing`);
/// `None` when a claim does, or it does not parse (validation refuses those).
pub fn literal(t: &str, enclosing: &str) -> Option<String> {
    let parts = template::parse(t).ok()?;
    let mut out = String::new();
    for p in parts {
        match p {
            Part::Text(s) => out.push_str(s),
            Part::EnclosingDomain => out.push_str(enclosing),
            Part::Claim(_) => return None,
        }
    }
    Some(out)
}

/// Whether `source` names `p`: a federation `idp_id` or a k8s `cluster_id` is the provider's
/// id; a SPIFFE `trust_domain` is the trust domain record's id, or its name when the record
/// belongs to the ruleset's own domain (`ruleset_domain`; `None`: a global ruleset, which
/// names global records only). A trust domain's name is no proof of ownership: any domain
/// may register a record of any name.
pub fn names(source: &Source, ruleset_domain: Option<&str>, p: &Provider) -> bool {
    match (source, &p.config) {
        (Source::Federation { idp_id }, ProviderConfig::Oidc(_)) => *idp_id == p.id,
        (Source::K8s { cluster_id }, ProviderConfig::K8s(_)) => *cluster_id == p.id,
        (Source::Spiffe { trust_domain }, ProviderConfig::Spiffe(td)) => {
            *trust_domain == p.id || (*trust_domain == td.trust_domain && p.domain_id.as_deref() == ruleset_domain)
        }
        _ => false,
    }
}

/// Whether provider `p` may feed a ruleset of `ruleset_domain`: never across domains. A
/// global provider or a global ruleset is a cloud administrator's choice (only one may
/// write a ruleset naming a provider outside its domain, or a global ruleset).
pub fn feeds(p: &Provider, ruleset_domain: Option<&str>) -> bool {
    match (p.domain_id.as_deref(), ruleset_domain) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

/// The registered providers `source` names (a SPIFFE name may name several records).
pub fn source_providers(r: &impl Reader, source: &Source, ruleset_domain: Option<&str>) -> ApiResult<Vec<Provider>> {
    let (kind, id) = match source {
        Source::Federation { idp_id } => (ProviderKind::Oidc, idp_id),
        Source::K8s { cluster_id } => (ProviderKind::K8s, cluster_id),
        Source::Spiffe { trust_domain } => (ProviderKind::Spiffe, trust_domain),
    };
    if let Some(p) = r.provider(kind, id)? {
        return Ok(vec![p]);
    }
    if kind != ProviderKind::Spiffe {
        return Ok(Vec::new());
    }
    let all: Vec<Provider> = r.providers_of_kind(kind)?;
    Ok(all.into_iter().filter(|p| names(source, ruleset_domain, p)).collect())
}

/// A ruleset of domain `own` names a provider of that domain as its source.
pub fn source_in_domain(r: &impl Reader, source: &Source, own: &str) -> ApiResult<()> {
    let found = source_providers(r, source, Some(own))?;
    if !found.is_empty() && found.iter().all(|p| p.domain_id.as_deref() == Some(own)) {
        return Ok(());
    }
    Err(refuse(
        "cross_domain_mapping",
        format!(
            "The mapping's source must be a provider registered in your domain {own}; a global provider or \
             another domain's needs a cloud administrator."
        ),
    ))
}

/// The existing group a binding names: by id, else (a name no claim decides) by name in
/// the group's domain (`group_domain_id`, else `domain`).
pub fn bound_group(r: &impl Reader, g: &GroupBinding, domain: &str) -> ApiResult<Option<Group>> {
    if let Some(id) = &g.group_id {
        return Ok(r.group(id)?);
    }
    let domain = g.group_domain_id.as_deref().unwrap_or(domain);
    let Some(name) = literal(&g.group_name, domain) else { return Ok(None) };
    Ok(r.id_by_name(ns::GROUP_NAME, domain, &name)?.map(|id| r.group(&id)).transpose()?.flatten())
}

/// A group a ruleset of `own` may put principals in: of that domain, and not privileged.
/// `existing`: the group when it exists; `domain`: the domain it would be created in.
pub fn group_allowed(
    r: &impl Reader,
    store: Option<&OpenFga>,
    rule: &str,
    existing: Option<&Group>,
    domain: &str,
    own: &str,
) -> ApiResult<()> {
    let domain = existing.map_or(domain, |g| g.domain_id.as_str());
    if domain != own {
        return Err(refuse(
            "cross_domain_mapping",
            format!("Rule {rule:?}: a group it binds is outside the domain {own}."),
        ));
    }
    if let Some(g) = existing {
        if guard::privileged_group(r, store, &g.id)? {
            return Err(refuse(
                "group_assignment_unauthorized",
                format!(
                    "Rule {rule:?}: group {} holds the admin or service role, a system role or a role on the admin \
                     project; only a cloud administrator's global ruleset may bind it.",
                    g.id
                ),
            ));
        }
    }
    Ok(())
}

/// Roles a ruleset of `own` may grant: global or of that domain, none of them `admin` or
/// `service` or implying one.
pub fn roles_allowed(r: &impl Reader, rule: &str, role_ids: &[String], own: &str) -> ApiResult<()> {
    for id in role_ids {
        if let Some(role) = r.role(id)? {
            if role.domain_id.as_deref().is_some_and(|d| d != own) {
                return Err(refuse(
                    "cross_domain_mapping",
                    format!("Rule {rule:?}: role {id} is outside the domain {own}."),
                ));
            }
        }
    }
    if guard::holds_guarded_role(r, role_ids)? {
        return Err(refuse(
            "role_grant_unauthorized",
            format!(
                "Rule {rule:?}: it grants the admin or service role, or a role implying one; only a cloud \
                 administrator's global ruleset may."
            ),
        ));
    }
    Ok(())
}
