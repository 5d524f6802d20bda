# Keystone's default personas (keystone/common/policies/base.py) over idnode's input document:
#
#   input.action       the policy name being decided, e.g. "identity:get_project"
#   input.admin_scope  the node's [policy] admin_scope: "any" (Keystone) or "system" (strict)
#   input.credentials  user_id, user_domain_id, roles (global role names, implied roles
#                      included), system_scope ("all" or null), domain_id (domain scope),
#                      project_id and project_domain_id (project scope), is_admin_project
#   input.target       Keystone's policy target, e.g. {"project": {"id", "domain_id"}}
#
# Keystone's `domain_id:%(target.x)s` holds only for a domain-scoped token of that domain,
# `project_id:%(target.x)s` only for a project-scoped token of that project; an absent or
# null target value never matches anything.
#
# Other files refer to these as `data.lib.NAME`, not through `import data.lib`: with regorus an
# imported package reference evaluates the whole package on every use (about 25 µs per
# reference), a full path only the rule used.
package lib

# role:NAME
role(name) if name in input.credentials.roles

# system_scope:all. In the strict admin mode (input.admin_scope == "system") a token scoped
# to the admin project counts as system scope too (Keystone's is_admin_project).
system_scoped if input.credentials.system_scope == "all"

# Keystone's admin_required: role:admin. With `[policy] admin_scope = any` (the default) an
# admin of any project, domain or the system is a cloud administrator, exactly as in
# Keystone's base.py; with `admin_scope = system` only a system-scoped admin (or an admin on
# the admin project) is, and an admin of another project or domain administers only that.
admin_required if {
	role("admin")
	input.admin_scope != "system"
}

admin_required if {
	role("admin")
	system_scoped
}

# (role:reader and system_scope:all)
system_reader if {
	role("reader")
	system_scoped
}

# service_role: role:service
service_role if role("service")

# service_or_admin: rule:admin_required or rule:service_role
service_or_admin if admin_required

service_or_admin if service_role

# domain_id:%(d)s
domain_is(d) if {
	is_string(d)
	input.credentials.domain_id == d
}

# token.project.domain.id:%(d)s
project_domain_is(d) if {
	is_string(d)
	input.credentials.project_domain_id == d
}

# project_id:%(p)s
project_is(p) if {
	is_string(p)
	input.credentials.project_id == p
}

# user_id:%(u)s
user_is(u) if {
	is_string(u)
	input.credentials.user_id == u
}

# (role:NAME and domain_id:%(d)s)
domain_role(name, d) if {
	role(name)
	domain_is(d)
}

# token_subject: user_id:%(target.token.user_id)s
token_subject if user_is(input.target.token.user_id)

# None:%(target.PATH)s — the target value is absent or null.
target_none(path) if object.get(input.target, path, null) == null

# domain_managed_target_role: the roles a domain manager may hand out
# ('manager', 'member' or 'reader' == target.role.name).
domain_managed_target_role if input.target.role.name in {"manager", "member", "reader"}
