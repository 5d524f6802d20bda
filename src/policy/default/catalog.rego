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
