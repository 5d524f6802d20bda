//! Wire shapes of regions, services and endpoints (Keystone's, with `links` and extras): the
//! schema types of the document, filled from the stored records.

use super::schemas as s;
use crate::http::openapi::{extras, SelfLink};
use crate::state::model::{Endpoint, Region, Service};

pub fn region(r: &Region, base: &str) -> s::Region {
    s::Region {
        extra: extras(&r.extra),
        id: r.id.clone(),
        description: r.description.clone().unwrap_or_default(),
        parent_region_id: r.parent_region_id.clone(),
        links: SelfLink::new(base, &format!("/v3/regions/{}", r.id)),
    }
}

pub fn service(v: &Service, base: &str) -> s::Service {
    s::Service {
        extra: extras(&v.extra),
        id: v.id.clone(),
        service_type: v.service_type.clone(),
        name: v.name.clone().unwrap_or_default(),
        enabled: v.enabled,
        description: v.description.clone(),
        links: SelfLink::new(base, &format!("/v3/services/{}", v.id)),
    }
}

pub fn endpoint(e: &Endpoint, base: &str) -> s::Endpoint {
    s::Endpoint {
        extra: extras(&e.extra),
        id: e.id.clone(),
        interface: e.interface.clone(),
        service_id: e.service_id.clone(),
        region_id: e.region_id.clone(),
        region: e.region_id.clone(),
        url: e.url.clone(),
        enabled: e.enabled,
        links: SelfLink::new(base, &format!("/v3/endpoints/{}", e.id)),
    }
}
