# identity/oauth2_consent/*: a user's own remembered consents, or anyone's for an admin
# (see oauth2.rego).
package identity.oauth2_consent

list if data.identity.oauth2.consent_owner

delete if data.identity.oauth2.consent_owner
