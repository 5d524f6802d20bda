# Regions, services and endpoints (keystone/common/policies/region.py, service.py, endpoint.py).
package identity

# Regions are readable by any authenticated caller (Keystone's empty check string).
get_region := true

list_regions := true

create_region if data.lib.admin_required

update_region if data.lib.admin_required

delete_region if data.lib.admin_required

# rule:admin_required or (role:reader and system_scope:all)
catalog_reader if data.lib.admin_required

catalog_reader if data.lib.system_reader

get_service if catalog_reader

list_services if catalog_reader

create_service if data.lib.admin_required

update_service if data.lib.admin_required

delete_service if data.lib.admin_required

get_endpoint if catalog_reader

list_endpoints if catalog_reader

create_endpoint if data.lib.admin_required

update_endpoint if data.lib.admin_required

delete_endpoint if data.lib.admin_required

# Policy blobs (keystone/common/policies/policy.py).
get_policy if catalog_reader

list_policies if catalog_reader

create_policy if data.lib.admin_required

update_policy if data.lib.admin_required

delete_policy if data.lib.admin_required

# OS-EP-FILTER (keystone/common/policies/endpoint_group.py, project_endpoint.py).
list_endpoint_groups if catalog_reader

get_endpoint_group if catalog_reader

create_endpoint_group if data.lib.admin_required

update_endpoint_group if data.lib.admin_required

delete_endpoint_group if data.lib.admin_required

list_endpoints_associated_with_endpoint_group if catalog_reader

list_projects_associated_with_endpoint_group if catalog_reader

get_endpoint_group_in_project if catalog_reader

add_endpoint_group_to_project if data.lib.admin_required

remove_endpoint_group_from_project if data.lib.admin_required

list_endpoint_groups_for_project if catalog_reader

list_endpoints_for_project if catalog_reader

list_projects_for_endpoint if catalog_reader

check_endpoint_in_project if catalog_reader

add_endpoint_to_project if data.lib.admin_required

remove_endpoint_from_project if data.lib.admin_required

# OS-ENDPOINT-POLICY (keystone/common/policies/policy_association.py). A domain-scoped token
# is refused before these are read (their scope_types, policy/scope_types.rs).
association_admin if data.lib.admin_required

association_reader if catalog_reader

create_policy_association_for_endpoint if association_admin

check_policy_association_for_endpoint if association_reader

delete_policy_association_for_endpoint if association_admin

create_policy_association_for_service if association_admin

check_policy_association_for_service if association_reader

delete_policy_association_for_service if association_admin

create_policy_association_for_region_and_service if association_admin

check_policy_association_for_region_and_service if association_reader

delete_policy_association_for_region_and_service if association_admin

get_policy_for_endpoint if association_reader

list_endpoints_for_policy if association_reader
