# Tokens, the /v3/auth discovery calls and the revocation events
# (keystone/common/policies/token.py, auth.py, revoke_event.py).
package identity

# rule:admin_required or (role:reader and system_scope:all) or rule:service_role
#   or rule:token_subject
validate_token if data.lib.admin_required

validate_token if data.lib.system_reader

validate_token if data.lib.service_role

validate_token if data.lib.token_subject

# rule:admin_required or (role:reader and system_scope:all) or rule:token_subject
check_token if data.lib.admin_required

check_token if data.lib.system_reader

check_token if data.lib.token_subject

# rule:admin_required or rule:token_subject
revoke_token if data.lib.admin_required

revoke_token if data.lib.token_subject

# rule:service_or_admin (keystone/common/policies/revoke_event.py)
list_revoke_events if data.lib.service_or_admin

# Any authenticated caller (Keystone's empty check string): the answers are about the caller.
get_auth_catalog := true

get_auth_projects := true

get_auth_domains := true

get_auth_system := true
