# identity/identity_provider/*: admin, or manager of the provider's domain (see providers.rego).
package identity.identity_provider

create if data.identity.providers.manager("identity_provider")

list if data.identity.providers.manager("identity_provider")

show if data.identity.providers.manager("identity_provider")

update if data.identity.providers.manager("identity_provider")

delete if data.identity.providers.manager("identity_provider")
