//! Unified limits (`registered_limit`, `limit`) as idnode's `state::limits` records, which
//! are not documents. Registered limits first (each needing its service and region), then the
//! domains' limits, then the projects' (so a project's limit meets its domain's already in
//! place, whatever the enforcement model).
//!
//! A Keystone limit names its registered limit by the registered limit's `id` (the driver
//! fills `registered_limit_id` with it); an `internal_id` there is read too, in case.

use std::collections::HashMap;

use super::db::{Db, SqlRow};
use super::source::Source;
use crate::state::import::ImportRecord;
use crate::state::limits::{Limit, RegisteredLimit};

pub async fn read(db: &Db, src: &mut Source) -> anyhow::Result<()> {
    let mut registered = Registered::default();
    let cols = ["internal_id", "id", "service_id", "region_id", "resource_name", "default_limit", "description"];
    for r in db.rows("registered_limit", &cols, "ORDER BY `internal_id`").await? {
        let id = r.text("id");
        match registered_limit(&r) {
            Ok(reg) => {
                registered.add(r.opt("internal_id"), reg.clone());
                src.push(ImportRecord::RegisteredLimit(reg));
            }
            Err(why) => {
                registered.skip(r.opt("internal_id"), &id);
                src.skip("registered limits", id, why);
            }
        }
    }
    let cols = ["internal_id", "id", "project_id", "domain_id", "resource_limit", "description", "registered_limit_id"];
    let (mut domains, mut projects) = (Vec::new(), Vec::new());
    for r in db.rows("limit", &cols, "ORDER BY `internal_id`").await? {
        let id = r.text("id");
        match limit(&r, &registered) {
            Ok(l) if l.project_id.is_none() => domains.push(l),
            Ok(l) => projects.push(l),
            Err(why) => src.skip("limits", id, why),
        }
    }
    for l in domains.into_iter().chain(projects) {
        src.push(ImportRecord::Limit(l));
    }
    Ok(())
}

/// The registered limits read, by `id` and by `internal_id`, and those skipped.
#[derive(Default)]
struct Registered {
    by_id: HashMap<String, RegisteredLimit>,
    /// `internal_id` → `id`.
    by_internal: HashMap<String, String>,
    /// Ids (and internal ids) of registered limits not imported.
    skipped: Vec<String>,
}

impl Registered {
    fn add(&mut self, internal_id: Option<&str>, reg: RegisteredLimit) {
        if let Some(i) = internal_id {
            self.by_internal.insert(i.trim().to_string(), reg.id.clone());
        }
        self.by_id.insert(reg.id.clone(), reg);
    }

    fn skip(&mut self, internal_id: Option<&str>, id: &str) {
        self.skipped.extend(internal_id.map(|i| i.trim().to_string()));
        self.skipped.push(id.to_string());
    }

    /// The registered limit a limit's `registered_limit_id` names: by id, else by internal id.
    fn find(&self, named: &str) -> Option<&RegisteredLimit> {
        self.by_id.get(named).or_else(|| self.by_internal.get(named.trim()).and_then(|id| self.by_id.get(id)))
    }
}

/// A registered limit as the API would have made it, or why not.
fn registered_limit(r: &SqlRow) -> Result<RegisteredLimit, String> {
    let (Some(service_id), Some(resource_name)) = (r.opt("service_id"), r.opt("resource_name")) else {
        return Err("it names no service or no resource (NULL in Keystone's table)".into());
    };
    let default_limit = r.int("default_limit").ok_or("its default_limit is not an integer")?;
    Ok(RegisteredLimit {
        id: r.text("id"),
        service_id: service_id.to_string(),
        region_id: r.opt("region_id").map(str::to_string),
        resource_name: resource_name.to_string(),
        default_limit,
        description: r.opt("description").map(str::to_string),
    })
}

/// A limit as the API would have stored it (service, region and resource name its registered
/// limit's), or why not.
fn limit(r: &SqlRow, registered: &Registered) -> Result<Limit, String> {
    let (project_id, domain_id) = owner(r.opt("project_id"), r.opt("domain_id"))?;
    let named = r.opt("registered_limit_id").ok_or("it names no registered limit")?;
    let Some(reg) = registered.find(named) else {
        return Err(if registered.skipped.iter().any(|s| s == named.trim()) {
            format!("its registered limit {named} is not imported (see registered limits)")
        } else {
            format!("its registered limit {named} does not exist")
        });
    };
    let resource_limit = r.int("resource_limit").ok_or("its resource_limit is not an integer")?;
    Ok(Limit {
        id: r.text("id"),
        project_id,
        domain_id,
        registered_limit_id: reg.id.clone(),
        service_id: reg.service_id.clone(),
        region_id: reg.region_id.clone(),
        resource_name: reg.resource_name.clone(),
        resource_limit,
        description: r.opt("description").map(str::to_string),
    })
}

/// A limit belongs to exactly one project or one domain.
fn owner(project: Option<&str>, domain: Option<&str>) -> Result<(Option<String>, Option<String>), String> {
    match (project, domain) {
        (Some(p), None) => Ok((Some(p.to_string()), None)),
        (None, Some(d)) => Ok((None, Some(d.to_string()))),
        (Some(_), Some(_)) => Err("it names both a project and a domain".into()),
        (None, None) => Err("it names neither a project nor a domain".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reg(id: &str) -> RegisteredLimit {
        RegisteredLimit {
            id: id.into(),
            service_id: "svc".into(),
            region_id: Some("RegionOne".into()),
            resource_name: "cores".into(),
            default_limit: 10,
            description: None,
        }
    }

    #[test]
    fn a_registered_limit_is_found_by_id_or_internal_id() {
        let mut r = Registered::default();
        r.add(Some("7"), reg("abc"));
        assert_eq!(r.find("abc").map(|x| x.id.as_str()), Some("abc"));
        assert_eq!(r.find("7").map(|x| x.id.as_str()), Some("abc"));
        assert!(r.find("8").is_none());
        r.skip(Some("8"), "def");
        assert!(r.skipped.contains(&"8".to_string()) && r.skipped.contains(&"def".to_string()));
    }

    #[test]
    fn a_limit_has_exactly_one_owner() {
        assert_eq!(owner(Some("p"), None).unwrap(), (Some("p".to_string()), None));
        assert_eq!(owner(None, Some("d")).unwrap(), (None, Some("d".to_string())));
        assert!(owner(Some("p"), Some("d")).is_err());
        assert!(owner(None, None).is_err());
    }
}
