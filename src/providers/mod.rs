//! The v4 provider registries that federation mappings resolve their sources against:
//! external OIDC identity providers (`/v4/federation/identity_providers`), Kubernetes cluster
//! issuers (`/v4/k8s_auth/instances`) and SPIFFE workload trust domains
//! (`/v4/spiffe/trust_domains`). Not the v3 OS-FEDERATION API (`crate::federation`).
//!
//! The three share one resource shape (`registry`): each kind states its path, envelope,
//! fields, checks and rendering; create / list / get / update / delete, the policy check and
//! the replicated write (`state::providers`) are written once.

pub mod jwks;
pub mod k8s;
pub mod oidc;
pub mod outbound;
pub mod registry;
pub mod spiffe;
pub mod token_review;
pub mod verify;

#[cfg(test)]
pub(crate) mod tests;

use utoipa_axum::router::OpenApiRouter;

use crate::context::Core;
use crate::token::Tokens;

crate::http::openapi::feature_routes! {
    /// Every operation of the three registries, for the router and the OpenAPI description.
    pub fn routes() over [Core, Tokens] {
        OpenApiRouter::new().merge(oidc::routes()).merge(k8s::routes()).merge(spiffe::routes())
    }
}
