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

use axum::extract::{FromRef, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, StatusCode};
use serde_json::json;

use super::state::Scim;
use super::wire::{ScimError, ScimResult};
use crate::api_keys::simulate::{Grant, GrantScope, Matched};
use crate::context::Core;
use crate::http::client_ip::{SourceIp, TrustedProxies};
use crate::http::error::ApiResult;
use crate::policy::{enforce_principal, Principal};
use crate::state::api_keys::ApiKey;
use crate::state::read::ScimReads;
use crate::state::scim::{Kind, RealmRef, ScimRealm};

/// What SCIM asks of the API keys feature about a presented key (`api_keys::auth` and
/// `api_keys::simulate`). The router state hands it out (`State<Arc<dyn KeyChecks>>`), so
/// SCIM names neither the node nor the keys' per-node state (their batched uses).
pub trait KeyChecks: Send + Sync {
    /// The keyed hash of the secret an `Authorization: Bearer kscim_…` header presents (401
    /// otherwise).
    fn presented_hash(&self, authorization: Option<&str>) -> ApiResult<String>;
    /// The key whose secret has keyed hash `hash`, if a use of it from `source` passes.
    fn find(&self, hash: &str, source: IpAddr) -> ApiResult<ApiKey>;
    /// The checks of a use of a kept key from `source` now (401 unless all pass).
    fn admit(&self, key: &ApiKey, hash: &str, source: IpAddr) -> ApiResult<()>;
    /// What the first matching rule (of the realm's `idp_id` ruleset) grants the key.
    fn matched(&self, key: &ApiKey, idp_id: Option<&str>) -> ApiResult<Result<Matched, &'static str>>;
}

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

/// What every SCIM resource handler extracts before it reads the path and body: the core,
/// SCIM's per-node state, the API-key checks, the source address and the headers. The key is
/// checked only when the handler asks (`caller`), so a malformed body still answers first.
pub struct ScimRequest {
    pub node: Arc<Core>,
    pub scim: Arc<Scim>,
    keys: Arc<dyn KeyChecks>,
    source: IpAddr,
    pub headers: HeaderMap,
}

impl<S> FromRequestParts<S> for ScimRequest
where
    S: TrustedProxies + Send + Sync,
    Arc<Core>: FromRef<S>,
    Arc<Scim>: FromRef<S>,
    Arc<dyn KeyChecks>: FromRef<S>,
{
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let SourceIp(source) = SourceIp::from_request_parts(parts, state).await?;
        Ok(ScimRequest {
            node: Arc::<Core>::from_ref(state),
            scim: Arc::<Scim>::from_ref(state),
            keys: Arc::<dyn KeyChecks>::from_ref(state),
            source,
            headers: parts.headers.clone(),
        })
    }
}

impl ScimRequest {
    /// The caller its API key acts as in `domain_id`'s realm.
    pub fn caller(&self, domain_id: &str) -> ScimResult<ScimCaller> {
        authenticate(&self.node, &self.scim, &*self.keys, &self.headers, self.source, domain_id)
    }
}

/// What a request of `domain_id` from `source` acts as (the key its headers present).
pub fn authenticate(
    core: &Core,
    scim: &Scim,
    keys: &dyn KeyChecks,
    headers: &HeaderMap,
    source: IpAddr,
    domain_id: &str,
) -> ScimResult<ScimCaller> {
    let authorization = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    let applied = core.app.state_version();
    let hash = keys.presented_hash(authorization)?;
    let cache_key = (hash, domain_id.to_string());
    if let Some(r) = scim.callers.get(&cache_key, applied) {
        keys.admit(&r.key, &cache_key.0, source)?;
        return Ok(ScimCaller(r));
    }
    let key = keys.find(&cache_key.0, source)?;
    let realm: Option<ScimRealm> = core.engine.read().scim_realm(domain_id, &key.provider_id)?;
    let Some(realm) = realm.filter(|r| r.enabled) else {
        return Err(forbidden("No enabled SCIM realm serves this API key's provider in this domain."));
    };
    if key.domain_id != domain_id {
        return Err(forbidden("The API key belongs to another domain."));
    }
    let g = grant_of(core, scim, keys, &key, &realm.idp_id)?;
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
    scim.callers.insert(cache_key, r.clone(), applied);
    Ok(ScimCaller(r))
}

/// The key's grant through the realm's ruleset: the rule's match kept per rulesets
/// revision and key (SCIM's own writes do not touch it), the role names read each time.
fn grant_of(core: &Core, scim: &Scim, keys: &dyn KeyChecks, key: &ApiKey, idp_id: &str) -> ScimResult<Grant> {
    let view = core.engine.read();
    let rev = crate::token::rulesets::revision(&view)?;
    let cache_key = (key.client_id.clone(), idp_id.to_string());
    let m = match scim.grants.get(&cache_key, rev) {
        Some(m) => m,
        None => {
            let m = keys.matched(key, Some(idp_id))?.ok().map(Arc::new);
            scim.grants.insert(cache_key, m.clone(), rev);
            m
        }
    };
    let m = m.ok_or_else(|| forbidden("The realm's mapping rule grants this API key nothing on the domain."))?;
    Ok(m.grant(&view)?)
}
