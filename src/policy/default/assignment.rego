# Roles, implied roles, grants, system grants and role assignments
# (keystone/common/policies/role.py, implied_role.py, grant.py, role_assignment.py).
package identity

# (rule:admin_required or (role:reader and system_scope:all))
#   or (role:manager and rule:domain_managed_target_role)
get_role if data.lib.admin_required

get_role if data.lib.system_reader

get_role if {
	data.lib.role("manager")
	data.lib.domain_managed_target_role
}

# (rule:admin_required or (role:reader and system_scope:all)) or (role:manager and not domain_id:None)
list_roles if data.lib.admin_required

list_roles if data.lib.system_reader

list_roles if {
	data.lib.role("manager")
	is_string(input.credentials.domain_id)
}

create_role if data.lib.admin_required

update_role if data.lib.admin_required

delete_role if data.lib.admin_required

# Domain-specific roles: rule:admin_required or (role:reader and system_scope:all) to read,
# rule:admin_required to write.
get_domain_role if data.lib.admin_required

get_domain_role if data.lib.system_reader

list_domain_roles if data.lib.admin_required

list_domain_roles if data.lib.system_reader

create_domain_role if data.lib.admin_required

update_domain_role if data.lib.admin_required

delete_domain_role if data.lib.admin_required

# Implied roles: the same split.
implied_reader if data.lib.admin_required

implied_reader if data.lib.system_reader

get_implied_role if implied_reader

list_implied_roles if implied_reader

check_implied_role if implied_reader

list_role_inference_rules if implied_reader

create_implied_role if data.lib.admin_required

delete_implied_role if data.lib.admin_required

# Grants. grant_scope(NAME): NAME on a domain-scoped token whose domain owns both the actor
# (target.user.domain_id or target.group.domain_id) and the target (target.project.domain_id or
# target.domain.id).
grant_scope(name) if {
	data.lib.role(name)
	grant_actor_in_domain
	grant_target_in_domain
}

grant_actor_in_domain if data.lib.domain_is(input.target.user.domain_id)

grant_actor_in_domain if data.lib.domain_is(input.target.group.domain_id)

grant_target_in_domain if data.lib.domain_is(input.target.project.domain_id)

grant_target_in_domain if data.lib.domain_is(input.target.domain.id)

# domain_id:%(target.role.domain_id)s or None:%(target.role.domain_id)s
grant_role_in_domain if data.lib.target_none(["role", "domain_id"])

grant_role_in_domain if data.lib.domain_is(input.target.role.domain_id)

# (rule:admin_required) or (role:reader and system_scope:all)
#   or (domain reader of actor and target and domain_id:%(target.role.domain_id)s or global role)
check_grant if data.lib.admin_required

check_grant if data.lib.system_reader

check_grant if {
	grant_scope("reader")
	grant_role_in_domain
}

# (rule:admin_required) or (role:reader and system_scope:all) or (domain reader of actor and target)
list_grants if data.lib.admin_required

list_grants if data.lib.system_reader

list_grants if grant_scope("reader")

# (rule:admin_required) or (domain admin of actor and target, role global or of the domain)
#   or (domain manager of actor and target, role manager/member/reader)
grant_writer if data.lib.admin_required

grant_writer if {
	grant_scope("admin")
	grant_role_in_domain
}

grant_writer if {
	grant_scope("manager")
	data.lib.domain_managed_target_role
}

create_grant if grant_writer

revoke_grant if grant_writer

# System grants: rule:admin_required or (role:reader and system_scope:all) to read,
# rule:admin_required to write.
system_grant_reader if data.lib.admin_required

system_grant_reader if data.lib.system_reader

list_system_grants_for_user if system_grant_reader

check_system_grant_for_user if system_grant_reader

list_system_grants_for_group if system_grant_reader

check_system_grant_for_group if system_grant_reader

create_system_grant_for_user if data.lib.admin_required

revoke_system_grant_for_user if data.lib.admin_required

create_system_grant_for_group if data.lib.admin_required

revoke_system_grant_for_group if data.lib.admin_required

# (rule:admin_required) or (role:reader and system_scope:all)
#   or (role:reader and domain_id:%(target.domain_id)s)
list_role_assignments if data.lib.admin_required

list_role_assignments if data.lib.system_reader

list_role_assignments if data.lib.domain_role("reader", input.target.domain_id)

list_role_assignments_for_tree if list_role_assignments
