# identity/passkey/*: a user's own passkeys (/v4/users/{user_id}/passkeys), or anyone's for
# an admin. Registering one needs an ordinary token of the user: the handlers also refuse
# application-credential and trust tokens.
#
#   input.target.user.id   the passkeys' owner
package identity.passkey

owner if data.lib.admin_required

owner if data.lib.user_is(input.target.user.id)

register if owner

list if owner

update if owner

delete if owner
