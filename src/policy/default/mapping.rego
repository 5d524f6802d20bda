# identity/mapping/*: mapping rulesets (/v4/mappings). An admin, or a manager of the
# mapping's domain; a global mapping (domain_id null, the claims-driven modes) is the
# admin's alone. The two-tier create checks of the spec run after this, in the handler.
#
#   input.target.mapping.domain_id   the mapping's domain (null: global)
package identity.mapping

# (rule:admin_required) or (role:manager and domain_id:%(target.mapping.domain_id)s)
mapping_manager if data.lib.admin_required

mapping_manager if {
	is_string(input.target.mapping.domain_id)
	data.lib.domain_role("manager", input.target.mapping.domain_id)
}

create if mapping_manager

list if mapping_manager

show if mapping_manager

update if mapping_manager

delete if mapping_manager
