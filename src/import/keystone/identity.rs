//! Users (`user` with `local_user`, `password`, `nonlocal_user`, `federated_user`,
//! `user_option`), groups and memberships.
//!
//! A local user's password rows become its password bookkeeping: the newest row is the
//! password (its hash kept in Keystone's format, replaced with argon2id at the first login that
//! proves it), all rows its history, the local user's failed attempts its lockout state.

use std::collections::HashMap;

use super::db::Db;
use super::options::options_json;
use super::source::{extra_json, Source};
use crate::state::import::ImportRecord;
use crate::state::model::{
    ExpiringMembership, FederatedIdentity, FederatedProtocol, Group, Membership, PasswordState, User,
};

struct Local {
    id: String,
    name: String,
    failures: u32,
    last_failure_at: i64,
}

struct PasswordRow {
    hash: Option<String>,
    created_at: i64,
    expires_at: Option<i64>,
    self_service: bool,
}

/// `cutoffs`: each user's token cut-off from Keystone's revocation events.
pub async fn read_users(db: &Db, src: &mut Source, cutoffs: &HashMap<String, i64>) -> anyhow::Result<()> {
    let mut locals: HashMap<String, Local> = HashMap::new();
    let cols = ["id", "user_id", "name", "failed_auth_count", "failed_auth_at"];
    for r in db.rows("local_user", &cols, "").await? {
        let local = Local {
            id: r.text("id"),
            name: r.text("name"),
            failures: r.int("failed_auth_count").unwrap_or(0).clamp(0, u32::MAX as i64) as u32,
            last_failure_at: r.micros("failed_auth_at").unwrap_or(0),
        };
        locals.insert(r.text("user_id"), local);
    }
    let mut passwords: HashMap<String, Vec<PasswordRow>> = HashMap::new();
    let cols = ["local_user_id", "password_hash", "created_at_int", "expires_at_int", "self_service"];
    for r in db.rows("password", &cols, "ORDER BY `local_user_id`, `created_at_int`, `id`").await? {
        passwords.entry(r.text("local_user_id")).or_default().push(PasswordRow {
            hash: r.opt("password_hash").map(str::to_string),
            created_at: r.int("created_at_int").unwrap_or(0),
            expires_at: r.int("expires_at_int"),
            self_service: r.flag("self_service"),
        });
    }
    let mut nonlocal: HashMap<String, String> = HashMap::new();
    for r in db.rows("nonlocal_user", &["user_id", "name"], "").await? {
        nonlocal.insert(r.text("user_id"), r.text("name"));
    }
    let mut federated: HashMap<String, (String, Vec<FederatedIdentity>)> = HashMap::new();
    let cols = ["user_id", "idp_id", "protocol_id", "unique_id", "display_name"];
    for r in db.rows("federated_user", &cols, "ORDER BY `user_id`, `idp_id`, `protocol_id`").await? {
        let (name, idps) = federated.entry(r.text("user_id")).or_default();
        if name.is_empty() {
            *name = r.opt("display_name").unwrap_or(r.text("unique_id").as_str()).to_string();
        }
        let protocol = FederatedProtocol { protocol_id: r.text("protocol_id"), unique_id: r.text("unique_id") };
        match idps.iter_mut().find(|f| Some(f.idp_id.as_str()) == r.opt("idp_id")) {
            Some(f) => f.protocols.push(protocol),
            None => idps.push(FederatedIdentity { idp_id: r.text("idp_id"), protocols: vec![protocol] }),
        }
    }
    let options = options_json(db, "user_option", "user_id").await?;
    let cols = ["id", "domain_id", "enabled", "extra", "default_project_id", "created_at"];
    for r in db.rows("user", &cols, "ORDER BY `id`").await? {
        let id = r.text("id");
        let local = locals.remove(&id);
        let (fed_name, fed) = federated.remove(&id).unwrap_or_default();
        let name = match (&local, nonlocal.remove(&id)) {
            (Some(l), _) => l.name.clone(),
            (None, Some(n)) => n,
            (None, None) if !fed_name.is_empty() => fed_name,
            (None, None) => {
                src.skip("users", id, "neither a local, a non-local nor a federated user: it has no name");
                continue;
            }
        };
        let rows = local.as_ref().and_then(|l| passwords.remove(&l.id)).unwrap_or_default();
        let current = rows.last();
        let password = local.as_ref().map(|l| PasswordState {
            history: rows.iter().filter_map(|p| p.hash.clone()).collect(),
            set_at: current.map_or(0, |p| p.created_at),
            self_service: current.is_some_and(|p| p.self_service),
            failures: l.failures,
            last_failure_at: l.last_failure_at,
        });
        let user = User {
            name,
            domain_id: r.text("domain_id"),
            enabled: r.opt("enabled").is_none() || r.flag("enabled"),
            password_hash: current.and_then(|p| p.hash.clone()),
            default_project_id: r.opt("default_project_id").map(str::to_string),
            password_expires_at: current.and_then(|p| p.expires_at),
            extra: extra_json(r.opt("extra")),
            options: options.get(&id).cloned().unwrap_or_else(|| "{}".into()),
            created_at: r.micros("created_at").unwrap_or(0),
            tokens_valid_after: cutoffs.get(&id).copied().unwrap_or(0),
            federated: fed,
            id,
        };
        src.push(ImportRecord::User { user, password });
    }
    Ok(())
}

