//! Cluster bootstrap, like `keystone-manage bootstrap`: the Default domain, the admin
//! project and user, the default roles with their implication chain, the admin grants, the
//! region and the identity endpoints, and the token key ring. One command, applied once.

use idnode_keys::{random_token, IndexKey, TokenKeyRing};

use crate::clock::now_micros;
use crate::context::Core;
use crate::http::error::ApiResult;
use crate::http::fields::new_id;
use crate::state::command::Bootstrap;
use crate::state::model::*;
use crate::state::read::AssignmentReads;
use crate::state::reply::Bootstrapped;
use crate::state::{Command, Reader};

/// Returns true when this call bootstrapped the cluster.
pub async fn run(node: &Core) -> ApiResult<bool> {
    if node.engine.read().bootstrap_info()?.is_some() {
        return Ok(false);
    }
    let cfg = &node.cfg;
    let (password, generated) = match &cfg.admin_password {
        Some(p) if !p.is_empty() => (p.clone(), false),
        _ => (random_token(18), true),
    };
    let at = now_micros();
    let project = |id: String, name: &str, domain: &str, is_domain: bool, description: &str| Project {
        id,
        name: name.into(),
        domain_id: domain.into(),
        description: Some(description.into()),
        enabled: true,
        is_domain,
        parent_id: (!is_domain).then(|| domain.to_string()),
        tags: vec![],
        extra: "{}".into(),
        options: "{}".into(),
        created_at: at,
    };
    let domain = project("default".into(), "Default", "default", true, "The default domain");
    let admin_project =
        project(new_id(), &cfg.admin_project_name, "default", false, "Bootstrap project for initializing the cloud.");
    let user = User {
        id: new_id(),
        name: "admin".into(),
        domain_id: "default".into(),
        enabled: true,
        password_hash: Some(node.hash_password(password.clone()).await?),
        default_project_id: None,
        password_expires_at: None,
        extra: "{}".into(),
        options: "{}".into(),
        created_at: at,
        tokens_valid_after: 0,
        federated: Vec::new(),
    };
    let roles: Vec<Role> = ["admin", "manager", "member", "reader", "service"]
        .iter()
        .map(|n| Role {
            id: new_id(),
            name: n.to_string(),
            domain_id: None,
            description: None,
            extra: "{}".into(),
            options: "{}".into(),
        })
        .collect();
    let implied = roles.windows(2).take(3).map(|w| (w[0].id.clone(), w[1].id.clone())).collect();
    let grant = |target: Target| Assignment {
        actor_kind: ActorKind::User,
        actor_id: user.id.clone(),
        target,
        role_id: roles[0].id.clone(),
        inherited: false,
    };
    let assignments = vec![grant(Target::Project(admin_project.id.clone())), grant(Target::System)];
    let service = Service {
        id: new_id(),
        service_type: "identity".into(),
        name: Some("keystone".into()),
        enabled: true,
        description: Some("OpenStack Identity (idnode)".into()),
        extra: "{}".into(),
    };
    let url = format!("{}/v3", cfg.public_base());
    let endpoints = ["public", "internal", "admin"]
        .iter()
        .map(|i| Endpoint {
            id: new_id(),
            interface: i.to_string(),
            service_id: service.id.clone(),
            region_id: Some(cfg.region.clone()),
            url: url.clone(),
            enabled: true,
            extra: "{}".into(),
        })
        .collect();
    let cmd = Bootstrap {
        domain,
        project: admin_project,
        user,
        roles,
        implied,
        assignments,
        region: Region { id: cfg.region.clone(), description: None, parent_region_id: None, extra: "{}".into() },
        service,
        endpoints,
        token_keys: TokenKeyRing::generate(at / 1_000_000),
        at,
    };
    let cmd = Command::BootstrapCluster { index_key: IndexKey::generate(), bootstrap: Box::new(cmd) };
    let fresh = node.propose_as::<Bootstrapped>(cmd).await?.fresh;
    if fresh {
        tracing::info!("cluster bootstrapped: domain Default, project admin, user admin");
        if generated {
            // Printed once, on stdout only, so it can be captured; never logged.
            println!("Bootstrapped idnode. Generated admin password (shown once): {password}");
        }
    }
    Ok(fresh)
}

/// Bootstraps the cluster with records moved in from another service (`idnode import
/// keystone` into a cluster started with `bootstrap = import`): its domain, admin project,
/// admin user, roles (admin first), their grants and the identity service keep their ids. The
/// node adds what only it may make: the index key, the token keys, the time. Returns false
/// when the cluster was bootstrapped already (nothing changes then).
pub async fn adopt(node: &Core, mut b: Bootstrap) -> ApiResult<bool> {
    let at = now_micros();
    b.token_keys = TokenKeyRing::generate(at / 1_000_000);
    b.at = at;
    let cmd = Command::BootstrapCluster { index_key: IndexKey::generate(), bootstrap: Box::new(b) };
    let fresh = node.propose_as::<Bootstrapped>(cmd).await?.fresh;
    if fresh {
        tracing::info!("cluster bootstrapped from imported records");
    }
    Ok(fresh)
}

/// With the relationship-store driver the bootstrap administrator's grants (admin on the admin
/// project and on the system) must be in the store, or nobody could administer the cloud.
/// Written once the cluster is bootstrapped, unless the store already resolves one of them
/// (an operator's later changes to them are left alone). Idempotent: every node may run it.
pub async fn seed_store(node: &Core) -> ApiResult<()> {
    let Some(fga) = &node.fga else { return Ok(()) };
    let grants = {
        let view = node.engine.read();
        let Some(b) = view.bootstrap_info()? else { return Ok(()) };
        let mut grants = Vec::new();
        for target in [Target::Project(b.admin_project_id.clone()), Target::System] {
            grants.extend(view.assignments_of_actor_on(ActorKind::User, &b.admin_user_id, &target)?);
        }
        grants.retain(|a| !a.inherited);
        grants
    };
    let mut held = false;
    for a in &grants {
        if fga.check(&node.engine.read(), a).await? {
            held = true;
            break;
        }
    }
    if !held {
        for a in &grants {
            fga.grant(&node.engine.read(), a).await?;
        }
        tracing::info!("wrote the bootstrap administrator's {} grants to the OpenFGA store", grants.len());
    }
    fga.seeded.store(true, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}
