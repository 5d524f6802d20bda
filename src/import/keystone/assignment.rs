//! Roles (`role`, `role_option`), implication rules (`implied_role`) and every role assignment
//! (`assignment`: user and group on projects and domains, inherited or not;
//! `system_assignment`).

use super::db::Db;
use super::options::options_json;
use super::source::{extra_json, Source};
use crate::state::import::ImportRecord;
use crate::state::model::{ActorKind, Assignment, Role, Target};

/// What Keystone writes in `role.domain_id` for a global role.
const NULL_DOMAIN: &str = "<<null>>";

pub async fn read_roles(db: &Db, src: &mut Source) -> anyhow::Result<()> {
    let options = options_json(db, "role_option", "role_id").await?;
    let mut roles = Vec::new();
    for r in db.rows("role", &["id", "name", "domain_id", "description", "extra"], "ORDER BY `id`").await? {
        let id = r.text("id");
        roles.push(Role {
            name: r.text("name"),
            domain_id: r.opt("domain_id").filter(|d| *d != NULL_DOMAIN).map(str::to_string),
            description: r.opt("description").map(str::to_string),
            extra: extra_json(r.opt("extra")),
            options: options.get(&id).cloned().unwrap_or_else(|| "{}".into()),
            id,
        });
    }
    // Global roles first: a rule may not make a global role imply a domain's role anyway.
    roles.sort_by_key(|r| r.domain_id.is_some());
    for role in roles {
        src.push(ImportRecord::Role(role));
    }
    let order = "ORDER BY `prior_role_id`, `implied_role_id`";
    for r in db.rows("implied_role", &["prior_role_id", "implied_role_id"], order).await? {
        src.push(ImportRecord::Implied { prior: r.text("prior_role_id"), implied: r.text("implied_role_id") });
    }
    Ok(())
}

pub async fn read_assignments(db: &Db, src: &mut Source) -> anyhow::Result<()> {
    let cols = ["type", "actor_id", "target_id", "role_id", "inherited"];
    let order = "ORDER BY `actor_id`, `target_id`, `role_id`";
    db.each("assignment", &cols, order, |r| {
        let (actor_kind, target) = match r.opt("type") {
            Some("UserProject") => (ActorKind::User, Target::Project(r.text("target_id"))),
            Some("GroupProject") => (ActorKind::Group, Target::Project(r.text("target_id"))),
            Some("UserDomain") => (ActorKind::User, Target::Domain(r.text("target_id"))),
            Some("GroupDomain") => (ActorKind::Group, Target::Domain(r.text("target_id"))),
            other => {
                let label = format!("role {} to {} on {}", r.text("role_id"), r.text("actor_id"), r.text("target_id"));
                src.skip("role assignments", label, format!("unknown assignment type {other:?}"));
                return Ok(());
            }
        };
        let a = Assignment {
            actor_kind,
            actor_id: r.text("actor_id"),
            target,
            role_id: r.text("role_id"),
            inherited: r.flag("inherited"),
        };
        src.push(ImportRecord::Grant(a));
        Ok(())
    })
    .await?;
    db.each("system_assignment", &cols, order, |r| {
        let actor_kind = match r.opt("type") {
            Some("UserSystem") => ActorKind::User,
            Some("GroupSystem") => ActorKind::Group,
            other => {
                let label = format!("role {} to {} on the system", r.text("role_id"), r.text("actor_id"));
                src.skip("role assignments", label, format!("unknown system assignment type {other:?}"));
                return Ok(());
            }
        };
        let a = Assignment {
            actor_kind,
            actor_id: r.text("actor_id"),
            target: Target::System,
            role_id: r.text("role_id"),
            inherited: false,
        };
        src.push(ImportRecord::Grant(a));
        Ok(())
    })
    .await
}