pub async fn read_groups(db: &Db, src: &mut Source) -> anyhow::Result<()> {
    for r in db.rows("group", &["id", "name", "domain_id", "description", "extra"], "ORDER BY `id`").await? {
        src.push(ImportRecord::Group(Group {
            id: r.text("id"),
            name: r.text("name"),
            domain_id: r.text("domain_id"),
            description: r.opt("description").map(str::to_string),
            extra: extra_json(r.opt("extra")),
        }));
    }
    let order = "ORDER BY `group_id`, `user_id`";
    for r in db.rows("user_group_membership", &["user_id", "group_id"], order).await? {
        src.push(ImportRecord::Member(Membership { group_id: r.text("group_id"), user_id: r.text("user_id") }));
    }
    // Keystone counts an expiring membership until `last_verified` plus its identity
    // provider's `authorization_ttl` (minutes).
    let mut ttl: HashMap<String, i64> = HashMap::new();
    for r in db.rows("identity_provider", &["id", "authorization_ttl"], "").await? {
        if let Some(minutes) = r.int("authorization_ttl").filter(|m| *m > 0) {
            ttl.insert(r.text("id"), minutes);
        }
    }
    let cols = ["user_id", "group_id", "idp_id", "last_verified"];
    for r in db.rows("expiring_user_group_membership", &cols, order).await? {
        let (user_id, group_id, idp_id) = (r.text("user_id"), r.text("group_id"), r.text("idp_id"));
        let (Some(minutes), Some(last_verified)) = (ttl.get(&idp_id), r.micros("last_verified")) else {
            let label = format!("user {user_id} in group {group_id} (through {idp_id})");
            let reason = "its identity provider has no authorization_ttl: Keystone's [federation] \
                          default_authorization_ttl made it last only for the login that granted it";
            src.skip("expiring group memberships", label, reason);
            continue;
        };
        let expires_at = last_verified.saturating_add(minutes.saturating_mul(60_000_000));
        let m = ExpiringMembership { group_id, user_id, idp_id, last_verified, expires_at };
        src.push(ImportRecord::ExpiringMember(m));
    }
    // LDAP identities' public ids: idnode keeps no LDAP-backed domain to map them to.
    for r in db.rows("id_mapping", &["public_id", "entity_type", "local_id"], "ORDER BY `public_id`").await? {
        let label = format!("{} {} ({})", r.text("entity_type"), r.text("public_id"), r.text("local_id"));
        src.skip("id mappings", label, "the public id of an identity in an LDAP domain: idnode has no LDAP backend");
    }
    Ok(())
}
