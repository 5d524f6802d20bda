# OS-FEDERATION registries (keystone/common/policies/identity_provider.py, protocol.py,
# mapping.py, service_provider.py): admins write, admins and system readers read.
package identity

federation_reader if data.lib.admin_required

federation_reader if data.lib.system_reader

get_identity_provider if federation_reader

list_identity_providers if federation_reader

create_identity_provider if data.lib.admin_required

update_identity_provider if data.lib.admin_required

delete_identity_provider if data.lib.admin_required

get_protocol if federation_reader

list_protocols if federation_reader

create_protocol if data.lib.admin_required

update_protocol if data.lib.admin_required

delete_protocol if data.lib.admin_required

get_mapping if federation_reader

list_mappings if federation_reader

create_mapping if data.lib.admin_required

update_mapping if data.lib.admin_required

delete_mapping if data.lib.admin_required

get_service_provider if federation_reader

list_service_providers if federation_reader

create_service_provider if data.lib.admin_required

update_service_provider if data.lib.admin_required

delete_service_provider if data.lib.admin_required
