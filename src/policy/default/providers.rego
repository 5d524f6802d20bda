# The v4 provider registries: OIDC identity providers, Kubernetes cluster issuers and SPIFFE
# trust domains. A provider of a domain is managed by an admin or a manager of that domain;
# a global provider (domain_id null) by an admin only.
#
#   input.target.<resource>.domain_id   the provider's domain (null: global), or the list's
#                                       domain_id filter (absent: every provider, admin only)
package identity.providers

# (rule:admin_required) or (role:manager and domain_id:%(target.<resource>.domain_id)s)
manager(resource) if data.lib.admin_required

manager(resource) if data.lib.domain_role("manager", input.target[resource].domain_id)
