# identity/trust_domain/*: admin, or manager of the provider's domain (see providers.rego).
package identity.trust_domain

create if data.identity.providers.manager("trust_domain")

list if data.identity.providers.manager("trust_domain")

show if data.identity.providers.manager("trust_domain")

update if data.identity.providers.manager("trust_domain")

delete if data.identity.providers.manager("trust_domain")
