//! Keystone's `scope_types`: which token scopes an operation accepts at all, whatever its rule
//! says. oslo.policy (with `enforce_scope`, on by default since Keystone 2023.2) refuses a
//! token of another scope with 403 before the rule is read, so an admin of a domain, whom
//! `admin_required` (`role:admin`) would admit, may not touch the catalog, roles or the
//! federation registry, while an admin of a project may. These sets are Keystone 30's
//! (`keystone/common/policies/*.py`); like Keystone's, they are code, not policy an operator
//! overrides, and they hold in both `[policy] admin_scope` modes (the strict one only adds
//! refusals). Names not listed accept every scope, as do idnode's own v4 operations.

use crate::token::TokenScope;

/// `scope_types=['system', 'project']`: a domain-scoped token is refused.
const SYSTEM_OR_PROJECT: &[&str] = &[
    "identity:add_endpoint_group_to_project",
    "identity:add_endpoint_to_project",
    "identity:check_endpoint_in_project",
    "identity:check_implied_role",
    "identity:check_policy_association_for_endpoint",
    "identity:check_policy_association_for_region_and_service",
    "identity:check_policy_association_for_service",
    "identity:check_system_grant_for_group",
    "identity:check_system_grant_for_user",
    "identity:create_consumer",
    "identity:create_domain",
    "identity:create_domain_config",
    "identity:create_domain_role",
    "identity:create_endpoint",
    "identity:create_endpoint_group",
    "identity:create_identity_provider",
    "identity:create_implied_role",
    "identity:create_limits",
    "identity:create_mapping",
    "identity:create_policy",
    "identity:create_policy_association_for_endpoint",
    "identity:create_policy_association_for_region_and_service",
    "identity:create_policy_association_for_service",
    "identity:create_protocol",
    "identity:create_region",
    "identity:create_registered_limits",
    "identity:create_role",
    "identity:create_service",
    "identity:create_service_provider",
    "identity:create_system_grant_for_group",
    "identity:create_system_grant_for_user",
    "identity:delete_access_rule",
    "identity:delete_application_credential",
    "identity:delete_consumer",
    "identity:delete_domain",
    "identity:delete_domain_config",
    "identity:delete_domain_role",
    "identity:delete_endpoint",
    "identity:delete_endpoint_group",
    "identity:delete_identity_provider",
    "identity:delete_implied_role",
    "identity:delete_limit",
    "identity:delete_mapping",
    "identity:delete_policy",
    "identity:delete_policy_association_for_endpoint",
    "identity:delete_policy_association_for_region_and_service",
    "identity:delete_policy_association_for_service",
    "identity:delete_protocol",
    "identity:delete_region",
    "identity:delete_registered_limit",
    "identity:delete_role",
    "identity:delete_service",
    "identity:delete_service_provider",
    "identity:delete_trust",
    "identity:ec2_create_credential",
    "identity:ec2_delete_credential",
    "identity:ec2_get_credential",
    "identity:ec2_list_credentials",
    "identity:get_access_rule",
    "identity:get_application_credential",
    "identity:get_consumer",
    "identity:get_domain_config",
    "identity:get_domain_config_default",
    "identity:get_domain_role",
    "identity:get_endpoint",
    "identity:get_endpoint_group",
    "identity:get_endpoint_group_in_project",
    "identity:get_identity_provider",
    "identity:get_implied_role",
    "identity:get_mapping",
    "identity:get_policy",
    "identity:get_policy_for_endpoint",
    "identity:get_protocol",
    "identity:get_role_for_trust",
    "identity:get_service",
    "identity:get_service_provider",
    "identity:get_trust",
    "identity:list_access_rules",
    "identity:list_application_credentials",
    "identity:list_consumers",
    "identity:list_domain_roles",
    "identity:list_endpoint_groups",
    "identity:list_endpoint_groups_for_project",
    "identity:list_endpoints",
    "identity:list_endpoints_associated_with_endpoint_group",
    "identity:list_endpoints_for_policy",
    "identity:list_endpoints_for_project",
    "identity:list_identity_providers",
    "identity:list_implied_roles",
    "identity:list_mappings",
    "identity:list_policies",
    "identity:list_projects_associated_with_endpoint_group",
    "identity:list_projects_for_endpoint",
    "identity:list_protocols",
    "identity:list_revoke_events",
    "identity:list_role_inference_rules",
    "identity:list_roles_for_trust",
    "identity:list_service_providers",
    "identity:list_services",
    "identity:list_system_grants_for_group",
    "identity:list_system_grants_for_user",
    "identity:list_trusts",
    "identity:list_trusts_for_trustee",
    "identity:list_trusts_for_trustor",
    "identity:remove_endpoint_from_project",
    "identity:remove_endpoint_group_from_project",
    "identity:revocation_list",
    "identity:revoke_system_grant_for_group",
    "identity:revoke_system_grant_for_user",
    "identity:update_consumer",
    "identity:update_domain",
    "identity:update_domain_config",
    "identity:update_domain_role",
    "identity:update_endpoint",
    "identity:update_endpoint_group",
    "identity:update_identity_provider",
    "identity:update_limit",
    "identity:update_mapping",
    "identity:update_policy",
    "identity:update_protocol",
    "identity:update_region",
    "identity:update_registered_limit",
    "identity:update_role",
    "identity:update_service",
    "identity:update_service_provider",
];

/// `scope_types=['project']`: only a project-scoped (or unscoped) token.
const PROJECT_ONLY: &[&str] = &[
    "identity:authorize_request_token",
    "identity:create_application_credential",
    "identity:create_trust",
    "identity:delete_access_token",
    "identity:get_access_token",
    "identity:get_access_token_role",
    "identity:list_access_token_roles",
    "identity:list_access_tokens",
];

/// Whether a token of `scope` may ask for `action` at all. oslo.policy counts an unscoped
/// token as project-scoped.
pub fn admits(action: &str, scope: &TokenScope) -> bool {
    match scope {
        TokenScope::Project(_) | TokenScope::Unscoped => true,
        TokenScope::Domain(_) => admits_domain(action),
        TokenScope::System => !listed(PROJECT_ONLY, action),
    }
}

/// [`admits`] for a domain-scoped caller (a token, or an API key acting on its domain).
pub fn admits_domain(action: &str) -> bool {
    !listed(SYSTEM_OR_PROJECT, action) && !listed(PROJECT_ONLY, action)
}

fn listed(set: &[&str], action: &str) -> bool {
    set.binary_search(&action).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sets_are_sorted_for_binary_search() {
        for set in [SYSTEM_OR_PROJECT, PROJECT_ONLY] {
            assert!(set.windows(2).all(|w| w[0] < w[1]));
        }
    }

    #[test]
    fn a_domain_token_is_kept_off_the_catalog_and_a_system_token_off_trusts() {
        let domain = TokenScope::Domain("d".into());
        assert!(!admits("identity:create_endpoint", &domain));
        assert!(admits("identity:create_endpoint", &TokenScope::Project("p".into())));
        assert!(admits("identity:get_user", &domain));
        assert!(!admits("identity:create_trust", &TokenScope::System));
        assert!(!admits("identity:create_trust", &domain));
        assert!(admits("identity:create_trust", &TokenScope::Unscoped));
        assert!(admits("identity/oauth2_client/create", &domain));
    }
}
