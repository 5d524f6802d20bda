//! Domains and projects (`project`, with `project_tag` and `project_option`): parents before
//! children, Keystone's root of domains left out.

use std::collections::{BTreeMap, HashMap};

use super::db::Db;
use super::options::options_json;
use super::source::{extra_json, Source};
use crate::state::import::ImportRecord;
use crate::state::model::Project;

/// The project Keystone makes the parent of every domain; not a record of its own.
pub const ROOT_OF_DOMAINS: &str = "<<keystone.domain.root>>";

pub async fn read(db: &Db, src: &mut Source) -> anyhow::Result<()> {
    let mut tags: HashMap<String, Vec<String>> = HashMap::new();
    for r in db.rows("project_tag", &["project_id", "name"], "ORDER BY `project_id`, `name`").await? {
        tags.entry(r.text("project_id")).or_default().push(r.text("name"));
    }
    let options = options_json(db, "project_option", "project_id").await?;
    let cols = ["id", "name", "domain_id", "description", "enabled", "extra", "parent_id", "is_domain"];
    let mut projects = Vec::new();
    for r in db.rows("project", &cols, "ORDER BY `id`").await? {
        let id = r.text("id");
        if id == ROOT_OF_DOMAINS {
            continue;
        }
        let is_domain = r.flag("is_domain");
        projects.push(Project {
            name: r.text("name"),
            domain_id: if is_domain { id.clone() } else { r.text("domain_id") },
            description: r.opt("description").map(str::to_string),
            enabled: r.opt("enabled").is_none() || r.flag("enabled"),
            is_domain,
            parent_id: if is_domain { None } else { r.opt("parent_id").map(str::to_string) },
            tags: tags.remove(&id).unwrap_or_default(),
            extra: extra_json(r.opt("extra")),
            options: options.get(&id).cloned().unwrap_or_else(|| "{}".into()),
            created_at: 0,
            id,
        });
    }
    // Domains first, then each project after its parent (Keystone's tree has no cycles; a
    // project whose parent is missing is still offered, and apply reports it).
    let (domains, rest): (Vec<Project>, Vec<Project>) = projects.into_iter().partition(|p| p.is_domain);
    for d in domains {
        src.push(ImportRecord::Project(d));
    }
    let mut children: BTreeMap<Option<String>, Vec<Project>> = BTreeMap::new();
    let ids: std::collections::HashSet<String> = rest.iter().map(|p| p.id.clone()).collect();
    for p in rest {
        let parent = p.parent_id.clone().filter(|id| ids.contains(id));
        children.entry(parent).or_default().push(p);
    }
    let mut queue: Vec<Project> = children.remove(&None).unwrap_or_default();
    while let Some(p) = queue.pop() {
        if let Some(kids) = children.remove(&Some(p.id.clone())) {
            queue.extend(kids);
        }
        src.push(ImportRecord::Project(p));
    }
    for (_, orphans) in children {
        for p in orphans {
            src.skip("projects", format!("{} ({})", p.id, p.name), "its parent project is part of a cycle");
        }
    }
    Ok(())
}
