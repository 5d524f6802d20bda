# identity:token_restriction:*: token restrictions (/v4/tokens/restrictions). An admin, or a
# manager of the restriction's domain; the guard rails (policy/guard.rs) keep restrictions
# that concern the cloud administrators theirs alone.
#
#   input.target.restriction.domain_id   the restriction's domain (null: any, or unknown)
package identity.token_restriction

restriction_manager if data.lib.admin_required

restriction_manager if {
	is_string(input.target.restriction.domain_id)
	data.lib.domain_role("manager", input.target.restriction.domain_id)
}

list if restriction_manager

show if restriction_manager

create if restriction_manager

update if restriction_manager

delete if restriction_manager
