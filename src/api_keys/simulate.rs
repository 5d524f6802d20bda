//! What an API key is granted (api-shapes §8.3), worked out without its secret: by
//! `POST /v4/api-keys/simulate-access` and by every SCIM request the key makes. A key
//! authenticates as a principal presenting the claims `client_id`, `domain_id` and
//! `provider_id`; the enabled rulesets with the key's `provider_id` (of its domain, or global)
//! and a `federation` source map them, first matching rule wins, and the rule must grant
//! exactly one domain or project authorization (zero, several or a system one: no access).
//! When the key's provider coordinate has a SCIM realm, only the ruleset whose `federation`
//! source names the realm's `idp_id` counts (spec, "SCIM realm and resource index").

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::http::error::ApiResult;
use crate::mapping::engine::{self, Claims};
use crate::mapping::model::{Authorization, Source};
use crate::mapping::regex_cache::RegexCache;
use crate::state::api_keys::ApiKey;
use crate::state::read::ScimReads;
use crate::state::scim::ScimRealm;
use crate::state::Reader;
use crate::token::Tokens;

/// Where a key's grant lands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantScope {
    Domain(String),
    Project { project_id: String, project_domain_id: String },
}

/// What a key is granted: role names (implied roles not expanded) on one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub scope: GrantScope,
    pub roles: Vec<String>,
}

/// The rule's answer before role names are looked up: it depends only on the key's claims
/// and the rulesets, so it can be kept per rulesets revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched {
    pub scope: GrantScope,
    pub role_ids: Vec<String>,
}

impl Matched {
    /// The grant with the roles' current names (a role gone meanwhile grants nothing).
    pub fn grant(&self, view: &impl Reader) -> idnode_storage::Result<Grant> {
        let mut roles = BTreeSet::new();
        for id in &self.role_ids {
            if let Some(role) = view.role(id)? {
                roles.insert(role.name);
            }
        }
        Ok(Grant { scope: self.scope.clone(), roles: roles.into_iter().collect() })
    }
}

/// The claims a key presents to the mapping engine.
pub fn claims(k: &ApiKey) -> Claims {
    let mut m = Map::new();
    m.insert("client_id".into(), json!(k.client_id));
    m.insert("domain_id".into(), json!(k.domain_id));
    m.insert("provider_id".into(), json!(k.provider_id));
    Claims::from_json(&m)
}

/// The key's grant, or why it has none. `idp_id` narrows the rulesets to the one a SCIM
/// realm names.
pub fn grant(
    node: &Tokens,
    regexes: &RegexCache,
    deadline: Duration,
    k: &ApiKey,
    idp_id: Option<&str>,
) -> ApiResult<Result<Grant, &'static str>> {
    Ok(match matched(node, regexes, deadline, k, idp_id)? {
        Ok(m) => Ok(m.grant(&node.engine.read())?),
        Err(reason) => Err(reason),
    })
}

/// What the first matching rule grants the key, or why nothing; `regexes` and `deadline` are
/// the mapping engine's, as mapped logins use them.
pub fn matched(
    node: &Tokens,
    regexes: &RegexCache,
    deadline: Duration,
    k: &ApiKey,
    idp_id: Option<&str>,
) -> ApiResult<Result<Matched, &'static str>> {
    let claims = claims(k);
    let all = crate::mapped_auth::rulesets::all(node)?;
    let candidates = all.iter().filter(|l| {
        l.rs.enabled
            && l.rs.provider_id == k.provider_id
            && l.rs.domain_id.as_ref().is_none_or(|d| *d == k.domain_id)
            && match &l.rs.source {
                Source::Federation { idp_id: named } => idp_id.is_none_or(|want| want == named),
                _ => false,
            }
    });
    let mut found = None;
    for live in candidates {
        let ev = engine::evaluate(&live.rs, &claims, &k.domain_id, regexes, deadline);
        if let Some(m) = ev.result? {
            found = Some(m);
            break;
        }
    }
    let Some(m) = found else { return Ok(Err("no mapping rule matches the key")) };
    let [auth] = m.authorizations.as_slice() else {
        return Ok(Err("the matching rule must grant exactly one authorization"));
    };
    let scope = match auth {
        Authorization::Domain { domain_id, .. } => GrantScope::Domain(domain_id.clone()),
        Authorization::Project { project_id, project_domain_id, .. } => {
            GrantScope::Project { project_id: project_id.clone(), project_domain_id: project_domain_id.clone() }
        }
        Authorization::System { .. } => return Ok(Err("a system authorization cannot be granted to a key")),
    };
    Ok(Ok(Matched { scope, role_ids: auth.roles().iter().map(|r| r.id.clone()).collect() }))
}

fn refused(k: &ApiKey, reason: &str) -> Value {
    json!({"client_id": k.client_id, "domain_id": k.domain_id, "provider_id": k.provider_id,
           "matched": false, "reason": reason, "roles": []})
}

pub fn simulate(node: &Tokens, regexes: &RegexCache, deadline: Duration, k: &ApiKey) -> ApiResult<Value> {
    if k.revoked_at.is_some() || !k.enabled {
        return Ok(refused(k, "the key is disabled"));
    }
    if crate::clock::now_secs() >= k.expires_at {
        return Ok(refused(k, "the key has expired"));
    }
    let realm: Option<ScimRealm> = node.engine.read().scim_realm(&k.domain_id, &k.provider_id)?;
    let g = match grant(node, regexes, deadline, k, realm.as_ref().map(|r| r.idp_id.as_str()))? {
        Ok(g) => g,
        Err(reason) => return Ok(refused(k, reason)),
    };
    let scope = match &g.scope {
        GrantScope::Domain(d) => json!({"type": "domain", "domain_id": d}),
        GrantScope::Project { project_id, project_domain_id } => {
            json!({"type": "project", "project_id": project_id, "project_domain_id": project_domain_id})
        }
    };
    Ok(json!({"client_id": k.client_id, "domain_id": k.domain_id, "provider_id": k.provider_id,
              "matched": true, "roles": g.roles, "scope": scope}))
}
