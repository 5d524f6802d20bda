//! Records as the API shows them.

use super::schemas::{LimitView, RegisteredLimitView};
use crate::http::openapi::SelfLink;
use crate::state::limits::{Limit, RegisteredLimit};

pub fn registered(r: &RegisteredLimit, base: &str) -> RegisteredLimitView {
    RegisteredLimitView {
        id: r.id.clone(),
        service_id: r.service_id.clone(),
        region_id: r.region_id.clone(),
        resource_name: r.resource_name.clone(),
        default_limit: r.default_limit,
        description: r.description.clone(),
        links: SelfLink::new(base, &format!("/v3/registered_limits/{}", r.id)),
    }
}

pub fn limit(l: &Limit, base: &str) -> LimitView {
    LimitView {
        id: l.id.clone(),
        project_id: l.project_id.clone(),
        domain_id: l.domain_id.clone(),
        service_id: l.service_id.clone(),
        region_id: l.region_id.clone(),
        resource_name: l.resource_name.clone(),
        resource_limit: l.resource_limit,
        description: l.description.clone(),
        links: SelfLink::new(base, &format!("/v3/limits/{}", l.id)),
    }
}
