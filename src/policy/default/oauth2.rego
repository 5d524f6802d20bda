# The OAuth2 / OpenID Connect provider's administration: clients of a domain's
# authorization server, its signing keys, and users' remembered consents and sessions.
#
#   input.target.oauth2_client.domain_id   the domain whose authorization server it is
#   input.target.user.id                   the user whose consents or sessions are managed
package identity.oauth2

# (rule:admin_required) or (role:manager and domain_id:%(target.oauth2_client.domain_id)s)
client_manager if data.lib.admin_required

client_manager if data.lib.domain_role("manager", input.target.oauth2_client.domain_id)

# Signing-key rotation is a cloud operation: admin only.
key_admin if data.lib.admin_required

# (rule:admin_required) or user_id:%(target.user.id)s
consent_owner if data.lib.admin_required

consent_owner if data.lib.user_is(input.target.user.id)
