# identity/oauth2_key/*: a domain's signing keys (see oauth2.rego).
package identity.oauth2_key

list if data.identity.oauth2.key_admin

rotate if data.identity.oauth2.key_admin
