//! SCIM v2 provisioning per realm (issue 10; spec "SCIM realm and resource index", the SCIM
//! and realm-administration endpoint tables; api-shapes §11). So far: realm administration
//! (`realms`) and the filter grammar (`filter`). The `/SCIM/v2/{domain_id}` endpoints build on
//! them and on API keys.

#[cfg_attr(not(test), expect(dead_code, reason = "the /SCIM/v2 list endpoints (issue 10, next) filter with it"))]
pub mod filter;
pub mod realms;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use utoipa_axum::router::OpenApiRouter;

use crate::node::Node;

pub fn routes() -> OpenApiRouter<Arc<Node>> {
    realms::routes()
}
