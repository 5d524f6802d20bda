//! Who a SCIM request acts as (spec, Authentication item 7): an API key
//! (`Authorization: Bearer kscim_…`, 401 otherwise), whose provider coordinate in the path's
//! domain has an enabled realm (403 otherwise, before anything else is read), and whose
//! grant through the realm's ruleset is a domain authorization on that domain (a project
//! grant, or none: 403). Its roles there are what the `identity/scim/*` policies decide on,
//! after ownership fencing.
//!
//! What a key resolves to is kept per applied state (any write empties it, as for tokens), so
//! a run of requests with one key costs one keyed hash and the per-use checks (expiry, source
//! address), not the reads behind them.

use std::collections::HashMap;
use std::net::IpAddr;
use std::ops::Deref;
use std::sync::{Arc, Mutex};

use axum::http::{header, HeaderMap, StatusCode};
use serde_json::json;

use super::wire::{ScimError, ScimResult};
use crate::api_keys::auth::{admit, find, presented_hash};
use crate::api_keys::simulate::{matched, Grant, GrantScope};
use crate::node::Node;
use crate::policy::{enforce_principal, Principal};
use crate::state::api_keys::ApiKey;
use crate::state::read::ScimReads;
use crate::state::scim::{Kind, RealmRef, ScimRealm};

/// What a key resolved to in one applied state.
pub struct Resolved {
    pub realm: ScimRealm,
    pub key: ApiKey,
    /// `api-key:{client_id}`: the policy input's `user_id`.
    principal: String,
    roles: Vec<String>,
    /// Policy decisions already made for this key in this state: (action, policy generation)
    /// → allowed. A run of one key's requests asks the same few questions.
    decisions: Mutex<HashMap<(String, u64), bool>>,
}

pub struct ScimCaller(Arc<Resolved>);

impl Deref for ScimCaller {
    type Target = Resolved;
    fn deref(&self) -> &Resolved {
        &self.0
    }
}

fn forbidden(detail: &str) -> ScimError {
    ScimError::new(StatusCode::FORBIDDEN, None, detail)
}

impl ScimCaller {
    pub fn realm_ref(&self) -> RealmRef {
        RealmRef { domain_id: self.realm.domain_id.clone(), provider_id: self.realm.provider_id.clone() }
    }

    /// `identity/scim/{user|group}/{action}` for this key's roles on the realm's domain (the
    /// target names only the realm, so the decision holds for every resource of it).
    pub fn authorize(&self, kind: Kind, action: &str) -> ScimResult<()> {
        let name = format!("identity/scim/{}/{action}", kind.tag());
        let memo = (name, crate::policy::global().generation());
        let known = self.decisions.lock().unwrap_or_else(|p| p.into_inner()).get(&memo).copied();
        let allowed = match known {
            Some(allowed) => allowed,
            None => {
                let p = Principal { id: &self.principal, domain_id: &self.realm.domain_id, roles: &self.roles };
                let target =
                    json!({"scim": {"domain_id": self.realm.domain_id, "provider_id": self.realm.provider_id}});
                let allowed = enforce_principal(&memo.0, &p, &target).is_ok();
                self.decisions.lock().unwrap_or_else(|p| p.into_inner()).insert(memo.clone(), allowed);
                allowed
            }
        };
        if allowed {
            Ok(())
        } else {
            Err(forbidden(&crate::http::ApiError::denied(&memo.0).message))
        }
    }
}

pub fn authenticate(node: &Node, headers: &HeaderMap, source: IpAddr, domain_id: &str) -> ScimResult<ScimCaller> {
    let authorization = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    let applied = node.app.state_version();
    let hash = presented_hash(node, authorization)?;
    let cache_key = (hash, domain_id.to_string());
    if let Some(r) = node.scim.callers.get(&cache_key, applied) {
        admit(&node.api_key_usage, &r.key, &cache_key.0, source)?;
        return Ok(ScimCaller(r));
    }
    let key = find(node, &node.api_key_usage, &cache_key.0, source)?;
    let realm: Option<ScimRealm> = node.engine.read().scim_realm(domain_id, &key.provider_id)?;
    let Some(realm) = realm.filter(|r| r.enabled) else {
        return Err(forbidden("No enabled SCIM realm serves this API key's provider in this domain."));
    };
    if key.domain_id != domain_id {
        return Err(forbidden("The API key belongs to another domain."));
    }
    let g = grant_of(node, &key, &realm.idp_id)?;
    match &g.scope {
        GrantScope::Domain(d) if d == domain_id => {}
        GrantScope::Domain(_) => return Err(forbidden("The API key's grant is on another domain.")),
        GrantScope::Project { .. } => {
            return Err(forbidden("SCIM needs a domain-scoped API key, not a project-scoped one."))
        }
    }
    let r = Arc::new(Resolved {
        principal: format!("api-key:{}", key.client_id),
        roles: g.roles,
        realm,
        key,
        decisions: Mutex::default(),
    });
    node.scim.callers.insert(cache_key, r.clone(), applied);
    Ok(ScimCaller(r))
}

/// The key's grant through the realm's ruleset: the rule's match kept per rulesets
/// revision and key (SCIM's own writes do not touch it), the role names read each time.
fn grant_of(node: &Node, key: &ApiKey, idp_id: &str) -> ScimResult<Grant> {
    let view = node.engine.read();
    let rev = crate::mapped_auth::rulesets::revision(&view)?;
    let cache_key = (key.client_id.clone(), idp_id.to_string());
    let m = match node.scim.grants.get(&cache_key, rev) {
        Some(m) => m,
        None => {
            let m =
                matched(node, &node.mapped.regexes, node.mapped.regex_deadline, key, Some(idp_id))?.ok().map(Arc::new);
            node.scim.grants.insert(cache_key, m.clone(), rev);
            m
        }
    };
    let m = m.ok_or_else(|| forbidden("The realm's mapping rule grants this API key nothing on the domain."))?;
    Ok(m.grant(&view)?)
}
