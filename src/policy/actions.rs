//! Every policy name the bundled rules define. A policy set (bundled or an operator's
//! override) must define each of them without evaluation errors before it is installed, so a
//! typo in an override cannot silently turn an endpoint into a 403.

pub const ACTIONS: &[&str] = &[
    // resource.rego
    "identity:get_domain",
    "identity:list_domains",
    "identity:create_domain",
    "identity:update_domain",
    "identity:delete_domain",
    "identity:get_project",
    "identity:list_projects",
    "identity:list_user_projects",
    "identity:list_project_tags",
    "identity:get_project_tag",
    "identity:create_project_tag",
    "identity:update_project_tags",
    "identity:delete_project_tag",
    "identity:delete_project_tags",
    "identity:create_project",
    "identity:update_project",
    "identity:delete_project",
    // identity.rego
    "identity:get_user",
    "identity:list_users",
    "identity:create_user",
    "identity:update_user",
    "identity:delete_user",
    "identity:change_password",
    "identity:list_groups_for_user",
    "identity:get_group",
    "identity:list_groups",
    "identity:create_group",
    "identity:update_group",
    "identity:delete_group",
    "identity:list_users_in_group",
    "identity:add_user_to_group",
    "identity:remove_user_from_group",
    "identity:check_user_in_group",
    // assignment.rego
    "identity:get_role",
    "identity:list_roles",
    "identity:create_role",
    "identity:update_role",
    "identity:delete_role",
    "identity:get_domain_role",
    "identity:list_domain_roles",
    "identity:create_domain_role",
    "identity:update_domain_role",
    "identity:delete_domain_role",
    "identity:get_implied_role",
    "identity:list_implied_roles",
    "identity:create_implied_role",
    "identity:delete_implied_role",
    "identity:check_implied_role",
    "identity:list_role_inference_rules",
    "identity:check_grant",
    "identity:list_grants",
    "identity:create_grant",
    "identity:revoke_grant",
    "identity:list_system_grants_for_user",
    "identity:check_system_grant_for_user",
    "identity:create_system_grant_for_user",
    "identity:revoke_system_grant_for_user",
    "identity:list_system_grants_for_group",
    "identity:check_system_grant_for_group",
    "identity:create_system_grant_for_group",
    "identity:revoke_system_grant_for_group",
    "identity:list_role_assignments",
    "identity:list_role_assignments_for_tree",
    // catalog.rego
    "identity:get_region",
    "identity:list_regions",
    "identity:create_region",
    "identity:update_region",
    "identity:delete_region",
    "identity:get_service",
    "identity:list_services",
    "identity:create_service",
    "identity:update_service",
    "identity:delete_service",
    "identity:get_endpoint",
    "identity:list_endpoints",
    "identity:create_endpoint",
    "identity:update_endpoint",
    "identity:delete_endpoint",
    // credential.rego
    "identity:get_credential",
    "identity:list_credentials",
    "identity:create_credential",
    "identity:update_credential",
    "identity:delete_credential",
    "identity:ec2_get_credential",
    "identity:ec2_list_credentials",
    "identity:ec2_create_credential",
    "identity:ec2_delete_credential",
    // token.rego
    "identity:validate_token",
    "identity:check_token",
    "identity:revoke_token",
    "identity:get_auth_catalog",
    "identity:get_auth_projects",
    "identity:get_auth_domains",
    "identity:get_auth_system",
];

/// The Rego rule a policy name is decided by: `identity:get_project` ->
/// `data.identity.get_project` (`/` separates path segments too, for names like
/// `identity/scim/user/create`). None for names that are not plain identifiers, so a name can
/// never address anything but a rule.
pub fn rule_path(name: &str) -> Option<String> {
    let mut path = String::with_capacity(name.len() + 5);
    path.push_str("data");
    for segment in name.split([':', '/']) {
        let ok = segment.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
            && segment.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !ok {
            return None;
        }
        path.push('.');
        path.push_str(segment);
    }
    Some(path)
}
