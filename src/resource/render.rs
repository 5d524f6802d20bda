//! Wire shapes of projects and domains (both stored as projects): the schema types of the
//! document, filled from the stored records.

use serde_json::Value;

use super::schemas as s;
use crate::http::fields::json_obj;
use crate::http::openapi::{extras, to_json, SelfLink};
use crate::state::model::Project;

pub fn project(p: &Project, base: &str) -> s::Project {
    s::Project {
        extra: extras(&p.extra),
        id: p.id.clone(),
        name: p.name.clone(),
        domain_id: p.domain_id.clone(),
        description: p.description.clone(),
        enabled: p.enabled,
        is_domain: p.is_domain,
        parent_id: p.parent_id.clone(),
        tags: p.tags.clone(),
        options: json_obj(&p.options),
        links: SelfLink::new(base, &format!("/v3/projects/{}", p.id)),
    }
}

pub fn domain(d: &Project, base: &str) -> s::Domain {
    s::Domain {
        extra: extras(&d.extra),
        id: d.id.clone(),
        name: d.name.clone(),
        description: d.description.clone(),
        enabled: d.enabled,
        options: json_obj(&d.options),
        links: SelfLink::new(base, &format!("/v3/domains/{}", d.id)),
    }
}

pub fn project_json(p: &Project, base: &str) -> Value {
    to_json(&project(p, base))
}

pub fn domain_json(d: &Project, base: &str) -> Value {
    to_json(&domain(d, base))
}
