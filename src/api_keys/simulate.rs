//! `POST /v4/api-keys/simulate-access` (api-shapes §8.3): what a key would be granted, worked
//! out without its secret. A key authenticates as a principal presenting the claims
//! `client_id`, `domain_id` and `provider_id`; the enabled rulesets with the key's
//! `provider_id` (of its domain, or global) and a `federation` source map them, first
//! matching rule wins, and the rule must grant exactly one domain or project authorization
//! (zero, several or a system one: no access, as the key's use would be refused). SCIM realms
//! (next) narrow the rulesets to the one naming the realm's `idp_id`.

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use crate::http::error::ApiResult;
use crate::mapping::engine::{self, Claims};
use crate::mapping::model::{Authorization, Source};
use crate::node::Node;
use crate::state::api_keys::ApiKey;
use crate::state::Reader;

fn refused(k: &ApiKey, reason: &str) -> Value {
    json!({"client_id": k.client_id, "domain_id": k.domain_id, "provider_id": k.provider_id,
           "matched": false, "reason": reason, "roles": []})
}

/// The claims a key presents to the mapping engine.
pub fn claims(k: &ApiKey) -> Claims {
    let mut m = Map::new();
    m.insert("client_id".into(), json!(k.client_id));
    m.insert("domain_id".into(), json!(k.domain_id));
    m.insert("provider_id".into(), json!(k.provider_id));
    Claims::from_json(&m)
}

pub fn simulate(node: &Node, k: &ApiKey) -> ApiResult<Value> {
    if k.revoked_at.is_some() || !k.enabled {
        return Ok(refused(k, "the key is disabled"));
    }
    if crate::oauth2::now() >= k.expires_at {
        return Ok(refused(k, "the key has expired"));
    }
    let claims = claims(k);
    let all = crate::mapped_auth::rulesets::all(node)?;
    let candidates = all.iter().filter(|l| {
        l.rs.enabled
            && l.rs.provider_id == k.provider_id
            && l.rs.domain_id.as_ref().is_none_or(|d| *d == k.domain_id)
            && matches!(l.rs.source, Source::Federation { .. })
    });
    let mut found = None;
    for live in candidates {
        let ev = engine::evaluate(&live.rs, &claims, &k.domain_id, &node.mapped.regexes, node.mapped.regex_deadline);
        if let Some(m) = ev.result? {
            found = Some(m);
            break;
        }
    }
    let Some(m) = found else { return Ok(refused(k, "no mapping rule matches the key")) };
    let [auth] = m.authorizations.as_slice() else {
        return Ok(refused(k, "the matching rule must grant exactly one authorization"));
    };
    let scope = match auth {
        Authorization::Domain { domain_id, .. } => json!({"type": "domain", "domain_id": domain_id}),
        Authorization::Project { project_id, project_domain_id, .. } => {
            json!({"type": "project", "project_id": project_id, "project_domain_id": project_domain_id})
        }
        Authorization::System { .. } => return Ok(refused(k, "a system authorization cannot be granted to a key")),
    };
    let view = node.engine.read();
    let mut roles = BTreeSet::new();
    for r in auth.roles() {
        if let Some(role) = view.role(&r.id)? {
            roles.insert(role.name);
        }
    }
    Ok(json!({"client_id": k.client_id, "domain_id": k.domain_id, "provider_id": k.provider_id,
              "matched": true, "roles": roles, "scope": scope}))
}
