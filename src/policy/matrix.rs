//! The authorization matrix: every served operation, called through the real router by each
//! of Keystone's personas, answers exactly the expected status. Adding an operation is one
//! line in `CASES`.
//!
//! Personas (columns, in this order): anonymous (no token), reader and member (project-scoped
//! on project pA of domain A), the manager of domain A (domain-scoped), the cloud admin
//! (scoped to the admin project) and the admin of domain B (admin, hence manager, on domain
//! B; domain-scoped). The table is written for the strict admin mode (`[policy] admin_scope =
//! system`); in the default Keystone mode the last persona is an admin scoped to project pB,
//! and it answers exactly as the cloud admin does.
//!
//! Path and body placeholders: `{dA}` `{dB}` `{pA}` `{pB}` fixtures; `{uM}` the member user
//! (domain A); `{self}` the caller's user id; `{self_token}` the caller's token (anonymous:
//! the member's); `{member_token}`; `{uniq}` a fresh name; `{scratch_project_A}`,
//! `{scratch_user_A}`, `{scratch_domain}` (disabled), `{scratch_token}`,
//! `{scratch_client_A}`, `{scratch_client_B}` (OAuth2 clients): created by the admin just
//! before the call, so allowed deletions do not disturb later rows. `{client_A}`,
//! `{client_B}`: OAuth2 clients of domains A and B made by the admin with the fixtures.
//! Provider registries (prefix `idp`, `k8s`, `td`): `{idp_A}`, `{idp_B}`, `{idp_global}`
//! fixtures and `{scratch_idp_A}`, `{scratch_idp_B}` made before the call, likewise for the
//! others; `{cert}` a PEM certificate, escaped for a JSON string.
//! `{scratch_mapping_A}` is made before the call like the other scratch records, and
//! `{mapping_A}` is a mapping ruleset of domain A made with the fixtures.

use std::collections::HashMap;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::state::keys::ns;
use crate::state::Reader;
use crate::testkit::TestNode;

const PERSONAS: [&str; 6] = ["anonymous", "reader", "member", "manager A", "admin", "admin B"];
const PASSWORD: &str = "correct horse battery";

/// Method, path (may carry `?query`), body, expected status per persona.
type Case = (Method, &'static str, Option<&'static str>, [u16; 6]);

