//! The service catalog: regions, services and endpoints (`/v3/regions`, `/v3/services`,
//! `/v3/endpoints`) and the catalog as tokens carry it, with Keystone's extensions over it
//! (policy blobs, OS-EP-FILTER, OS-ENDPOINT-POLICY).

pub mod endpoint_groups;
pub mod endpoint_policy;
pub mod endpoints;
pub mod policies;
mod policy_lookup;
pub mod regions;
mod render;
pub mod schemas;
pub mod services;

use std::sync::Arc;

use serde_json::{json, Value};

use crate::http::body::Sent;
use crate::http::error::{ApiError, ApiResult};
use crate::state::model::{Endpoint, Service};
use crate::state::read::CatalogReads;
use crate::state::Reader;
use crate::token::Tokens;

/// Enabled services with their enabled endpoints.
pub fn build(r: &impl Reader) -> idnode_storage::Result<Value> {
    let services: Vec<Service> = r.services()?;
    let endpoints: Vec<Endpoint> = r.endpoints()?;
    let out: Vec<Value> = services
        .iter()
        .filter(|s| s.enabled)
        .map(|s| {
            let eps: Vec<Value> = endpoints
                .iter()
                .filter(|e| e.enabled && e.service_id == s.id)
                .map(|e| {
                    json!({"id": e.id, "interface": e.interface, "region": e.region_id,
                           "region_id": e.region_id, "url": e.url})
                })
                .collect();
            json!({"id": s.id, "type": s.service_type, "name": s.name.clone().unwrap_or_default(), "endpoints": eps})
        })
        .collect();
    Ok(Value::Array(out))
}

impl Tokens {
    /// The catalog a token of `scope` carries: a project tied to endpoints (OS-EP-FILTER)
    /// sees only those, and only the services that have one of them.
    pub fn catalog_for(&self, scope: &crate::token::TokenScope) -> ApiResult<Arc<Value>> {
        let full = self.catalog()?;
        let crate::token::TokenScope::Project(project_id) = scope else { return Ok(full) };
        let Some(ids) = endpoint_groups::project_endpoint_ids(&self.engine.read(), project_id)? else {
            return Ok(full);
        };
        let mut filtered = (*full).clone();
        if let Some(services) = filtered.as_array_mut() {
            for service in services.iter_mut() {
                if let Some(Value::Array(eps)) = service.get_mut("endpoints") {
                    eps.retain(|e| {
                        e.get("id").and_then(Value::as_str).is_some_and(|id| ids.binary_search(&id.to_string()).is_ok())
                    });
                }
            }
            // As Keystone: under a filter, a service left without endpoints is not listed.
            services.retain(|s| s.get("endpoints").and_then(Value::as_array).is_some_and(|eps| !eps.is_empty()));
        }
        Ok(Arc::new(filtered))
    }

    /// The catalog, rebuilt only when the state has moved.
    pub fn catalog(&self) -> ApiResult<Arc<Value>> {
        let applied = self.app.state_version();
        if let Some(c) = self.catalog_cache.get(&(), applied) {
            return Ok(c);
        }
        let c = Arc::new(build(&self.engine.read())?);
        self.catalog_cache.insert((), c.clone(), applied);
        Ok(c)
    }
}

/// An optional reference to another record by id: absent or null is none; otherwise a
/// non-empty string of at most 255 characters.
pub(crate) fn opt_ref(field: &Sent<String>, key: &str) -> ApiResult<Option<String>> {
    match field {
        Sent::Absent | Sent::Null => Ok(None),
        Sent::Is(s) if !s.is_empty() && s.chars().count() <= 255 => Ok(Some(s.clone())),
        _ => Err(ApiError::bad_request(format!(
            "Invalid input for field '{key}': must be a non-empty string of at most 255 characters or null."
        ))),
    }
}

#[cfg(test)]
mod endpoint_policy_tests;
#[cfg(test)]
mod tests;
