//! Wire shapes of regions, services and endpoints (Keystone's, with `links` and extras).

use serde_json::{json, Value};

use crate::http::fields::with_extra;
use crate::state::model::{Endpoint, Region, Service};

pub fn region_json(r: &Region, base: &str) -> Value {
    with_extra(
        json!({
            "id": r.id, "description": r.description.clone().unwrap_or_default(),
            "parent_region_id": r.parent_region_id,
            "links": {"self": format!("{base}/v3/regions/{}", r.id)},
        }),
        &r.extra,
    )
}

pub fn service_json(s: &Service, base: &str) -> Value {
    let mut v = json!({
        "id": s.id, "type": s.service_type, "name": s.name.clone().unwrap_or_default(), "enabled": s.enabled,
        "links": {"self": format!("{base}/v3/services/{}", s.id)},
    });
    if let (Some(d), Some(o)) = (&s.description, v.as_object_mut()) {
        o.insert("description".into(), json!(d));
    }
    with_extra(v, &s.extra)
}

pub fn endpoint_json(e: &Endpoint, base: &str) -> Value {
    with_extra(
        json!({
            "id": e.id, "interface": e.interface, "service_id": e.service_id,
            "region_id": e.region_id, "region": e.region_id, "url": e.url, "enabled": e.enabled,
            "links": {"self": format!("{base}/v3/endpoints/{}", e.id)},
        }),
        &e.extra,
    )
}
