# identity/scim_realm/*: SCIM realms (/v4/scim-realms). An admin, or a manager of the realm's
# domain (spec, Authentication item 8). PATCH is `disable`.
#
#   input.target.scim_realm.domain_id   the realm's domain
package identity.scim_realm

realm_manager if data.lib.admin_required

realm_manager if {
	is_string(input.target.scim_realm.domain_id)
	data.lib.domain_role("manager", input.target.scim_realm.domain_id)
}

create if realm_manager

list if realm_manager

show if realm_manager

disable if realm_manager

purge if realm_manager
