//! The catalog (`region`, `service`, `endpoint`), policies (`policy`) and OS-EP-FILTER
//! (`endpoint_group`, `project_endpoint_group`, `project_endpoint`).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::db::Db;
use super::source::{extra_json, Source};
use crate::state::import::ImportRecord;
use crate::state::model::{Doc, DocKind, Endpoint, Ref, Region, Service};

pub async fn read(db: &Db, src: &mut Source) -> anyhow::Result<()> {
    regions(db, src).await?;
    for r in db.rows("service", &["id", "type", "enabled", "extra"], "ORDER BY `id`").await? {
        // Keystone keeps a service's name and description among its extra attributes.
        let mut extra = object(r.opt("extra"));
        let name = extra.remove("name").and_then(|v| v.as_str().map(str::to_string));
        let description = extra.remove("description").and_then(|v| v.as_str().map(str::to_string));
        src.push(ImportRecord::Service(Service {
            id: r.text("id"),
            service_type: r.text("type"),
            name,
            enabled: r.opt("enabled").is_none() || r.flag("enabled"),
            description,
            extra: Value::Object(extra).to_string(),
        }));
    }
    let cols = ["id", "interface", "service_id", "url", "extra", "enabled", "region_id"];
    for r in db.rows("endpoint", &cols, "ORDER BY `id`").await? {
        src.push(ImportRecord::Endpoint(Endpoint {
            id: r.text("id"),
            interface: r.text("interface"),
            service_id: r.text("service_id"),
            region_id: r.opt("region_id").map(str::to_string),
            url: r.text("url"),
            enabled: r.opt("enabled").is_none() || r.flag("enabled"),
            extra: extra_json(r.opt("extra")),
        }));
    }
    for r in db.rows("policy", &["id", "type", "blob", "extra"], "ORDER BY `id`").await? {
        let mut body = object(r.opt("extra"));
        body.insert("blob".into(), blob(r.opt("blob")));
        body.insert("type".into(), json!(r.text("type")));
        src.push(doc(DocKind::Policy, r.text("id"), body, true, vec![]));
    }
    for r in db.rows("endpoint_group", &["id", "name", "description", "filters"], "ORDER BY `id`").await? {
        let mut body = Map::new();
        body.insert("name".into(), json!(r.text("name")));
        body.insert("description".into(), json!(r.opt("description")));
        body.insert("filters".into(), Value::Object(object(r.opt("filters"))));
        src.push(doc(DocKind::EndpointGroup, r.text("id"), body, true, vec![]));
    }
    let order = "ORDER BY `endpoint_group_id`, `project_id`";
    for r in db.rows("project_endpoint_group", &["endpoint_group_id", "project_id"], order).await? {
        let (group, project) = (r.text("endpoint_group_id"), r.text("project_id"));
        let mut body = Map::new();
        body.insert("endpoint_group_id".into(), json!(group));
        body.insert("project_id".into(), json!(project));
        let requires = vec![Ref::Doc(DocKind::EndpointGroup, group.clone()), Ref::Project(project.clone())];
        src.push(doc(DocKind::EndpointGroupProject, format!("{group}/{project}"), body, false, requires));
    }
    let order = "ORDER BY `project_id`, `endpoint_id`";
    for r in db.rows("project_endpoint", &["endpoint_id", "project_id"], order).await? {
        let (endpoint, project) = (r.text("endpoint_id"), r.text("project_id"));
        let mut body = Map::new();
        body.insert("project_id".into(), json!(project));
        body.insert("endpoint_id".into(), json!(endpoint));
        let requires = vec![Ref::Endpoint(endpoint.clone()), Ref::Project(project.clone())];
        src.push(doc(DocKind::ProjectEndpoint, format!("{project}/{endpoint}"), body, false, requires));
    }
    policy_associations(db, src).await
}

/// OS-ENDPOINT-POLICY (`policy_association`): one policy per endpoint, per service, or per
/// service in a region, keyed by what it applies to.
async fn policy_associations(db: &Db, src: &mut Source) -> anyhow::Result<()> {
    let cols = ["policy_id", "endpoint_id", "service_id", "region_id"];
    for r in db.rows("policy_association", &cols, "ORDER BY `id`").await? {
        let policy = r.text("policy_id");
        let mut body = Map::new();
        body.insert("policy_id".into(), json!(policy));
        let mut requires = vec![Ref::Doc(DocKind::Policy, policy.clone())];
        let id = match (r.opt("endpoint_id"), r.opt("service_id"), r.opt("region_id")) {
            (Some(e), _, _) => {
                body.insert("endpoint_id".into(), json!(e));
                requires.push(Ref::Endpoint(e.to_string()));
                format!("endpoint/{e}")
            }
            (None, Some(s), None) => {
                body.insert("service_id".into(), json!(s));
                requires.push(Ref::Service(s.to_string()));
                format!("service/{s}")
            }
            (None, Some(s), Some(region)) => {
                body.insert("service_id".into(), json!(s));
                body.insert("region_id".into(), json!(region));
                requires.push(Ref::Service(s.to_string()));
                requires.push(Ref::Region(region.to_string()));
                format!("service/{s}/{region}")
            }
            (None, None, _) => {
                src.skip("policy associations", policy, "an association with neither an endpoint nor a service");
                continue;
            }
        };
        src.push(doc(DocKind::PolicyAssociation, id, body, false, requires));
    }
    Ok(())
}

/// Regions, each after its parent.
async fn regions(db: &Db, src: &mut Source) -> anyhow::Result<()> {
    let mut children: BTreeMap<Option<String>, Vec<Region>> = BTreeMap::new();
    let rows = db.rows("region", &["id", "description", "parent_region_id", "extra"], "ORDER BY `id`").await?;
    let ids: std::collections::HashSet<String> = rows.iter().map(|r| r.text("id")).collect();
    for r in rows {
        let region = Region {
            id: r.text("id"),
            description: r.opt("description").map(str::to_string),
            parent_region_id: r.opt("parent_region_id").map(str::to_string),
            extra: extra_json(r.opt("extra")),
        };
        let parent = region.parent_region_id.clone().filter(|p| ids.contains(p));
        children.entry(parent).or_default().push(region);
    }
    let mut queue = children.remove(&None).unwrap_or_default();
    queue.reverse();
    while let Some(region) = queue.pop() {
        if let Some(kids) = children.remove(&Some(region.id.clone())) {
            queue.extend(kids.into_iter().rev());
        }
        src.push(ImportRecord::Region(region));
    }
    for (_, orphans) in children {
        for r in orphans {
            src.skip("regions", r.id, "its parent region is part of a cycle");
        }
    }
    Ok(())
}

/// A document record; `shows_id`: whether the API shows the id in the body.
fn doc(kind: DocKind, id: String, mut body: Map<String, Value>, shows_id: bool, requires: Vec<Ref>) -> ImportRecord {
    if shows_id {
        body.insert("id".into(), json!(id));
    }
    let doc = Doc { kind, id, body: Value::Object(body).to_string(), private: "{}".into(), unique: Vec::new() };
    ImportRecord::Doc { doc, requires }
}

/// A JSON object column (NULL or not an object: empty).
fn object(raw: Option<&str>) -> Map<String, Value> {
    match raw.and_then(|t| serde_json::from_str(t).ok()) {
        Some(Value::Object(o)) => o,
        _ => Map::new(),
    }
}

/// A policy's blob: Keystone stores the JSON text the client sent.
fn blob(raw: Option<&str>) -> Value {
    match raw {
        Some(t) => serde_json::from_str(t).unwrap_or_else(|_| json!(t)),
        None => Value::Null,
    }
}
