# identity/oauth2_client/*: admin, or manager of the client's domain (see oauth2.rego).
package identity.oauth2_client

create if data.identity.oauth2.client_manager

list if data.identity.oauth2.client_manager

show if data.identity.oauth2.client_manager

update if data.identity.oauth2.client_manager

delete if data.identity.oauth2.client_manager
