# Unified limits (keystone/common/policies/registered_limit.py, limit.py).
package identity

# Writes are admin_required with Keystone's scope_types system and project: a domain-scoped
# token is refused even when it carries admin (Keystone enforces scope types).
limit_writer if {
	data.lib.admin_required
	not is_string(input.credentials.domain_id)
}

# Registered limits and the enforcement model are readable by any authenticated caller.
get_registered_limit := true

list_registered_limits := true

create_registered_limits if limit_writer

update_registered_limit if limit_writer

delete_registered_limit if limit_writer

get_limit_model := true

# The listing is open; the handler shows each caller what its scope covers.
list_limits := true

# ADMIN_OR_SYSTEM_OR_DOMAIN_OR_PROJECT_USER
get_limit if data.lib.admin_required

get_limit if data.lib.system_reader

get_limit if data.lib.domain_is(input.target.limit.domain.id)

get_limit if data.lib.domain_is(input.target.limit.project.domain_id)

get_limit if data.lib.project_is(input.target.limit.project_id)

create_limits if limit_writer

update_limit if limit_writer

delete_limit if limit_writer
