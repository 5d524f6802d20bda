use serde_json::{json, Value};

use crate::http::fields::{json_obj, with_extra};
use crate::state::model::Project;

pub fn project_json(p: &Project, base: &str) -> Value {
    with_extra(
        json!({
            "id": p.id, "name": p.name, "domain_id": p.domain_id, "description": p.description,
            "enabled": p.enabled, "is_domain": p.is_domain, "parent_id": p.parent_id, "tags": p.tags,
            "options": json_obj(&p.options),
            "links": {"self": format!("{base}/v3/projects/{}", p.id)},
        }),
        &p.extra,
    )
}

pub fn domain_json(d: &Project, base: &str) -> Value {
    with_extra(
        json!({
            "id": d.id, "name": d.name, "description": d.description, "enabled": d.enabled,
            "options": json_obj(&d.options),
            "links": {"self": format!("{base}/v3/domains/{}", d.id)},
        }),
        &d.extra,
    )
}
