# identity/scim/group/*: SCIM groups (/SCIM/v2/{domain_id}/Groups). The caller is an API key
# with the roles the realm's mapping rule grants it on the path's domain (spec,
# Authentication item 7): manager, admin or scim_provisioner there.
#
#   input.target.scim.domain_id   the realm's domain
package identity.scim.group

provisioner if {
	some role in ["manager", "admin", "scim_provisioner"]
	data.lib.domain_role(role, input.target.scim.domain_id)
}

create if provisioner

list if provisioner

show if provisioner

update if provisioner

delete if provisioner
