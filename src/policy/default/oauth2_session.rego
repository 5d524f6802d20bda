# identity/oauth2_session/*: a user's own OAuth2 sessions (live refresh-token families), or
# anyone's for an admin, as for consents (see oauth2.rego). The handlers also refuse an
# application-credential or trust token of the user itself.
package identity.oauth2_session

list if data.identity.oauth2.consent_owner

delete if data.identity.oauth2.consent_owner
