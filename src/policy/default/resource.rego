# Domains and projects (keystone/common/policies/domain.py, project.py).
package identity

# rule:admin_required or (role:reader and system_scope:all)
#   or token.domain.id:%(target.domain.id)s or token.project.domain.id:%(target.domain.id)s
get_domain if data.lib.admin_required

get_domain if data.lib.system_reader

get_domain if data.lib.domain_is(input.target.domain.id)

get_domain if data.lib.project_domain_is(input.target.domain.id)

# rule:admin_required or (role:reader and system_scope:all)
#   or (role:reader and domain_id:%(target.domain.id)s)
list_domains if data.lib.admin_required

list_domains if data.lib.system_reader

list_domains if data.lib.domain_role("reader", input.target.domain.id)

create_domain if data.lib.admin_required

update_domain if data.lib.admin_required

delete_domain if data.lib.admin_required

# (rule:admin_required) or (role:reader and system_scope:all)
#   or (role:reader and domain_id:%(target.project.domain_id)s) or project_id:%(target.project.id)s
get_project if data.lib.admin_required

get_project if data.lib.system_reader

get_project if data.lib.domain_role("reader", input.target.project.domain_id)

get_project if data.lib.project_is(input.target.project.id)

# (rule:admin_required) or (role:reader and system_scope:all)
#   or (role:reader and domain_id:%(target.domain_id)s)
list_projects if data.lib.admin_required

list_projects if data.lib.system_reader

list_projects if data.lib.domain_role("reader", input.target.domain_id)

# (rule:admin_required) or (role:reader and system_scope:all)
#   or (role:reader and domain_id:%(target.user.domain_id)s) or user_id:%(target.user.id)s
list_user_projects if data.lib.admin_required

list_user_projects if data.lib.system_reader

list_user_projects if data.lib.domain_role("reader", input.target.user.domain_id)

list_user_projects if data.lib.user_is(input.target.user.id)

# (rule:admin_required) or (role:manager and domain_id:%(target.project.domain_id)s)
project_manager if data.lib.admin_required

project_manager if data.lib.domain_role("manager", input.target.project.domain_id)

create_project if project_manager

update_project if project_manager

delete_project if project_manager

# Project tags (keystone/common/policies/project_tag.py).
# (rule:admin_required) or (role:reader and system_scope:all)
#   or (role:reader and domain_id:%(target.project.domain_id)s) or project_id:%(target.project.id)s
list_project_tags if get_project

get_project_tag if get_project

# (rule:admin_required) or (role:manager and domain_id:%(target.project.domain_id)s): Keystone
# 2024.1 took the project member's tag writes away.
project_tag_writer if project_manager

create_project_tag if project_tag_writer

update_project_tags if project_tag_writer

delete_project_tag if project_tag_writer

delete_project_tags if project_tag_writer

# Domain configuration (keystone/common/policies/domain_config.py).
create_domain_config if data.lib.admin_required

update_domain_config if data.lib.admin_required

delete_domain_config if data.lib.admin_required

get_domain_config if data.lib.admin_required

get_domain_config if data.lib.system_reader

get_domain_config_default if data.lib.admin_required

get_domain_config_default if data.lib.system_reader

# Anyone may read the password rules (Keystone's empty check string).
get_security_compliance_domain_config := true
