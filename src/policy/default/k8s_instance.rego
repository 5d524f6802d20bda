# identity/k8s_instance/*: admin, or manager of the provider's domain (see providers.rego).
package identity.k8s_instance

create if data.identity.providers.manager("k8s_instance")

list if data.identity.providers.manager("k8s_instance")

show if data.identity.providers.manager("k8s_instance")

update if data.identity.providers.manager("k8s_instance")

delete if data.identity.providers.manager("k8s_instance")
