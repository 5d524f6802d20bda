# Users, groups and group membership (keystone/common/policies/user.py, group.py).
package identity

# (rule:admin_required) or (role:reader and system_scope:all)
#   or (role:reader and token.domain.id:%(target.user.domain_id)s) or user_id:%(target.user.id)s
get_user if data.lib.admin_required

get_user if data.lib.system_reader

get_user if data.lib.domain_role("reader", input.target.user.domain_id)

get_user if data.lib.user_is(input.target.user.id)

# (rule:admin_required) or (role:reader and system_scope:all)
#   or (role:reader and domain_id:%(target.domain_id)s)
list_users if data.lib.admin_required

list_users if data.lib.system_reader

list_users if data.lib.domain_role("reader", input.target.domain_id)

# (rule:admin_required) or (role:manager and token.domain.id:%(target.user.domain_id)s)
user_manager if data.lib.admin_required

user_manager if data.lib.domain_role("manager", input.target.user.domain_id)

create_user if user_manager

update_user if user_manager

delete_user if user_manager

# A user changes its own password (Keystone's historical rule:admin_or_owner).
change_password if data.lib.admin_required

change_password if data.lib.user_is(input.target.user.id)

# (rule:admin_required) or (role:reader and system_scope:all)
#   or (role:reader and domain_id:%(target.user.domain_id)s) or user_id:%(user_id)s
list_groups_for_user if data.lib.admin_required

list_groups_for_user if data.lib.system_reader

list_groups_for_user if data.lib.domain_role("reader", input.target.user.domain_id)

list_groups_for_user if data.lib.user_is(input.target.user.id)

# (rule:admin_required) or (role:reader and system_scope:all)
#   or (role:reader and domain_id:%(target.group.domain_id)s)
group_reader if data.lib.admin_required

group_reader if data.lib.system_reader

group_reader if data.lib.domain_role("reader", input.target.group.domain_id)

get_group if group_reader

list_users_in_group if group_reader

# Listing filters by domain: the filter arrives as target.domain_id (Keystone's list_groups
# names target.group.domain_id; both are accepted).
list_groups if group_reader

list_groups if data.lib.domain_role("reader", input.target.domain_id)

# (rule:admin_required) or (role:manager and domain_id:%(target.group.domain_id)s)
group_manager if data.lib.admin_required

group_manager if data.lib.domain_role("manager", input.target.group.domain_id)

create_group if group_manager

update_group if group_manager

delete_group if group_manager

# (rule:admin_required) or (role:ROLE and domain_id:%(target.group.domain_id)s
#   and domain_id:%(target.user.domain_id)s)
membership(name) if {
	data.lib.domain_role(name, input.target.group.domain_id)
	data.lib.domain_is(input.target.user.domain_id)
}

add_user_to_group if data.lib.admin_required

add_user_to_group if membership("manager")

remove_user_from_group if data.lib.admin_required

remove_user_from_group if membership("manager")

check_user_in_group if data.lib.admin_required

check_user_in_group if data.lib.system_reader

check_user_in_group if membership("reader")

# Application credentials (keystone/common/policies/application_credential.py): the owner
# creates; the owner, admins and system readers read; the owner and admins delete.
create_application_credential if data.lib.user_is(input.target.user_id)

app_cred_reader if data.lib.admin_required

app_cred_reader if data.lib.system_reader

app_cred_reader if data.lib.user_is(input.target.user_id)

get_application_credential if app_cred_reader

list_application_credentials if app_cred_reader

delete_application_credential if data.lib.admin_required

delete_application_credential if data.lib.user_is(input.target.user_id)

# Access rules (keystone/common/policies/access_rule.py): the owner and system readers; a
# system admin deletes.
access_rule_reader if data.lib.system_reader

access_rule_reader if data.lib.user_is(input.target.user.id)

get_access_rule if access_rule_reader

list_access_rules if access_rule_reader

delete_access_rule if {
	data.lib.role("admin")
	data.lib.system_scoped
}

delete_access_rule if data.lib.user_is(input.target.user.id)

# Trusts (keystone/common/policies/trust.py): the trustor creates and deletes; trustor and
# trustee read; admins and system readers read all.
create_trust if data.lib.user_is(input.target.trust.trustor_user_id)

trust_reader if data.lib.admin_required

trust_reader if data.lib.system_reader

list_trusts if trust_reader

list_trusts_for_trustor if trust_reader

list_trusts_for_trustor if data.lib.user_is(input.target.trust.trustor_user_id)

list_trusts_for_trustee if trust_reader

list_trusts_for_trustee if data.lib.user_is(input.target.trust.trustee_user_id)

trust_party if trust_reader

trust_party if data.lib.user_is(input.target.trust.trustor_user_id)

trust_party if data.lib.user_is(input.target.trust.trustee_user_id)

get_trust if trust_party

list_roles_for_trust if trust_party

get_role_for_trust if trust_party

delete_trust if data.lib.admin_required

delete_trust if data.lib.user_is(input.target.trust.trustor_user_id)
