//! Who a SCIM request acts as (spec, Authentication item 7): an API key
//! (`Authorization: Bearer kscim_…`, 401 otherwise), whose provider coordinate in the path's
//! domain has an enabled realm (403 otherwise, before anything else is read), and whose
//! grant through the realm's ruleset is a domain authorization on that domain (a project
//! grant, or none: 403). Its roles there are what the `identity/scim/*` policies decide on,
//! after ownership fencing.

use std::net::IpAddr;
use std::sync::Arc;

use axum::http::{header, HeaderMap, StatusCode};
use serde_json::json;

use super::wire::{ScimError, ScimResult};
use crate::api_keys::simulate::{grant, Grant, GrantScope};
use crate::node::Node;
use crate::policy::{enforce_principal, Principal};
use crate::state::api_keys::ApiKey;
use crate::state::cf;
use crate::state::scim::{keys, Kind, RealmRef, ScimRealm};

pub struct ScimCaller {
    pub realm: ScimRealm,
    pub key: ApiKey,
    /// `api-key:{client_id}`: the policy input's `user_id`, and the audit initiator's source.
    principal: String,
    roles: Vec<String>,
}

fn forbidden(detail: &str) -> ScimError {
    ScimError::new(StatusCode::FORBIDDEN, None, detail)
}

impl ScimCaller {
    pub fn realm_ref(&self) -> RealmRef {
        RealmRef { domain_id: self.realm.domain_id.clone(), provider_id: self.realm.provider_id.clone() }
    }

    /// `identity/scim/{user|group}/{action}` for this key's roles on the realm's domain.
    pub fn authorize(&self, kind: Kind, action: &str) -> ScimResult<()> {
        let p = Principal { id: &self.principal, domain_id: &self.realm.domain_id, roles: &self.roles };
        enforce_principal(
            &format!("identity/scim/{}/{action}", kind.tag()),
            &p,
            &json!({"scim": {"domain_id": self.realm.domain_id, "provider_id": self.realm.provider_id}}),
        )
        .map_err(|e| forbidden(&e.message))
    }
}

pub fn authenticate(node: &Node, headers: &HeaderMap, source: IpAddr, domain_id: &str) -> ScimResult<ScimCaller> {
    let authorization = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    let key = crate::api_keys::auth::authenticate(node, authorization, source)?;
    let realm: Option<ScimRealm> = node.engine.read().get_t(cf::SCIM, &keys::realm(domain_id, &key.provider_id))?;
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
    Ok(ScimCaller { principal: format!("api-key:{}", key.client_id), roles: g.roles.clone(), realm, key })
}

/// The key's grant through the realm's ruleset, once per applied state and key.
fn grant_of(node: &Node, key: &ApiKey, idp_id: &str) -> ScimResult<Arc<Grant>> {
    let applied = node.app.state_version();
    let cache_key = (key.client_id.clone(), idp_id.to_string());
    if let Some(g) = node.scim.grants.get(&cache_key, applied) {
        return g.ok_or_else(|| forbidden("The realm's mapping rule grants this API key nothing on the domain."));
    }
    let g = grant(node, key, Some(idp_id))?.ok().map(Arc::new);
    node.scim.grants.insert(cache_key, g.clone(), applied);
    g.ok_or_else(|| forbidden("The realm's mapping rule grants this API key nothing on the domain."))
}