#[rustfmt::skip]
const CASES: &[Case] = &[
    // Domains                                                         anon reader member mgrA admin admB
    (Method::GET, "/v3/domains", None,                                  [401, 403, 403, 403, 200, 403]),
    (Method::GET, "/v3/domains/{dA}", None,                             [401, 200, 200, 200, 200, 403]),
    (Method::GET, "/v3/domains/{dB}", None,                             [401, 403, 403, 403, 200, 200]),
    (Method::POST, "/v3/domains", Some(r#"{"domain": {"name": "{uniq}"}}"#), [401, 403, 403, 403, 201, 403]),
    (Method::PATCH, "/v3/domains/{dA}", Some(r#"{"domain": {"description": "x"}}"#), [401, 403, 403, 403, 200, 403]),
    (Method::DELETE, "/v3/domains/{scratch_domain}", None,              [401, 403, 403, 403, 204, 403]),
    // Projects
    (Method::GET, "/v3/projects", None,                                 [401, 403, 403, 200, 200, 200]),
    (Method::GET, "/v3/projects?domain_id={dA}", None,                  [401, 403, 403, 200, 200, 403]),
    (Method::GET, "/v3/projects/{pA}", None,                            [401, 200, 200, 200, 200, 403]),
    (Method::GET, "/v3/projects/{pB}", None,                            [401, 403, 403, 403, 200, 200]),
    (Method::POST, "/v3/projects", Some(r#"{"project": {"name": "{uniq}", "domain_id": "{dA}"}}"#), [401, 403, 403, 201, 201, 403]),
    (Method::POST, "/v3/projects", Some(r#"{"project": {"name": "{uniq}", "domain_id": "{dB}"}}"#), [401, 403, 403, 403, 201, 201]),
    (Method::PATCH, "/v3/projects/{pA}", Some(r#"{"project": {"description": "x"}}"#), [401, 403, 403, 200, 200, 403]),
    (Method::DELETE, "/v3/projects/{scratch_project_A}", None,          [401, 403, 403, 204, 204, 403]),
    (Method::PUT, "/v3/projects/{pA}/tags/t-{uniq}", None,              [401, 403, 201, 201, 201, 403]),
    (Method::GET, "/v3/projects/{pA}/tags", None,                       [401, 200, 200, 200, 200, 403]),
    (Method::GET, "/v3/projects/{pB}/tags", None,                       [401, 403, 403, 403, 200, 200]),
    (Method::PUT, "/v3/projects/{pB}/tags", Some(r#"{"tags": ["a"]}"#), [401, 403, 403, 403, 200, 200]),
    // Users
    (Method::GET, "/v3/users", None,                                    [401, 403, 403, 200, 200, 200]),
    (Method::GET, "/v3/users?domain_id={dB}", None,                     [401, 403, 403, 403, 200, 200]),
    (Method::GET, "/v3/users/{self}", None,                             [401, 200, 200, 200, 200, 200]),
    (Method::GET, "/v3/users/{uM}", None,                               [401, 403, 200, 200, 200, 403]),
    (Method::POST, "/v3/users", Some(r#"{"user": {"name": "{uniq}", "domain_id": "{dA}", "password": "long enough pw"}}"#), [401, 403, 403, 201, 201, 403]),
    (Method::PATCH, "/v3/users/{scratch_user_A}", Some(r#"{"user": {"description": "x"}}"#), [401, 403, 403, 200, 200, 403]),
    (Method::DELETE, "/v3/users/{scratch_user_A}", None,                [401, 403, 403, 204, 204, 403]),
    // Tokens: validation needs the subject's owner, a reader of the system or a service;
    // revocation needs only the subject token itself.
    (Method::GET, "/v3/auth/tokens#{self_token}", None,                 [401, 200, 200, 200, 200, 200]),
    (Method::GET, "/v3/auth/tokens#{member_token}", None,               [401, 403, 200, 403, 200, 403]),
    (Method::HEAD, "/v3/auth/tokens#{member_token}", None,              [401, 403, 200, 403, 200, 403]),
    (Method::DELETE, "/v3/auth/tokens#{scratch_token}", None,           [204, 204, 204, 204, 204, 204]),
    (Method::GET, "/v3/auth/projects", None,                            [401, 200, 200, 200, 200, 200]),
    (Method::GET, "/v3/auth/catalog", None,                             [401, 200, 200, 200, 200, 200]),
    // Groups and membership: domain readers read, domain managers write, in their domain.
    (Method::GET, "/v3/groups", None,                                   [401, 403, 403, 200, 200, 200]),
    (Method::GET, "/v3/groups/{gA}", None,                              [401, 403, 403, 200, 200, 403]),
    (Method::GET, "/v3/groups/{gB}", None,                              [401, 403, 403, 403, 200, 200]),
    (Method::POST, "/v3/groups", Some(r#"{"group": {"name": "{uniq}", "domain_id": "{dA}"}}"#), [401, 403, 403, 201, 201, 403]),
    (Method::PATCH, "/v3/groups/{gA}", Some(r#"{"group": {"description": "x"}}"#), [401, 403, 403, 200, 200, 403]),
    (Method::DELETE, "/v3/groups/{scratch_group_A}", None,              [401, 403, 403, 204, 204, 403]),
    (Method::PUT, "/v3/groups/{gA}/users/{uM}", None,                   [401, 403, 403, 204, 204, 403]),
    (Method::HEAD, "/v3/groups/{gA}/users/{uM}", None,                  [401, 403, 403, 204, 204, 403]),
    (Method::GET, "/v3/groups/{gA}/users", None,                        [401, 403, 403, 200, 200, 403]),
    (Method::GET, "/v3/users/{uM}/groups", None,                        [401, 403, 200, 200, 200, 403]),
    (Method::GET, "/v3/users/{uM}/projects", None,                      [401, 403, 200, 200, 200, 403]),
    (Method::GET, "/v3/users/{self}/projects", None,                    [401, 200, 200, 200, 200, 200]),
    // Roles and implication rules: reading needs a system reader (or a domain manager, who
    // must see the roles it may grant); writing needs a system admin.
    (Method::GET, "/v3/roles", None,                                    [401, 403, 403, 200, 200, 200]),
    (Method::GET, "/v3/roles/{role_member}", None,                      [401, 403, 403, 200, 200, 200]),
    (Method::POST, "/v3/roles", Some(r#"{"role": {"name": "{uniq}"}}"#), [401, 403, 403, 403, 201, 403]),
    (Method::PATCH, "/v3/roles/{rX}", Some(r#"{"role": {"description": "x"}}"#), [401, 403, 403, 403, 200, 403]),
    (Method::DELETE, "/v3/roles/{scratch_role}", None,                  [401, 403, 403, 403, 204, 403]),
    (Method::PUT, "/v3/roles/{scratch_role}/implies/{role_reader}", None, [401, 403, 403, 403, 201, 403]),
    (Method::HEAD, "/v3/roles/{rX}/implies/{role_reader}", None,        [401, 403, 403, 403, 204, 403]),
    (Method::GET, "/v3/roles/{rX}/implies", None,                       [401, 403, 403, 403, 200, 403]),
    (Method::GET, "/v3/role_inferences", None,                          [401, 403, 403, 403, 200, 403]),
    // Grants: a domain manager grants manager/member/reader inside its domain, nothing else.
    (Method::PUT, "/v3/projects/{pA}/users/{uM}/roles/{role_member}", None, [401, 403, 403, 204, 204, 403]),
    (Method::PUT, "/v3/projects/{pA}/users/{scratch_user_A}/roles/{role_admin}", None, [401, 403, 403, 403, 204, 403]),
    (Method::PUT, "/v3/projects/{pB}/users/{scratch_user_A}/roles/{role_member}", None, [401, 403, 403, 403, 204, 403]),
    (Method::HEAD, "/v3/projects/{pA}/users/{uM}/roles/{role_member}", None, [401, 403, 403, 204, 204, 403]),
    (Method::GET, "/v3/projects/{pA}/users/{uM}/roles", None,           [401, 403, 403, 200, 200, 403]),
    (Method::DELETE, "/v3/projects/{pA}/users/{granted_user_A}/roles/{role_member}", None, [401, 403, 403, 204, 204, 403]),
    (Method::PUT, "/v3/domains/{dA}/groups/{gA}/roles/{role_reader}", None, [401, 403, 403, 204, 204, 403]),
    (Method::PUT, "/v3/system/users/{scratch_user_A}/roles/{role_reader}", None, [401, 403, 403, 403, 204, 403]),
    (Method::GET, "/v3/system/users/{uM}/roles", None,                  [401, 403, 403, 403, 200, 403]),
    (Method::GET, "/v3/role_assignments", None,                         [401, 403, 403, 200, 200, 200]),
    // OS-INHERIT: the grant policies; the policy decides before any 404.
    (Method::PUT, "/v3/OS-INHERIT/domains/{dA}/users/{scratch_user_A}/roles/{role_reader}/inherited_to_projects", None, [401, 403, 403, 204, 204, 403]),
    (Method::HEAD, "/v3/OS-INHERIT/domains/{dA}/users/{uM}/roles/{role_member}/inherited_to_projects", None, [401, 403, 403, 404, 404, 403]),
    (Method::GET, "/v3/OS-INHERIT/domains/{dA}/users/{uM}/roles/inherited_to_projects", None, [401, 403, 403, 200, 200, 403]),
    (Method::GET, "/v3/role_assignments?scope.project.id={pA}&include_subtree", None, [401, 403, 403, 200, 200, 403]),
    // Catalog: regions are readable by anyone authenticated; services and endpoints by system
    // readers; every write needs a system admin.
    (Method::GET, "/v3/regions", None,                                  [401, 200, 200, 200, 200, 200]),
    (Method::POST, "/v3/regions", Some(r#"{"region": {"id": "{uniq}"}}"#), [401, 403, 403, 403, 201, 403]),
    (Method::GET, "/v3/services", None,                                 [401, 403, 403, 403, 200, 403]),
    (Method::POST, "/v3/services", Some(r#"{"service": {"type": "t-{uniq}", "name": "{uniq}"}}"#), [401, 403, 403, 403, 201, 403]),
    (Method::DELETE, "/v3/services/{scratch_service}", None,            [401, 403, 403, 403, 204, 403]),
    (Method::GET, "/v3/endpoints", None,                                [401, 403, 403, 403, 200, 403]),
    // Credentials: the owner or the system.
    (Method::GET, "/v3/credentials", None,                              [401, 200, 200, 200, 200, 200]),
    (Method::POST, "/v3/credentials", Some(r#"{"credential": {"type": "totp", "blob": "{uniq}", "user_id": "{self}"}}"#), [401, 201, 201, 201, 201, 201]),
    (Method::POST, "/v3/credentials", Some(r#"{"credential": {"type": "totp", "blob": "{uniq}", "user_id": "{uM}"}}"#), [401, 403, 201, 403, 201, 403]),
    (Method::GET, "/v3/credentials/{cred_M}", None,                     [401, 403, 200, 403, 200, 403]),
    (Method::GET, "/v3/users/{self}/credentials/OS-EC2", None,          [401, 200, 200, 200, 200, 200]),
    (Method::GET, "/v3/users/{uM}/credentials/OS-EC2", None,            [401, 403, 200, 403, 200, 403]),
    // Keystone's extensions: admins write and read the registries; owners their credentials.
    (Method::GET, "/v3/policies", None,                                 [401, 403, 403, 403, 200, 403]),
    (Method::POST, "/v3/policies", Some(r#"{"policy": {"blob": "{}", "type": "t"}}"#), [401, 403, 403, 403, 201, 403]),
    (Method::GET, "/v3/OS-EP-FILTER/endpoint_groups", None,             [401, 403, 403, 403, 200, 403]),
    (Method::GET, "/v3/OS-FEDERATION/identity_providers", None,         [401, 403, 403, 403, 200, 403]),
    (Method::PUT, "/v3/OS-FEDERATION/identity_providers/idp-{uniq}", Some(r#"{"identity_provider": {"domain_id": "{dA}"}}"#), [401, 403, 403, 403, 201, 403]),
    (Method::GET, "/v3/OS-FEDERATION/mappings", None,                   [401, 403, 403, 403, 200, 403]),
    (Method::GET, "/v3/OS-FEDERATION/service_providers", None,          [401, 403, 403, 403, 200, 403]),
    (Method::GET, "/v3/OS-OAUTH1/consumers", None,                      [401, 403, 403, 403, 200, 403]),
    (Method::POST, "/v3/OS-OAUTH1/consumers", Some(r#"{"consumer": {}}"#), [401, 403, 403, 403, 201, 403]),
    (Method::GET, "/v3/domains/config/default", None,                   [401, 403, 403, 403, 200, 403]),
    (Method::GET, "/v3/domains/{dA}/config/security_compliance", None,  [401, 200, 200, 200, 200, 200]),
    (Method::POST, "/v3/users/{self}/application_credentials", Some(r#"{"application_credential": {"name": "{uniq}"}}"#), [401, 201, 201, 403, 201, 403]),
    (Method::GET, "/v3/users/{uM}/application_credentials", None,       [401, 403, 200, 403, 200, 403]),
    (Method::GET, "/v3/users/{self}/access_rules", None,                [401, 200, 200, 200, 200, 200]),
    (Method::GET, "/v3/OS-TRUST/trusts", None,                          [401, 403, 403, 403, 200, 403]),
    (Method::GET, "/v3/OS-TRUST/trusts?trustor_user_id={self}", None,   [401, 200, 200, 200, 200, 200]),
    // OAuth2 consents: the user's own (with an ordinary token), or an admin.
    (Method::GET, "/v4/users/{self}/oauth2/consents", None,             [401, 200, 200, 200, 200, 200]),
    (Method::GET, "/v4/users/{uM}/oauth2/consents", None,               [401, 403, 200, 403, 200, 403]),
    (Method::DELETE, "/v4/users/{self}/oauth2/consents/no-such-client", None, [401, 404, 404, 404, 404, 404]),
    (Method::DELETE, "/v4/users/{uM}/oauth2/consents/no-such-client", None, [401, 403, 404, 403, 404, 403]),
    // Passkeys: the user's own (with an ordinary token), or an admin; login needs no token.
    (Method::POST, "/v4/users/{self}/passkeys/register_start", None,   [401, 201, 201, 201, 201, 201]),
    (Method::POST, "/v4/users/{uM}/passkeys/register_start", None,     [401, 403, 201, 403, 201, 403]),
    (Method::GET, "/v4/users/{self}/passkeys", None,                    [401, 200, 200, 200, 200, 200]),
    (Method::GET, "/v4/users/{uM}/passkeys", None,                      [401, 403, 200, 403, 200, 403]),
    (Method::DELETE, "/v4/users/{self}/passkeys/no-such-passkey", None, [401, 404, 404, 404, 404, 404]),
    (Method::DELETE, "/v4/users/{uM}/passkeys/no-such-passkey", None,   [401, 403, 404, 403, 404, 403]),
    (Method::POST, "/v4/auth/passkey/start", Some(r#"{"passkey": {"user_id": "{uM}"}}"#), [201, 201, 201, 201, 201, 201]),
    (Method::POST, "/v4/auth/passkey/finish", Some(r#"{"id": "AA", "rawId": "AA", "type": "public-key", "response": {"authenticatorData": "AA", "clientDataJSON": "e30", "signature": "AA"}}"#), [401, 401, 401, 401, 401, 401]),
    // OAuth2 client registry: an admin, or a manager of the client's domain.
    (Method::GET, "/v4/oauth2/{dA}/clients", None,                      [401, 403, 403, 200, 200, 403]),
    (Method::POST, "/v4/oauth2/{dA}/clients", Some(r#"{"oauth2_client": {"name": "{uniq}", "grant_types": ["client_credentials"]}}"#), [401, 403, 403, 201, 201, 403]),
    (Method::GET, "/v4/oauth2/{dA}/clients/{client_A}", None,           [401, 403, 403, 200, 200, 403]),
    (Method::PATCH, "/v4/oauth2/{dA}/clients/{client_A}", Some(r#"{"oauth2_client": {"description": "x"}}"#), [401, 403, 403, 200, 200, 403]),
    (Method::POST, "/v4/oauth2/{dA}/clients/{client_A}/rotate-secret", None, [401, 403, 403, 200, 200, 403]),
    (Method::DELETE, "/v4/oauth2/{dA}/clients/{scratch_client_A}", None, [401, 403, 403, 204, 204, 403]),
    (Method::GET, "/v4/oauth2/{dB}/clients", None,                      [401, 403, 403, 403, 200, 200]),
    (Method::POST, "/v4/oauth2/{dB}/clients", Some(r#"{"oauth2_client": {"name": "{uniq}", "grant_types": ["client_credentials"]}}"#), [401, 403, 403, 403, 201, 201]),
    (Method::GET, "/v4/oauth2/{dB}/clients/{client_B}", None,           [401, 403, 403, 403, 200, 200]),
    (Method::PATCH, "/v4/oauth2/{dB}/clients/{client_B}", Some(r#"{"oauth2_client": {"description": "x"}}"#), [401, 403, 403, 403, 200, 200]),
    (Method::POST, "/v4/oauth2/{dB}/clients/{client_B}/rotate-secret", None, [401, 403, 403, 403, 200, 200]),
    (Method::DELETE, "/v4/oauth2/{dB}/clients/{scratch_client_B}", None, [401, 403, 403, 403, 204, 204]),
    // Provider registries (OIDC IdPs, Kubernetes cluster issuers, SPIFFE trust domains): an
    // admin, or a manager of the provider's domain; listing every domain's, or a global
    // provider, is for admins only.
    (Method::GET, "/v4/federation/identity_providers?domain_id={dA}", None, [401, 403, 403, 200, 200, 403]),
    (Method::POST, "/v4/federation/identity_providers", Some(r#"{"identity_provider": {"domain_id": "{dA}", "provider_id": "{uniq}", "issuer": "https://idp.example", "client_id": "c", "jwks_uri": "https://idp.example/jwks"}}"#), [401, 403, 403, 201, 201, 403]),
    (Method::GET, "/v4/federation/identity_providers/{idp_A}", None, [401, 403, 403, 200, 200, 403]),
    (Method::PATCH, "/v4/federation/identity_providers/{idp_A}", Some(r#"{"identity_provider": {"oidc_scopes": ["openid"]}}"#), [401, 403, 403, 200, 200, 403]),
    (Method::DELETE, "/v4/federation/identity_providers/{scratch_idp_A}", None, [401, 403, 403, 204, 204, 403]),
    (Method::GET, "/v4/federation/identity_providers?domain_id={dB}", None, [401, 403, 403, 403, 200, 200]),
    (Method::POST, "/v4/federation/identity_providers", Some(r#"{"identity_provider": {"domain_id": "{dB}", "provider_id": "{uniq}", "issuer": "https://idp.example", "client_id": "c", "jwks_uri": "https://idp.example/jwks"}}"#), [401, 403, 403, 403, 201, 201]),
    (Method::GET, "/v4/federation/identity_providers/{idp_B}", None, [401, 403, 403, 403, 200, 200]),
    (Method::PATCH, "/v4/federation/identity_providers/{idp_B}", Some(r#"{"identity_provider": {"oidc_scopes": ["openid"]}}"#), [401, 403, 403, 403, 200, 200]),
    (Method::DELETE, "/v4/federation/identity_providers/{scratch_idp_B}", None, [401, 403, 403, 403, 204, 204]),
    (Method::GET, "/v4/federation/identity_providers", None, [401, 403, 403, 403, 200, 403]),
    (Method::GET, "/v4/federation/identity_providers/{idp_global}", None, [401, 403, 403, 403, 200, 403]),
    (Method::PATCH, "/v4/federation/identity_providers/{idp_global}", Some(r#"{"identity_provider": {"oidc_scopes": ["openid"]}}"#), [401, 403, 403, 403, 200, 403]),
    (Method::GET, "/v4/k8s_auth/instances?domain_id={dA}", None, [401, 403, 403, 200, 200, 403]),
    (Method::POST, "/v4/k8s_auth/instances", Some(r#"{"instance": {"domain_id": "{dA}", "provider_id": "{uniq}", "kubernetes_host": "https://k8s.example"}}"#), [401, 403, 403, 201, 201, 403]),
    (Method::GET, "/v4/k8s_auth/instances/{k8s_A}", None, [401, 403, 403, 200, 200, 403]),
    (Method::PATCH, "/v4/k8s_auth/instances/{k8s_A}", Some(r#"{"instance": {"disable_local_ca_jwt": true}}"#), [401, 403, 403, 200, 200, 403]),
    (Method::DELETE, "/v4/k8s_auth/instances/{scratch_k8s_A}", None, [401, 403, 403, 204, 204, 403]),
    (Method::GET, "/v4/k8s_auth/instances?domain_id={dB}", None, [401, 403, 403, 403, 200, 200]),
    (Method::POST, "/v4/k8s_auth/instances", Some(r#"{"instance": {"domain_id": "{dB}", "provider_id": "{uniq}", "kubernetes_host": "https://k8s.example"}}"#), [401, 403, 403, 403, 201, 201]),
    (Method::GET, "/v4/k8s_auth/instances/{k8s_B}", None, [401, 403, 403, 403, 200, 200]),
    (Method::PATCH, "/v4/k8s_auth/instances/{k8s_B}", Some(r#"{"instance": {"disable_local_ca_jwt": true}}"#), [401, 403, 403, 403, 200, 200]),
    (Method::DELETE, "/v4/k8s_auth/instances/{scratch_k8s_B}", None, [401, 403, 403, 403, 204, 204]),
    (Method::GET, "/v4/k8s_auth/instances", None, [401, 403, 403, 403, 200, 403]),
    (Method::GET, "/v4/k8s_auth/instances/{k8s_global}", None, [401, 403, 403, 403, 200, 403]),
    (Method::PATCH, "/v4/k8s_auth/instances/{k8s_global}", Some(r#"{"instance": {"disable_local_ca_jwt": true}}"#), [401, 403, 403, 403, 200, 403]),
    (Method::GET, "/v4/spiffe/trust_domains?domain_id={dA}", None, [401, 403, 403, 200, 200, 403]),
    (Method::POST, "/v4/spiffe/trust_domains", Some(r#"{"trust_domain": {"domain_id": "{dA}", "provider_id": "{uniq}", "trust_domain": "example.org", "trust_bundle_pem": "{cert}"}}"#), [401, 403, 403, 201, 201, 403]),
    (Method::GET, "/v4/spiffe/trust_domains/{td_A}", None, [401, 403, 403, 200, 200, 403]),
    (Method::PATCH, "/v4/spiffe/trust_domains/{td_A}", Some(r#"{"trust_domain": {"trust_domain": "example.org"}}"#), [401, 403, 403, 200, 200, 403]),
    (Method::DELETE, "/v4/spiffe/trust_domains/{scratch_td_A}", None, [401, 403, 403, 204, 204, 403]),
    (Method::GET, "/v4/spiffe/trust_domains?domain_id={dB}", None, [401, 403, 403, 403, 200, 200]),
    (Method::POST, "/v4/spiffe/trust_domains", Some(r#"{"trust_domain": {"domain_id": "{dB}", "provider_id": "{uniq}", "trust_domain": "example.org", "trust_bundle_pem": "{cert}"}}"#), [401, 403, 403, 403, 201, 201]),
    (Method::GET, "/v4/spiffe/trust_domains/{td_B}", None, [401, 403, 403, 403, 200, 200]),
    (Method::PATCH, "/v4/spiffe/trust_domains/{td_B}", Some(r#"{"trust_domain": {"trust_domain": "example.org"}}"#), [401, 403, 403, 403, 200, 200]),
    (Method::DELETE, "/v4/spiffe/trust_domains/{scratch_td_B}", None, [401, 403, 403, 403, 204, 204]),
    (Method::GET, "/v4/spiffe/trust_domains", None, [401, 403, 403, 403, 200, 403]),
    (Method::GET, "/v4/spiffe/trust_domains/{td_global}", None, [401, 403, 403, 403, 200, 403]),
    (Method::PATCH, "/v4/spiffe/trust_domains/{td_global}", Some(r#"{"trust_domain": {"trust_domain": "example.org"}}"#), [401, 403, 403, 403, 200, 403]),
    // Mapped logins: the identity the provider vouches for authenticates (no token needed or
    // used); the fixtures' providers have no ruleset, a forged state opens nothing, and the
    // redirect URI is not the provider's.
    (Method::POST, "/v4/federation/identity_providers/{idp_A}/jwt", None, [401, 401, 401, 401, 401, 401]),
    (Method::POST, "/v4/federation/identity_providers/{idp_A}/auth", Some(r#"{"redirect_uri": "https://elsewhere.example/cb"}"#), [400, 400, 400, 400, 400, 400]),
    (Method::POST, "/v4/federation/oidc/callback", Some(r#"{"state": "forged", "code": "c"}"#), [401, 401, 401, 401, 401, 401]),
    (Method::POST, "/v4/k8s_auth/instances/{k8s_A}/auth", Some(r#"{"jwt": "x"}"#), [404, 404, 404, 404, 404, 404]),
    (Method::POST, "/v4/spiffe/trust_domains/{td_A}/auth", Some(r#"{"jwt": "x"}"#), [404, 404, 404, 404, 404, 404]),
    // API keys: an admin, or a manager of the key's domain; the domain is always named, and a
    // key not of it is not found (after the policy, so a refused caller learns nothing).
    (Method::GET, "/v4/api-keys?domain_id={dA}", None, [401, 403, 403, 200, 200, 403]),
    (Method::POST, "/v4/api-keys", Some(r#"{"api_key": {"domain_id": "{dA}", "provider_id": "{uniq}", "expires_at": "2099-01-01T00:00:00Z"}}"#), [401, 403, 403, 201, 201, 403]),
    (Method::GET, "/v4/api-keys/no-such-key?domain_id={dA}", None, [401, 403, 403, 404, 404, 403]),
    (Method::PUT, "/v4/api-keys/no-such-key?domain_id={dA}", Some(r#"{"api_key": {"description": "x"}}"#), [401, 403, 403, 404, 404, 403]),
    (Method::POST, "/v4/api-keys/no-such-key/revoke?domain_id={dA}", None, [401, 403, 403, 404, 404, 403]),
    (Method::POST, "/v4/api-keys/simulate-access", Some(r#"{"client_id": "no-such-key", "domain_id": "{dA}"}"#), [401, 403, 403, 404, 404, 403]),
    (Method::GET, "/v4/api-keys?domain_id={dB}", None, [401, 403, 403, 403, 200, 200]),
    // SCIM realms: an admin, or a manager of the realm's domain (the fixtures' domain A has no
    // realm; creating one needs an identity provider: idp_A is domain A's).
    (Method::GET, "/v4/scim-realms?domain_id={dA}", None, [401, 403, 403, 200, 200, 403]),
    (Method::POST, "/v4/scim-realms", Some(r#"{"scim_realm": {"domain_id": "{dA}", "provider_id": "{uniq}", "idp_id": "{idp_A}", "display_name": "x"}}"#), [401, 403, 403, 201, 201, 403]),
    (Method::GET, "/v4/scim-realms/{dA}/no-such-realm", None, [401, 403, 403, 404, 404, 403]),
    (Method::PATCH, "/v4/scim-realms/{dA}/no-such-realm", Some(r#"{"scim_realm": {"enabled": false}}"#), [401, 403, 403, 404, 404, 403]),
    (Method::GET, "/v4/scim-realms?domain_id={dB}", None, [401, 403, 403, 403, 200, 200]),
    (Method::DELETE, "/v4/scim-realms/{dA}/no-such-realm/purge/user/x", None, [401, 403, 403, 404, 404, 403]),
    (Method::DELETE, "/v4/scim-realms/{dB}/no-such-realm/purge/group/x", None, [401, 403, 403, 403, 404, 404]),
    // SCIM v2: an API key (Authorization: Bearer kscim_…) is the only credential, so every
    // persona's token is 401 (the keys' own policy is tested in scim::endpoint_tests); the
    // discovery documents need none; /Bulk and /Me are not implemented.
    (Method::GET, "/SCIM/v2/{dA}/Users", None,                          [401, 401, 401, 401, 401, 401]),
    (Method::POST, "/SCIM/v2/{dA}/Users", Some(r#"{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "x", "externalId": "x"}"#), [401, 401, 401, 401, 401, 401]),
    (Method::GET, "/SCIM/v2/{dA}/Users/x", None,                        [401, 401, 401, 401, 401, 401]),
    (Method::PUT, "/SCIM/v2/{dA}/Users/x", Some(r#"{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "x"}"#), [401, 401, 401, 401, 401, 401]),
    (Method::PATCH, "/SCIM/v2/{dA}/Users/x", Some(r#"{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": []}"#), [401, 401, 401, 401, 401, 401]),
    (Method::DELETE, "/SCIM/v2/{dA}/Users/x", None,                     [401, 401, 401, 401, 401, 401]),
    (Method::GET, "/SCIM/v2/{dA}/Groups", None,                         [401, 401, 401, 401, 401, 401]),
    (Method::POST, "/SCIM/v2/{dA}/Groups", Some(r#"{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "x"}"#), [401, 401, 401, 401, 401, 401]),
    (Method::GET, "/SCIM/v2/{dA}/Groups/x", None,                       [401, 401, 401, 401, 401, 401]),
    (Method::PUT, "/SCIM/v2/{dA}/Groups/x", Some(r#"{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "x"}"#), [401, 401, 401, 401, 401, 401]),
    (Method::PATCH, "/SCIM/v2/{dA}/Groups/x", Some(r#"{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": []}"#), [401, 401, 401, 401, 401, 401]),
    (Method::DELETE, "/SCIM/v2/{dA}/Groups/x", None,                    [401, 401, 401, 401, 401, 401]),
    (Method::GET, "/SCIM/v2/{dA}/ServiceProviderConfig", None,          [200, 200, 200, 200, 200, 200]),
    (Method::GET, "/SCIM/v2/{dA}/Schemas", None,                        [200, 200, 200, 200, 200, 200]),
    (Method::GET, "/SCIM/v2/{dA}/Schemas/urn:ietf:params:scim:schemas:core:2.0:Group", None, [200, 200, 200, 200, 200, 200]),
    (Method::GET, "/SCIM/v2/{dA}/ResourceTypes", None,                  [200, 200, 200, 200, 200, 200]),
    (Method::GET, "/SCIM/v2/{dA}/ResourceTypes/User", None,             [200, 200, 200, 200, 200, 200]),
    (Method::POST, "/SCIM/v2/{dA}/Bulk", Some("{}"),                    [501, 501, 501, 501, 501, 501]),
    (Method::GET, "/SCIM/v2/{dA}/Me", None,                             [501, 501, 501, 501, 501, 501]),
    // OAuth2 signing keys: admin only. The admin's rotation answers 409: the staged key made
    // with the domain's keys is younger than `[oauth2] key_publish_delay` (300 s), which the
    // policy lets the admin reach.
    (Method::GET, "/v4/oauth2/{dA}/keys", None,                         [401, 403, 403, 403, 200, 403]),
    (Method::POST, "/v4/oauth2/{dA}/keys/rotate", None,                 [401, 403, 403, 403, 409, 403]),
    // Mapping rulesets: an admin, or a manager of the ruleset's domain; global ones admin only.
    (Method::GET, "/v4/mappings", None,                                 [401, 403, 403, 200, 200, 200]),
    (Method::POST, "/v4/mappings", Some(MAPPING_A),                     [401, 403, 403, 201, 201, 403]),
    (Method::POST, "/v4/mappings", Some(r#"{"mapping": {"provider_id": "p", "source": {"type": "federation", "idp_id": "i"}, "domain_resolution_mode": "claims_only", "allowed_domains": ["{dA}"], "rules": [{"name": "r", "match": {"all_of": []}, "identity": {"user_name": "u", "user_domain_id": "${claims.d}"}}]}}"#), [401, 403, 403, 403, 201, 403]),
    (Method::GET, "/v4/mappings/{mapping_A}", None,                     [401, 403, 403, 200, 200, 403]),
    (Method::PUT, "/v4/mappings/{mapping_A}", Some(MAPPING_A),          [401, 403, 403, 200, 200, 403]),
    (Method::POST, "/v4/mappings/{mapping_A}/rules/mutate", Some(r#"{"mutations": [{"operation": "insert", "rule": {"name": "{uniq}", "match": {"all_of": []}, "identity": {"user_name": "u"}}}]}"#), [401, 403, 403, 200, 200, 403]),
    (Method::DELETE, "/v4/mappings/{scratch_mapping_A}", None,          [401, 403, 403, 204, 204, 403]),
];

/// `{scratch_<prefix>_<A|B>}`: a provider of domain A or B made just before the call.
fn scratch_name(prefix: &str, suffix: &str) -> &'static str {
    match (prefix, suffix) {
        ("idp", "A") => "scratch_idp_A",
        ("idp", _) => "scratch_idp_B",
        ("k8s", "A") => "scratch_k8s_A",
        ("k8s", _) => "scratch_k8s_B",
        ("td", "A") => "scratch_td_A",
        _ => "scratch_td_B",
    }
}
/// A ruleset of domain A granting `reader` there (which its manager holds).
const MAPPING_A: &str = r#"{"mapping": {"domain_id": "{dA}", "provider_id": "p", "source": {"type": "federation", "idp_id": "{idp_A}"}, "rules": [{"name": "r", "match": {"all_of": []}, "identity": {"user_name": "u"}, "authorizations": [{"type": "domain", "domain_id": "{dA}", "roles": [{"id": "{role_reader}"}]}]}]}}"#;

fn fill(template: &str, vars: &HashMap<&str, String>) -> String {
    vars.iter().fold(template.to_string(), |t, (k, v)| t.replace(&format!("{{{k}}}"), v))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_matrix_strict_admin_scope() {
    run_matrix("system", |expected| *expected).await;
}

/// Keystone's `admin_required` (`role:admin` on any scope): an admin of an ordinary project is
/// a cloud administrator, as tempest and every OpenStack deployment expect.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_matrix_keystone_admin_scope() {
    run_matrix("any", |expected| {
        let mut e = *expected;
        e[5] = e[4];
        e
    })
    .await;
}

async fn run_matrix(admin_scope: &str, expect: fn(&[u16; 6]) -> [u16; 6]) {
    let strict = admin_scope == "system";
    let t =
        TestNode::start_with(&[("auth", "rate_limit_per_second", "0"), ("policy", "admin_scope", admin_scope)]).await;
    let info = t.node.engine.read().bootstrap_info().unwrap().unwrap();
    let admin_token = t.admin.clone();
    let admin = admin_token.as_str();

    let d_a = t.create("/v3/domains", "domain", json!({"name": "dom-a"})).await;
    let d_b = t.create("/v3/domains", "domain", json!({"name": "dom-b"})).await;
    let p_a = t.create("/v3/projects", "project", json!({"name": "pa", "domain_id": d_a})).await;
    let p_b = t.create("/v3/projects", "project", json!({"name": "pb", "domain_id": d_b})).await;
    let user = |name: &str, domain: &str| json!({"name": name, "domain_id": domain, "password": PASSWORD});
    let u_r = t.create("/v3/users", "user", user("reader", &d_a)).await;
    let u_m = t.create("/v3/users", "user", user("member", &d_a)).await;
    let u_dm = t.create("/v3/users", "user", user("manager", &d_a)).await;
    let u_ob = t.create("/v3/users", "user", user("admin-b", &d_b)).await;
    let role = |name: &str| t.node.engine.read().id_by_name(ns::ROLE_NAME, "", name).unwrap().unwrap();
    let (role_admin, role_manager, role_member, role_reader) =
        (role("admin"), role("manager"), role("member"), role("reader"));
    for (u, target, r) in [
        (&u_r, format!("projects/{p_a}"), &role_reader),
        (&u_m, format!("projects/{p_a}"), &role_member),
        (&u_dm, format!("domains/{d_a}"), &role_manager),
        (&u_ob, format!("domains/{d_b}"), &role_admin),
        (&u_ob, format!("projects/{p_b}"), &role_admin),
    ] {
        let r = t.call(Method::PUT, &format!("/v3/{target}/users/{u}/roles/{r}"), Some(admin), None).await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "grant: {}", r.body);
    }
    let g_a = t.create("/v3/groups", "group", json!({"name": "ga", "domain_id": d_a})).await;
    let g_b = t.create("/v3/groups", "group", json!({"name": "gb", "domain_id": d_b})).await;
    let r_x = t.create("/v3/roles", "role", json!({"name": "role-x"})).await;
    let rule = t.call(Method::PUT, &format!("/v3/roles/{r_x}/implies/{role_reader}"), Some(admin), None).await;
    assert_eq!(rule.status, StatusCode::CREATED, "implication rule: {}", rule.body);
    let oauth2_client = |domain: &str| {
        let path = format!("/v4/oauth2/{domain}/clients");
        let t = &t;
        async move {
            let body = json!({"name": "matrix", "grant_types": ["client_credentials"]});
            t.create(&path, "oauth2_client", body).await
        }
    };
    let client_a = oauth2_client(&d_a).await;
    let client_b = oauth2_client(&d_b).await;
    // Providers of each registry: (placeholder prefix, path, envelope, kind fields).
    let cert = crate::providers::tests::CERT.replace('\n', "\\n");
    let registries = [
        (
            "idp",
            "/v4/federation/identity_providers",
            "identity_provider",
            json!({"issuer": "https://idp.example", "client_id": "c", "jwks_uri": "https://idp.example/jwks"}),
        ),
        ("k8s", "/v4/k8s_auth/instances", "instance", json!({"kubernetes_host": "https://k8s.example"})),
        (
            "td",
            "/v4/spiffe/trust_domains",
            "trust_domain",
            json!({"trust_domain": "example.org", "trust_bundle_pem": crate::providers::tests::CERT}),
        ),
    ];
    let provider = |path: &'static str, envelope: &'static str, fields: &Value, domain: Value, handle: String| {
        let mut body = fields.clone();
        body["domain_id"] = domain;
        body["provider_id"] = json!(handle);
        let t = &t;
        async move { t.create(path, envelope, body).await }
    };
    let mut fixtures: Vec<(String, String)> = Vec::new();
    for (prefix, path, envelope, fields) in &registries {
        for (suffix, domain) in [("A", json!(d_a)), ("B", json!(d_b)), ("global", Value::Null)] {
            let id = provider(path, envelope, fields, domain, format!("fixture-{suffix}")).await;
            fixtures.push((format!("{prefix}_{suffix}"), id));
        }
    }
    let mapping_a = || {
        let t = &t;
        let idp_a = fixtures.iter().find(|(k, _)| k == "idp_A").map(|(_, v)| v.clone()).unwrap_or_default();
        let vars = HashMap::from([("dA", d_a.clone()), ("role_reader", role_reader.clone()), ("idp_A", idp_a)]);
        let body = fill(MAPPING_A, &vars);
        async move {
            let r = t.admin(Method::POST, "/v4/mappings", Some(serde_json::from_str(&body).unwrap())).await;
            assert_eq!(r.status, StatusCode::CREATED, "mapping: {}", r.body);
            r.body["mapping"]["mapping_id"].as_str().unwrap().to_string()
        }
    };
    let mapping_id_a = mapping_a().await;
    let cred_m = t.create("/v3/credentials", "credential", json!({"type": "totp", "blob": "m", "user_id": u_m})).await;

    let on_pa = json!({"project": {"id": p_a}});
    let on_pb = json!({"project": {"id": p_b}});
    let tokens = [
        None,
        Some(t.token_for_id(&u_r, PASSWORD, on_pa.clone()).await),
        Some(t.token_for_id(&u_m, PASSWORD, on_pa.clone()).await),
        Some(t.token_for_id(&u_dm, PASSWORD, json!({"domain": {"id": d_a}})).await),
        Some(admin_token.clone()),
        Some(t.token_for_id(&u_ob, PASSWORD, if strict { json!({"domain": {"id": d_b}}) } else { on_pb }).await),
    ];
    let users = [&u_m, &u_r, &u_m, &u_dm, &info.admin_user_id, &u_ob];
    let member_token = tokens[2].clone().unwrap();

    let mut failures = Vec::new();
    let mut n = 0;
    for (method, path, body, expected) in CASES {
        let expected = expect(expected);
        for (i, persona) in PERSONAS.iter().enumerate() {
            n += 1;
            let mut vars: HashMap<&str, String> = HashMap::from([
                ("dA", d_a.clone()),
                ("dB", d_b.clone()),
                ("pA", p_a.clone()),
                ("pB", p_b.clone()),
                ("uM", u_m.clone()),
                ("self", users[i].clone()),
                ("self_token", tokens[i].clone().unwrap_or_else(|| member_token.clone())),
                ("member_token", member_token.clone()),
                ("uniq", format!("case-{n}")),
                ("gA", g_a.clone()),
                ("gB", g_b.clone()),
                ("rX", r_x.clone()),
                ("role_admin", role_admin.clone()),
                ("role_member", role_member.clone()),
                ("role_reader", role_reader.clone()),
                ("cred_M", cred_m.clone()),
                ("client_A", client_a.clone()),
                ("client_B", client_b.clone()),
                ("cert", cert.clone()),
                ("mapping_A", mapping_id_a.clone()),
            ]);
            for (name, id) in &fixtures {
                vars.insert(name.as_str(), id.clone());
            }

            let text = format!("{path} {}", body.unwrap_or(""));
            for (prefix, path, envelope, fields) in &registries {
                for (suffix, domain) in [("A", &d_a), ("B", &d_b)] {
                    let placeholder = scratch_name(prefix, suffix);
                    if text.contains(&format!("{{{placeholder}}}")) {
                        let id = provider(path, envelope, fields, json!(domain), format!("scratch-{n}")).await;
                        vars.insert(placeholder, id);
                    }
                }
            }
            if text.contains("{scratch_project_A}") {
                let id = t.create("/v3/projects", "project", json!({"name": format!("s{n}"), "domain_id": d_a}));
                vars.insert("scratch_project_A", id.await);
            }
            if text.contains("{scratch_user_A}") {
                let id = t.create("/v3/users", "user", json!({"name": format!("s{n}"), "domain_id": d_a}));
                vars.insert("scratch_user_A", id.await);
            }
            if text.contains("{scratch_domain}") {
                let id = t.create("/v3/domains", "domain", json!({"name": format!("s{n}"), "enabled": false}));
                vars.insert("scratch_domain", id.await);
            }
            if text.contains("{scratch_group_A}") {
                let id = t.create("/v3/groups", "group", json!({"name": format!("s{n}"), "domain_id": d_a}));
                vars.insert("scratch_group_A", id.await);
            }
            if text.contains("{scratch_role}") {
                vars.insert("scratch_role", t.create("/v3/roles", "role", json!({"name": format!("s{n}")})).await);
            }
            if text.contains("{scratch_service}") {
                let id = t.create("/v3/services", "service", json!({"type": format!("s{n}")}));
                vars.insert("scratch_service", id.await);
            }
            for (placeholder, domain) in [("scratch_client_A", &d_a), ("scratch_client_B", &d_b)] {
                if text.contains(&format!("{{{placeholder}}}")) {
                    vars.insert(placeholder, oauth2_client(domain).await);
                }
            }
            if text.contains("{scratch_mapping_A}") {
                vars.insert("scratch_mapping_A", mapping_a().await);
            }
            if text.contains("{granted_user_A}") {
                let id = t.create("/v3/users", "user", json!({"name": format!("g{n}"), "domain_id": d_a})).await;
                let grant = format!("/v3/projects/{p_a}/users/{id}/roles/{role_member}");
                assert_eq!(t.call(Method::PUT, &grant, Some(admin), None).await.status, StatusCode::NO_CONTENT);
                vars.insert("granted_user_A", id);
            }
            if text.contains("{scratch_token}") {
                vars.insert("scratch_token", t.token_for_id(&u_m, PASSWORD, on_pa.clone()).await);
            }
            let body: Option<Value> = body.map(|b| serde_json::from_str(&fill(b, &vars)).unwrap());
            let r = t.call(method.clone(), &fill(path, &vars), tokens[i].as_deref(), body).await;
            if r.status.as_u16() != expected[i] {
                failures
                    .push(format!("{method} {path} as {persona}: {} (expected {}) {}", r.status, expected[i], r.body));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "admin_scope = {admin_scope}: {} of {n} calls answered unexpectedly:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_issue_is_rate_limited_per_source() {
    // A burst of 3: the test node's own admin token takes one, these two calls the others.
    let t = TestNode::start_with(&[("auth", "rate_limit_per_second", "1"), ("auth", "rate_limit_burst", "3")]).await;
    let bad = json!({"auth": {"identity": {"methods": ["password"],
        "password": {"user": {"id": "nobody", "password": "x"}}}}});
    for _ in 0..2 {
        let r = t.call(Method::POST, "/v3/auth/tokens", None, Some(bad.clone())).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    }
    let r = t.call(Method::POST, "/v4/auth/tokens", None, Some(bad.clone())).await;
    assert_eq!(r.status, StatusCode::TOO_MANY_REQUESTS, "{}", r.body);
    assert_eq!(r.body["error"]["code"], 429);
    assert_eq!(r.body["error"]["title"], "Too Many Requests");
    let retry: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=2).contains(&retry), "{retry}");
    // Validation is not limited.
    let r = t.call(Method::GET, "/v3/auth/tokens#x", None, None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    let mut metrics = String::new();
    prometheus_client::encoding::text::encode(&mut metrics, &t.node.registry).unwrap();
    assert!(metrics.contains("idnode_rate_limited_total{route=\"/v4/auth/tokens\"} 1"), "{metrics}");
    for family in ["idnode_policy_decisions counter", "idnode_policy_evaluation_seconds histogram"] {
        assert!(metrics.contains(&format!("# TYPE {family}")), "{family} is registered");
    }
}
