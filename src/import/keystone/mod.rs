//! Reading a Keystone deployment: its database (every kind, in the order references need) and,
//! for the bootstrap of a cluster started with `bootstrap = import`, its administrator.

mod appcred;
mod assignment;
mod catalog;
mod credential;
mod db;
mod domain_config;
mod federation;
mod identity;
mod limits;
mod oauth1;
mod options;
mod resource;
mod revoke;
mod source;
mod trust;

pub use credential::CredentialKeys;
pub use db::Db;
pub use source::Source;

use crate::state::command::Bootstrap;
use crate::state::import::ImportRecord;
use crate::state::model::{ActorKind, Target};

/// Everything the database holds that idnode keeps. `credential_keys`: Keystone's credential
/// key repository, needed when it holds credentials.
pub async fn read(db: &Db, credential_keys: Option<&CredentialKeys>) -> anyhow::Result<Source> {
    let mut src = Source::default();
    resource::read(db, &mut src).await?;
    assignment::read_roles(db, &mut src).await?;
    // Revocations before users: a user's cut-off is part of the user record.
    let mut revocations = Source::default();
    let cutoffs = revoke::read(db, &mut revocations).await?;
    identity::read_users(db, &mut src, &cutoffs).await?;
    identity::read_groups(db, &mut src).await?;
    assignment::read_assignments(db, &mut src).await?;
    catalog::read(db, &mut src).await?;
    federation::read(db, &mut src).await?;
    domain_config::read(db, &mut src).await?;
    limits::read(db, &mut src).await?;
    credential::read(db, &mut src, credential_keys).await?;
    appcred::read(db, &mut src).await?;
    trust::read(db, &mut src).await?;
    oauth1::read(db, &mut src).await?;
    src.records.append(&mut revocations.records);
    src.skipped.append(&mut revocations.skipped);
    Ok(src)
}

/// The records a cluster started with `bootstrap = import` is bootstrapped with: Keystone's
/// `default` domain, the administrator `admin_user` and project `admin_project` in it, the
/// global roles `keystone-manage bootstrap` makes (admin first), the rules among them, the
/// administrator's grants, and the identity service with its endpoints and their region.
pub fn bootstrap_of(src: &Source, admin_user: &str, admin_project: &str) -> anyhow::Result<Bootstrap> {
    use anyhow::Context;
    let mut domain = None;
    let mut project = None;
    let mut user = None;
    let mut roles = Vec::new();
    let mut services = Vec::new();
    for r in &src.records {
        match r {
            ImportRecord::Project(p) if p.is_domain && p.id == "default" => domain = Some(p.clone()),
            ImportRecord::Project(p) if !p.is_domain && p.domain_id == "default" && p.name == admin_project => {
                project = Some(p.clone())
            }
            ImportRecord::User { user: u, .. } if u.domain_id == "default" && u.name == admin_user => {
                user = Some(u.clone())
            }
            ImportRecord::Role(role) if role.domain_id.is_none() => roles.push(role.clone()),
            ImportRecord::Service(s) if s.service_type == "identity" => services.push(s.clone()),
            _ => {}
        }
    }
    let domain = domain.context("Keystone's database has no `default` domain to bootstrap with")?;
    let project = project
        .with_context(|| format!("Keystone's default domain has no project {admin_project:?} (--admin-project)"))?;
    let user = user.with_context(|| format!("Keystone's default domain has no user {admin_user:?} (--admin-user)"))?;
    const BOOTSTRAP_ROLES: [&str; 5] = ["admin", "manager", "member", "reader", "service"];
    roles.retain(|r| BOOTSTRAP_ROLES.contains(&r.name.as_str()));
    roles.sort_by_key(|r| BOOTSTRAP_ROLES.iter().position(|n| *n == r.name));
    if roles.first().map(|r| r.name.as_str()) != Some("admin") {
        anyhow::bail!("Keystone's database has no global role `admin` to bootstrap with");
    }
    let ids: Vec<&str> = roles.iter().map(|r| r.id.as_str()).collect();
    let mut implied = Vec::new();
    let mut assignments = Vec::new();
    let mut endpoints = Vec::new();
    let service = services.into_iter().next().context("Keystone's catalog has no identity service")?;
    for r in &src.records {
        match r {
            ImportRecord::Implied { prior, implied: i }
                if ids.contains(&prior.as_str()) && ids.contains(&i.as_str()) =>
            {
                implied.push((prior.clone(), i.clone()))
            }
            ImportRecord::Grant(a)
                if a.actor_kind == ActorKind::User
                    && a.actor_id == user.id
                    && ids.contains(&a.role_id.as_str())
                    && (a.target == Target::System || a.target == Target::Project(project.id.clone())) =>
            {
                assignments.push(a.clone())
            }
            ImportRecord::Endpoint(e) if e.service_id == service.id => endpoints.push(e.clone()),
            _ => {}
        }
    }
    let region_id = endpoints.iter().find_map(|e| e.region_id.clone());
    let region = src
        .records
        .iter()
        .find_map(|r| match r {
            ImportRecord::Region(reg) if Some(&reg.id) == region_id.as_ref() => Some(reg.clone()),
            _ => None,
        })
        .context("Keystone's identity endpoints name no region")?;
    if region.parent_region_id.is_some() {
        anyhow::bail!(
            "the identity endpoints' region {} has a parent region; bootstrap needs a top-level one",
            region.id
        );
    }
    Ok(Bootstrap {
        domain,
        project,
        user,
        roles,
        implied,
        assignments,
        region,
        service,
        endpoints,
        token_keys: Default::default(),
        at: 0,
    })
}
