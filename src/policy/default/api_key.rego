# identity/api_key/*: API keys (/v4/api-keys). An admin, or a manager of the key's domain
# (every operation names the domain).
#
#   input.target.api_key.domain_id   the key's domain
package identity.api_key

key_manager if data.lib.admin_required

key_manager if {
	is_string(input.target.api_key.domain_id)
	data.lib.domain_role("manager", input.target.api_key.domain_id)
}

create if key_manager

list if key_manager

show if key_manager

update if key_manager

revoke if key_manager

simulate if key_manager
