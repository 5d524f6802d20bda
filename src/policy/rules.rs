//! Keystone's default rules for the calls idnode serves, as code. Names mirror Keystone's
//! policy names so operators recognise them.

use serde_json::Value;

use super::{field, Persona};

type Rule = fn(&Persona<'_>, &Value) -> bool;

pub fn rule(name: &str) -> Option<Rule> {
    Some(match name {
        "identity:get_domain" => {
            |p, t| p.system("reader") || p.scope_domain() == field(t, "domain.id") && field(t, "domain.id").is_some()
        }
        "identity:list_domains" => |p, _| p.system("reader"),
        "identity:create_domain" | "identity:update_domain" | "identity:delete_domain" => |p, _| p.system("admin"),
        "identity:get_project" => |p, t| {
            p.system("reader")
                || p.domain("reader", field(t, "project.domain_id"))
                || p.project("reader", field(t, "project.id"))
        },
        "identity:list_projects" => |p, t| p.system("reader") || p.domain("reader", field(t, "domain_id")),
        "identity:create_project" | "identity:update_project" | "identity:delete_project" => {
            |p, t| p.system("admin") || p.domain("manager", field(t, "project.domain_id"))
        }
        "identity:list_user_projects" => |p, t| {
            p.system("reader")
                || p.domain("reader", field(t, "user.domain_id"))
                || Some(p.user_id()) == field(t, "user.id")
        },
        "identity:get_user" => |p, t| {
            p.system("reader")
                || p.domain("reader", field(t, "user.domain_id"))
                || Some(p.user_id()) == field(t, "user.id")
        },
        "identity:list_users" => |p, t| p.system("reader") || p.domain("reader", field(t, "domain_id")),
        "identity:create_user" | "identity:update_user" | "identity:delete_user" => {
            |p, t| p.system("admin") || p.domain("manager", field(t, "user.domain_id"))
        }
        "identity:validate_token" => {
            |p, t| p.system("reader") || p.is_service() || Some(p.user_id()) == field(t, "token.user_id")
        }
        "identity:get_auth_projects" | "identity:get_auth_catalog" => |_, _| true,
        "identity:get_auth_domains" | "identity:get_auth_system" => |_, _| true,
        "identity:change_password" => |p, t| p.system("admin") || Some(p.user_id()) == field(t, "user.id"),
        "identity:get_group" | "identity:list_users_in_group" => {
            |p, t| p.system("reader") || p.domain("reader", field(t, "group.domain_id"))
        }
        "identity:list_groups" => |p, t| p.system("reader") || p.domain("reader", field(t, "domain_id")),
        "identity:create_group" | "identity:update_group" | "identity:delete_group" => {
            |p, t| p.system("admin") || p.domain("manager", field(t, "group.domain_id"))
        }
        "identity:check_user_in_group" => |p, t| p.system("reader") || membership_in_domain(p, "reader", t),
        "identity:add_user_to_group" | "identity:remove_user_from_group" => {
            |p, t| p.system("admin") || membership_in_domain(p, "manager", t)
        }
        "identity:list_groups_for_user" => |p, t| {
            p.system("reader")
                || p.domain("reader", field(t, "user.domain_id"))
                || Some(p.user_id()) == field(t, "user.id")
        },
        // Domain managers read global roles: they need them to grant.
        "identity:get_role" | "identity:list_roles" => {
            |p, _| p.system("reader") || p.domain("manager", p.scope_domain())
        }
        "identity:get_domain_role" => |p, t| p.system("reader") || p.domain("reader", field(t, "role.domain_id")),
        "identity:list_domain_roles" => |p, t| p.system("reader") || p.domain("reader", field(t, "domain_id")),
        "identity:create_role"
        | "identity:update_role"
        | "identity:delete_role"
        | "identity:create_domain_role"
        | "identity:update_domain_role"
        | "identity:delete_domain_role" => |p, _| p.system("admin"),
        "identity:list_implied_roles"
        | "identity:get_implied_role"
        | "identity:check_implied_role"
        | "identity:list_role_inference_rules" => |p, _| p.system("reader"),
        "identity:create_implied_role" | "identity:delete_implied_role" => |p, _| p.system("admin"),
        "identity:list_grants" | "identity:check_grant" => |p, t| p.system("reader") || grant_in_domain(p, "reader", t),
        "identity:create_grant" | "identity:revoke_grant" => {
            |p, t| p.system("admin") || (grant_in_domain(p, "manager", t) && manager_grantable(t))
        }
        "identity:list_system_grants_for_user"
        | "identity:check_system_grant_for_user"
        | "identity:list_system_grants_for_group"
        | "identity:check_system_grant_for_group" => |p, _| p.system("reader"),
        "identity:create_system_grant_for_user"
        | "identity:revoke_system_grant_for_user"
        | "identity:create_system_grant_for_group"
        | "identity:revoke_system_grant_for_group" => |p, _| p.system("admin"),
        // A domain-scoped caller passes `domain_id` = its domain and sees only that domain's
        // assignments.
        "identity:list_role_assignments" => |p, t| p.system("reader") || p.domain("reader", field(t, "domain_id")),
        // Catalog: regions are readable by any authenticated caller (Keystone's default).
        "identity:get_region" | "identity:list_regions" => |_, _| true,
        "identity:get_service" | "identity:list_services" | "identity:get_endpoint" | "identity:list_endpoints" => {
            |p, _| p.system("reader")
        }
        "identity:create_region"
        | "identity:update_region"
        | "identity:delete_region"
        | "identity:create_service"
        | "identity:update_service"
        | "identity:delete_service"
        | "identity:create_endpoint"
        | "identity:update_endpoint"
        | "identity:delete_endpoint" => |p, _| p.system("admin"),
        // Credentials: the owner (`target.credential.user_id`) or the system.
        "identity:get_credential" | "identity:list_credentials" | "identity:ec2_get_credential" => {
            |p, t| p.system("reader") || Some(p.user_id()) == field(t, "credential.user_id")
        }
        "identity:create_credential" | "identity:update_credential" | "identity:delete_credential" => {
            |p, t| p.system("admin") || Some(p.user_id()) == field(t, "credential.user_id")
        }
        "identity:ec2_list_credentials" => |p, t| p.system("reader") || Some(p.user_id()) == field(t, "user_id"),
        "identity:ec2_create_credential" | "identity:ec2_delete_credential" => {
            |p, t| p.system("admin") || p.ctx.has_role("member") && Some(p.user_id()) == field(t, "credential.user_id")
        }
        _ => return None,
    })
}

/// Group and user both in the caller's scoped domain, where it holds `role`.
fn membership_in_domain(p: &Persona<'_>, role: &str, t: &Value) -> bool {
    let (g, u) = (field(t, "group.domain_id"), field(t, "user.domain_id"));
    g.is_some() && g == u && p.domain(role, g)
}

/// A grant whose actor, target (and role, when domain-specific) all belong to the caller's
/// scoped domain, where it holds `role`.
fn grant_in_domain(p: &Persona<'_>, role: &str, t: &Value) -> bool {
    let actor = field(t, "user.domain_id").or_else(|| field(t, "group.domain_id"));
    let target = field(t, "project.domain_id").or_else(|| field(t, "domain.id"));
    let role_ok = field(t, "role.domain_id").is_none_or(|d| Some(d) == actor);
    actor.is_some() && actor == target && role_ok && p.domain(role, actor)
}

/// Roles a domain manager may hand out (Keystone's `domain_managed_target_role`): never
/// admin, and no domain-specific role (it could imply admin).
fn manager_grantable(t: &Value) -> bool {
    field(t, "role.domain_id").is_none() && matches!(field(t, "role.name"), Some("manager" | "member" | "reader"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::state::model::{Project, Role, User};
    use crate::token::{TokenPayload, TokenScope, ValidToken};

    fn domain(id: &str) -> Project {
        Project {
            id: id.into(),
            name: id.into(),
            domain_id: id.into(),
            description: None,
            enabled: true,
            is_domain: true,
            parent_id: None,
            tags: vec![],
            extra: "{}".into(),
            options: "{}".into(),
            created_at: 0,
        }
    }

    fn token(scope: TokenScope, roles: &[&str], admin_project: bool) -> ValidToken {
        let scope_domain = match &scope {
            TokenScope::Domain(d) => Some(domain(d)),
            TokenScope::Project(_) => Some(domain("d1")),
            _ => None,
        };
        ValidToken {
            payload: TokenPayload {
                version: 1,
                user_id: "u1".into(),
                methods: 1,
                scope,
                issued_at: 0,
                expires_at: i64::MAX,
                audit_ids: vec![],
            },
            user: User {
                id: "u1".into(),
                name: "u".into(),
                domain_id: "d1".into(),
                enabled: true,
                password_hash: None,
                default_project_id: None,
                password_expires_at: None,
                extra: "{}".into(),
                options: "{}".into(),
                created_at: 0,
                tokens_valid_after: 0,
                federated: Vec::new(),
            },
            user_domain: domain("d1"),
            project: None,
            scope_domain,
            roles: roles
                .iter()
                .map(|r| Role {
                    id: r.to_string(),
                    name: r.to_string(),
                    domain_id: None,
                    description: None,
                    extra: "{}".into(),
                    options: "{}".into(),
                })
                .collect(),
            is_admin_project: admin_project,
        }
    }

    fn allowed(name: &str, t: &ValidToken, target: Value) -> bool {
        crate::policy::enforce(name, t, &target).is_ok()
    }

    #[test]
    fn personas() {
        let sys_admin = token(TokenScope::System, &["admin", "manager", "member", "reader"], false);
        let admin_project = token(TokenScope::Project("p0".into()), &["admin", "reader"], true);
        let other_admin = token(TokenScope::Project("p9".into()), &["admin", "reader"], false);
        let d1_manager = token(TokenScope::Domain("d1".into()), &["manager", "member", "reader"], false);
        let d1_reader = token(TokenScope::Domain("d1".into()), &["reader"], false);
        let p_member = token(TokenScope::Project("p1".into()), &["member", "reader"], false);
        let in_d1 = json!({"project": {"id": "p1", "domain_id": "d1"}});
        let in_d2 = json!({"project": {"id": "p2", "domain_id": "d2"}});

        for (who, t) in [("system admin", &sys_admin), ("admin project", &admin_project)] {
            assert!(allowed("identity:create_project", t, in_d2.clone()), "{who}");
            assert!(allowed("identity:create_domain", t, json!({})), "{who}");
        }
        assert!(!allowed("identity:create_project", &other_admin, in_d1.clone()), "admin elsewhere is not cloud admin");
        assert!(allowed("identity:create_project", &d1_manager, in_d1.clone()));
        assert!(!allowed("identity:create_project", &d1_manager, in_d2.clone()));
        assert!(!allowed("identity:create_project", &d1_reader, in_d1.clone()));
        assert!(allowed("identity:get_project", &d1_reader, in_d1.clone()));
        assert!(allowed("identity:get_project", &p_member, in_d1.clone()));
        assert!(!allowed("identity:get_project", &p_member, in_d2.clone()));
        assert!(!allowed("identity:list_domains", &d1_manager, json!({})));
        assert!(allowed("identity:get_user", &p_member, json!({"user": {"id": "u1", "domain_id": "d1"}})));
        assert!(!allowed("identity:get_user", &p_member, json!({"user": {"id": "u2", "domain_id": "d1"}})));
        assert!(!allowed("identity:no_such_rule", &sys_admin, json!({})), "unknown rules deny");
    }

    #[test]
    fn catalog_and_credential_personas() {
        let sys_admin = token(TokenScope::System, &["admin", "manager", "member", "reader"], false);
        let sys_reader = token(TokenScope::System, &["reader"], false);
        let p_member = token(TokenScope::Project("p1".into()), &["member", "reader"], false);
        let p_reader = token(TokenScope::Project("p1".into()), &["reader"], false);
        let unscoped = token(TokenScope::Unscoped, &[], false);
        assert!(allowed("identity:list_regions", &unscoped, json!({})));
        assert!(!allowed("identity:create_region", &sys_reader, json!({})));
        assert!(allowed("identity:create_endpoint", &sys_admin, json!({})));
        assert!(allowed("identity:list_services", &sys_reader, json!({})));
        assert!(!allowed("identity:list_services", &p_member, json!({})));

        let mine = json!({"credential": {"user_id": "u1"}});
        let theirs = json!({"credential": {"user_id": "u2"}});
        assert!(allowed("identity:get_credential", &unscoped, mine.clone()), "owner");
        assert!(!allowed("identity:get_credential", &p_member, theirs.clone()));
        assert!(allowed("identity:get_credential", &sys_reader, theirs.clone()));
        assert!(!allowed("identity:update_credential", &sys_reader, theirs.clone()), "reading is not writing");
        assert!(allowed("identity:delete_credential", &sys_admin, theirs.clone()));
        assert!(allowed("identity:ec2_create_credential", &p_member, mine.clone()));
        assert!(!allowed("identity:ec2_create_credential", &p_reader, mine.clone()), "owner needs member");
        assert!(!allowed("identity:ec2_create_credential", &p_member, theirs.clone()));
        assert!(allowed("identity:ec2_list_credentials", &p_reader, json!({"user_id": "u1"})));
        assert!(!allowed("identity:ec2_list_credentials", &p_reader, json!({"user_id": "u2"})));
        assert!(allowed("identity:ec2_get_credential", &sys_reader, theirs));
    }
}
