# Credentials and OS-EC2 credentials (keystone/common/policies/credential.py,
# ec2_credential.py).
package identity

# (rule:admin_required) or (role:reader and system_scope:all) or user_id:%(target.credential.user_id)s
credential_reader if data.lib.admin_required

credential_reader if data.lib.system_reader

credential_reader if data.lib.user_is(input.target.credential.user_id)

get_credential if credential_reader

# Listing filters by user: target.credential.user_id, or target.user.id (the filter).
list_credentials if credential_reader

list_credentials if data.lib.user_is(input.target.user.id)

# (rule:admin_required) or user_id:%(target.credential.user_id)s
credential_owner if data.lib.admin_required

credential_owner if data.lib.user_is(input.target.credential.user_id)

create_credential if credential_owner

update_credential if credential_owner

delete_credential if credential_owner

ec2_get_credential if credential_reader

# (rule:admin_required) or (role:reader and system_scope:all) or rule:owner (the user of the URL)
ec2_list_credentials if credential_reader

ec2_list_credentials if data.lib.user_is(input.target.user_id)

# (rule:admin_required) or (role:member and user_id:%(target.credential.user_id)s)
ec2_writer if data.lib.admin_required

ec2_writer if {
	data.lib.role("member")
	data.lib.user_is(input.target.credential.user_id)
}

ec2_create_credential if ec2_writer

ec2_delete_credential if ec2_writer

# S3 request signatures (keystone/common/policies/s3tokens.py): rule:service_or_admin. Only the
# S3 service asks, never the S3 client: a presigned URL carries its signature and string to sign,
# and whoever holds one must not turn it into an answer (or a token) of its own.
s3tokens_validate if data.lib.service_or_admin

# OS-OAUTH1 consumers (keystone/common/policies/consumer.py).
consumer_reader if data.lib.admin_required

consumer_reader if data.lib.system_reader

get_consumer if consumer_reader

list_consumers if consumer_reader

create_consumer if data.lib.admin_required

update_consumer if data.lib.admin_required

delete_consumer if data.lib.admin_required

# OS-OAUTH1 request and access tokens (keystone/common/policies/access_token.py): rule:admin_required.
# Deleting an access token is decided by ec2_delete_credential, as in Keystone.
authorize_request_token if data.lib.admin_required

get_access_token if data.lib.admin_required

get_access_token_role if data.lib.admin_required

list_access_tokens if data.lib.admin_required

list_access_token_roles if data.lib.admin_required

delete_access_token if data.lib.admin_required
