//! The authorization matrix: every served operation, called through the real router by each
//! of Keystone's personas, answers exactly the expected status, in both `[policy]
//! admin_scope` modes. Adding an operation is one line in `CASES`.
//!
//! Personas: anonymous (no token); reader and member (project-scoped on project pA of domain
//! A); the manager of domain A and the manager of domain B (each domain-scoped); the cloud
//! admin (scoped to the admin project); the admin of domain B (admin, hence manager, on
//! domain B, domain-scoped). Columns, in this order: anon, reader, member, manager A,
//! manager B, admin, then admin B twice: under `admin_scope = system` (an admin of domain B
//! administers only it) and under `any` (Keystone's `admin_required` holds for it, so the
//! policy lets it do what the cloud admin does, but `policy::guard::cloud_admin` never
//! counts a domain-scoped token, so the guard rails and the mapping checks refuse it what
//! climbs out of its domain). Under `any` the admin of domain B also calls with a token
//! scoped to its project pB: an admin of an ordinary project is a cloud administrator there,
//! and its answers are the admin column's.
//!
//! `GUARD_CASES` holds the guard rails on the v4 write paths for privileged targets, run by
//! their own two tests.
//!
//! Path and body placeholders: `{dA}` `{dB}` `{pA}` `{pB}` fixtures; `{uM}` the member user
//! (domain A); `{uB}` an ordinary user of domain B; `{self}` the caller's user id;
//! `{self_token}` the caller's token (anonymous: the member's); `{member_token}`; `{uniq}` a
//! fresh name; `{scratch_project_A}`, `{scratch_user_A}`, `{scratch_domain}` (disabled),
//! `{scratch_token}`, `{scratch_client_A}`, `{scratch_client_B}` (OAuth2 clients),
//! `{scratch_key_A}` (an API key), `{scratch_restriction_A}` (a token restriction of domain A),
//! `{scratch_registered_limit}`, `{scratch_limit_A}` (a limit on a fresh project of domain A):
//! created by the admin just before the call, so allowed
//! deletions do not disturb later rows. `{client_A}`, `{client_B}`: OAuth2 clients of domains
//! A and B made by the admin with the fixtures; `{key_A}`, `{key_B}` API keys of domains A and
//! B; their SCIM realms are `scim-a` and `scim-b`; `{restriction_A}`, `{restriction_B}` token
//! restrictions of domains A and B. Provider registries (prefix `idp`, `k8s`, `td`): `{idp_A}`,
//! `{idp_B}`, `{idp_global}` fixtures and `{scratch_idp_A}`, `{scratch_idp_B}`,
//! `{scratch_idp_global}` made before the call, likewise for the others; `{cert}` a PEM
//! certificate, escaped for a JSON string. Mapping rulesets: `{mapping_A}`, `{mapping_B}`,
//! `{mapping_global}` fixtures, and `{scratch_mapping_A}` (likewise `_B`, `_global`) made
//! before the call. `{policy}`, `{service}`, `{region}` and `{endpoint}` (of that service, in
//! that region): a policy blob and catalog records made by the admin. A body starting with `form:` is sent form-encoded.

use std::collections::HashMap;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use crate::state::keys::ns;
use crate::state::Reader;
use crate::testkit::{send_content, Reply, TestNode};

const PASSWORD: &str = "correct horse battery";

/// Method, path (may carry `?query`), body, expected status per column (see the module's
/// documentation): anon, reader, member, manager A, manager B, admin, admin B (strict),
/// admin B (Keystone's mode).
type Case = (Method, &'static str, Option<&'static str>, [u16; 8]);

#[rustfmt::skip]
const CASES: &[Case] = &[
    //                                                                  anon rdr mbr mgrA mgrB admin admB:sys admB:any
    // Domains
    (Method::GET, "/v3/domains", None,                                  [401, 403, 403, 200, 200, 200, 200, 200]),
    (Method::GET, "/v3/domains/{dA}", None,                             [401, 200, 200, 200, 403, 200, 403, 200]),
    (Method::GET, "/v3/domains/{dB}", None,                             [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::POST, "/v3/domains", Some(r#"{"domain": {"name": "{uniq}"}}"#), [401, 403, 403, 403, 403, 201, 403, 403]),
    (Method::PATCH, "/v3/domains/{dA}", Some(r#"{"domain": {"description": "x"}}"#), [401, 403, 403, 403, 403, 200, 403, 403]),
    (Method::DELETE, "/v3/domains/{scratch_domain}", None,              [401, 403, 403, 403, 403, 204, 403, 403]),
    // Projects
    (Method::GET, "/v3/projects", None,                                 [401, 403, 403, 200, 200, 200, 200, 200]),
    (Method::GET, "/v3/projects?domain_id={dA}", None,                  [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::GET, "/v3/projects/{pA}", None,                            [401, 200, 200, 200, 403, 200, 403, 200]),
    (Method::GET, "/v3/projects/{pB}", None,                            [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::POST, "/v3/projects", Some(r#"{"project": {"name": "{uniq}", "domain_id": "{dA}"}}"#), [401, 403, 403, 201, 403, 201, 403, 201]),
    (Method::POST, "/v3/projects", Some(r#"{"project": {"name": "{uniq}", "domain_id": "{dB}"}}"#), [401, 403, 403, 403, 201, 201, 201, 201]),
    (Method::PATCH, "/v3/projects/{pA}", Some(r#"{"project": {"description": "x"}}"#), [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::DELETE, "/v3/projects/{scratch_project_A}", None,          [401, 403, 403, 204, 403, 204, 403, 204]),
    (Method::PUT, "/v3/projects/{pA}/tags/t-{uniq}", None,              [401, 403, 403, 201, 403, 201, 403, 201]),
    (Method::GET, "/v3/projects/{pA}/tags", None,                       [401, 200, 200, 200, 403, 200, 403, 200]),
    (Method::GET, "/v3/projects/{pB}/tags", None,                       [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::PUT, "/v3/projects/{pB}/tags", Some(r#"{"tags": ["a"]}"#), [401, 403, 403, 403, 200, 200, 200, 200]),
    // Users
    (Method::GET, "/v3/users", None,                                    [401, 403, 403, 200, 200, 200, 200, 200]),
    (Method::GET, "/v3/users?domain_id={dB}", None,                     [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::GET, "/v3/users/{self}", None,                             [401, 200, 200, 200, 200, 200, 200, 200]),
    (Method::GET, "/v3/users/{uM}", None,                               [401, 403, 200, 200, 403, 200, 403, 200]),
    (Method::POST, "/v3/users", Some(r#"{"user": {"name": "{uniq}", "domain_id": "{dA}", "password": "long enough pw"}}"#), [401, 403, 403, 201, 403, 201, 403, 201]),
    (Method::PATCH, "/v3/users/{scratch_user_A}", Some(r#"{"user": {"description": "x"}}"#), [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::DELETE, "/v3/users/{scratch_user_A}", None,                [401, 403, 403, 204, 403, 204, 403, 204]),
    // Tokens: validation needs the subject's owner, a reader of the system or a service;
    // revocation needs only the subject token itself.
    (Method::GET, "/v3/auth/tokens#{self_token}", None,                 [401, 200, 200, 200, 200, 200, 200, 200]),
    (Method::GET, "/v3/auth/tokens#{member_token}", None,               [401, 403, 200, 403, 403, 200, 403, 200]),
    (Method::HEAD, "/v3/auth/tokens#{member_token}", None,              [401, 403, 200, 403, 403, 200, 403, 200]),
    (Method::DELETE, "/v3/auth/tokens#{scratch_token}", None,           [401, 403, 204, 403, 403, 204, 403, 204]),
    (Method::GET, "/v3/auth/projects", None,                            [401, 200, 200, 200, 200, 200, 200, 200]),
    (Method::GET, "/v3/auth/catalog", None,                             [401, 200, 200, 200, 200, 200, 200, 200]),
    // Revocation events: a service or an admin, system- or project-scoped (a domain-scoped
    // token is outside Keystone's scope types).
    (Method::GET, "/v3/OS-REVOKE/events", None,                         [401, 403, 403, 403, 403, 200, 403, 403]),
    // Groups and membership: domain readers read, domain managers write, in their domain.
    (Method::GET, "/v3/groups", None,                                   [401, 403, 403, 200, 200, 200, 200, 200]),
    (Method::GET, "/v3/groups/{gA}", None,                              [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::GET, "/v3/groups/{gB}", None,                              [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::POST, "/v3/groups", Some(r#"{"group": {"name": "{uniq}", "domain_id": "{dA}"}}"#), [401, 403, 403, 201, 403, 201, 403, 201]),
    (Method::PATCH, "/v3/groups/{gA}", Some(r#"{"group": {"description": "x"}}"#), [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::DELETE, "/v3/groups/{scratch_group_A}", None,              [401, 403, 403, 204, 403, 204, 403, 204]),
    (Method::PUT, "/v3/groups/{gA}/users/{uM}", None,                   [401, 403, 403, 204, 403, 204, 403, 204]),
    (Method::HEAD, "/v3/groups/{gA}/users/{uM}", None,                  [401, 403, 403, 204, 403, 204, 403, 204]),
    (Method::GET, "/v3/groups/{gA}/users", None,                        [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::GET, "/v3/users/{uM}/groups", None,                        [401, 403, 200, 200, 403, 200, 403, 200]),
    // Keystone's order: the policy first, so only who may act on a group hears that it is missing.
    // Targets that do not exist: the policy answers first (Keystone's order), so only a caller
    // who may act hears the 404; regions are readable by anyone.
    (Method::GET, "/v3/users/fakeuser", None,                           [401, 403, 403, 403, 403, 404, 403, 404]),
    (Method::PATCH, "/v3/users/fakeuser", Some(r#"{"user": {"description": "x"}}"#), [401, 403, 403, 403, 403, 404, 403, 404]),
    (Method::DELETE, "/v3/users/fakeuser", None,                        [401, 403, 403, 403, 403, 404, 403, 404]),
    (Method::GET, "/v3/projects/fakeproject", None,                     [401, 403, 403, 403, 403, 404, 403, 404]),
    (Method::PATCH, "/v3/projects/fakeproject", Some(r#"{"project": {"description": "x"}}"#), [401, 403, 403, 403, 403, 404, 403, 404]),
    (Method::GET, "/v3/domains/fakedomain", None,                       [401, 403, 403, 403, 403, 404, 403, 404]),
    (Method::DELETE, "/v3/domains/fakedomain", None,                    [401, 404, 404, 404, 404, 404, 404, 404]),
    (Method::GET, "/v3/endpoints/fakeendpoint", None,                   [401, 403, 403, 403, 403, 404, 403, 403]),
    (Method::DELETE, "/v3/services/fakeservice", None,                  [401, 403, 403, 403, 403, 404, 403, 403]),
    (Method::PATCH, "/v3/regions/fakeregion", Some(r#"{"region": {"description": "x"}}"#), [401, 403, 403, 403, 403, 404, 403, 403]),
    (Method::GET, "/v3/regions/fakeregion", None,                       [401, 404, 404, 404, 404, 404, 404, 404]),
    (Method::GET, "/v3/groups/fakegroup", None,                         [401, 403, 403, 403, 403, 404, 403, 404]),
    (Method::PATCH, "/v3/groups/fakegroup", Some(r#"{"group": {"description": "x"}}"#), [401, 403, 403, 403, 403, 404, 403, 404]),
    (Method::HEAD, "/v3/groups/fakegroup/users/{uM}", None,             [401, 403, 403, 403, 403, 404, 403, 404]),
    (Method::GET, "/v3/users/fakeuser/groups", None,                    [401, 403, 403, 403, 403, 404, 403, 404]),
    // Except a delete, which Keystone looks up first: 404 to everyone.
    (Method::DELETE, "/v3/groups/fakegroup", None,                      [401, 404, 404, 404, 404, 404, 404, 404]),
    (Method::GET, "/v3/users/{uM}/projects", None,                      [401, 403, 200, 200, 403, 200, 403, 200]),
    (Method::GET, "/v3/users/{self}/projects", None,                    [401, 200, 200, 200, 200, 200, 200, 200]),
    // Roles and implication rules: reading needs a system reader (or a domain manager, who
    // must see the roles it may grant); writing needs a system admin.
    (Method::GET, "/v3/roles", None,                                    [401, 403, 403, 200, 200, 200, 200, 200]),
    (Method::GET, "/v3/roles/{role_member}", None,                      [401, 403, 403, 200, 200, 200, 200, 200]),
    (Method::POST, "/v3/roles", Some(r#"{"role": {"name": "{uniq}"}}"#), [401, 403, 403, 403, 403, 201, 403, 403]),
    (Method::PATCH, "/v3/roles/{rX}", Some(r#"{"role": {"description": "x"}}"#), [401, 403, 403, 403, 403, 200, 403, 403]),
    (Method::DELETE, "/v3/roles/{scratch_role}", None,                  [401, 403, 403, 403, 403, 204, 403, 403]),
    (Method::PUT, "/v3/roles/{scratch_role}/implies/{role_reader}", None, [401, 403, 403, 403, 403, 201, 403, 403]),
    (Method::HEAD, "/v3/roles/{rX}/implies/{role_reader}", None,        [401, 403, 403, 403, 403, 204, 403, 403]),
    (Method::GET, "/v3/roles/{rX}/implies", None,                       [401, 403, 403, 403, 403, 200, 403, 403]),
    (Method::GET, "/v3/role_inferences", None,                          [401, 403, 403, 403, 403, 200, 403, 403]),
    // Grants: a domain manager grants manager/member/reader inside its domain, nothing else.
    (Method::PUT, "/v3/projects/{pA}/users/{uM}/roles/{role_member}", None, [401, 403, 403, 204, 403, 204, 403, 204]),
    (Method::PUT, "/v3/projects/{pA}/users/{scratch_user_A}/roles/{role_admin}", None, [401, 403, 403, 403, 403, 204, 403, 403]),
    (Method::PUT, "/v3/projects/{pB}/users/{scratch_user_A}/roles/{role_member}", None, [401, 403, 403, 403, 403, 204, 403, 204]),
    (Method::HEAD, "/v3/projects/{pA}/users/{uM}/roles/{role_member}", None, [401, 403, 403, 204, 403, 204, 403, 204]),
    (Method::GET, "/v3/projects/{pA}/users/{uM}/roles", None,           [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::DELETE, "/v3/projects/{pA}/users/{granted_user_A}/roles/{role_member}", None, [401, 403, 403, 204, 403, 204, 403, 204]),
    (Method::PUT, "/v3/domains/{dA}/groups/{gA}/roles/{role_reader}", None, [401, 403, 403, 204, 403, 204, 403, 204]),
    (Method::PUT, "/v3/system/users/{scratch_user_A}/roles/{role_reader}", None, [401, 403, 403, 403, 403, 204, 403, 403]),
    (Method::GET, "/v3/system/users/{uM}/roles", None,                  [401, 403, 403, 403, 403, 200, 403, 403]),
    (Method::GET, "/v3/role_assignments", None,                         [401, 403, 403, 200, 200, 200, 200, 200]),
    // OS-INHERIT: the grant policies; the policy decides before any 404.
    (Method::PUT, "/v3/OS-INHERIT/domains/{dA}/users/{scratch_user_A}/roles/{role_reader}/inherited_to_projects", None, [401, 403, 403, 204, 403, 204, 403, 204]),
    (Method::HEAD, "/v3/OS-INHERIT/domains/{dA}/users/{uM}/roles/{role_member}/inherited_to_projects", None, [401, 403, 403, 404, 403, 404, 403, 404]),
    (Method::GET, "/v3/OS-INHERIT/domains/{dA}/users/{uM}/roles/inherited_to_projects", None, [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::GET, "/v3/role_assignments?scope.project.id={pA}&include_subtree", None, [401, 403, 403, 200, 403, 200, 403, 200]),
    // Catalog: regions are readable by anyone authenticated; services and endpoints by system
    // readers; every write needs a system admin.
    (Method::GET, "/v3/regions", None,                                  [401, 200, 200, 200, 200, 200, 200, 200]),
    (Method::POST, "/v3/regions", Some(r#"{"region": {"id": "{uniq}"}}"#), [401, 403, 403, 403, 403, 201, 403, 403]),
    (Method::GET, "/v3/services", None,                                 [401, 403, 403, 403, 403, 200, 403, 403]),
    (Method::POST, "/v3/services", Some(r#"{"service": {"type": "t-{uniq}", "name": "{uniq}"}}"#), [401, 403, 403, 403, 403, 201, 403, 403]),
    (Method::DELETE, "/v3/services/{scratch_service}", None,            [401, 403, 403, 403, 403, 204, 403, 403]),
    (Method::GET, "/v3/endpoints", None,                                [401, 403, 403, 403, 403, 200, 403, 403]),
    // Credentials: the owner or the system.
    (Method::GET, "/v3/credentials", None,                              [401, 200, 200, 200, 200, 200, 200, 200]),
    (Method::POST, "/v3/credentials", Some(r#"{"credential": {"type": "totp", "blob": "{uniq}", "user_id": "{self}"}}"#), [401, 201, 201, 201, 201, 201, 201, 201]),
    (Method::POST, "/v3/credentials", Some(r#"{"credential": {"type": "totp", "blob": "{uniq}", "user_id": "{uM}"}}"#), [401, 403, 201, 403, 403, 201, 403, 201]),
    (Method::GET, "/v3/credentials/{cred_M}", None,                     [401, 403, 200, 403, 403, 200, 403, 200]),
    (Method::GET, "/v3/users/{self}/credentials/OS-EC2", None,          [401, 200, 200, 403, 403, 200, 403, 403]),
    (Method::GET, "/v3/users/{uM}/credentials/OS-EC2", None,            [401, 403, 200, 403, 403, 200, 403, 403]),
    // Keystone's extensions: admins write and read the registries; owners their credentials.
    (Method::GET, "/v3/policies", None,                                 [401, 403, 403, 403, 403, 200, 403, 403]),
    (Method::POST, "/v3/policies", Some(r#"{"policy": {"blob": "{}", "type": "t"}}"#), [401, 403, 403, 403, 403, 201, 403, 403]),
    (Method::GET, "/v3/OS-EP-FILTER/endpoint_groups", None,             [401, 403, 403, 403, 403, 200, 403, 403]),
    // OS-ENDPOINT-POLICY: system readers check and resolve, admins tie and untie, never with a
    // domain-scoped token (Keystone's scope_types); the policy decides before any lookup.
    (Method::PUT, "/v3/policies/{policy}/OS-ENDPOINT-POLICY/endpoints/{endpoint}", None, [401, 403, 403, 403, 403, 204, 403, 403]),
    (Method::GET, "/v3/policies/{policy}/OS-ENDPOINT-POLICY/endpoints/{endpoint}", None, [401, 403, 403, 403, 403, 204, 403, 403]),
    (Method::HEAD, "/v3/policies/{policy}/OS-ENDPOINT-POLICY/endpoints/{endpoint}", None, [401, 403, 403, 403, 403, 204, 403, 403]),
    (Method::GET, "/v3/endpoints/{endpoint}/OS-ENDPOINT-POLICY/policy", None, [401, 403, 403, 403, 403, 200, 403, 403]),
    (Method::GET, "/v3/policies/{policy}/OS-ENDPOINT-POLICY/endpoints", None, [401, 403, 403, 403, 403, 200, 403, 403]),
    (Method::DELETE, "/v3/policies/{policy}/OS-ENDPOINT-POLICY/endpoints/{endpoint}", None, [401, 403, 403, 403, 403, 204, 403, 403]),
    (Method::GET, "/v3/policies/{policy}/OS-ENDPOINT-POLICY/endpoints/{endpoint}", None, [401, 403, 403, 403, 403, 404, 403, 403]),
    (Method::GET, "/v3/endpoints/{endpoint}/OS-ENDPOINT-POLICY/policy", None, [401, 403, 403, 403, 403, 404, 403, 403]),
    (Method::PUT, "/v3/policies/{policy}/OS-ENDPOINT-POLICY/services/{service}", None, [401, 403, 403, 403, 403, 204, 403, 403]),
    (Method::GET, "/v3/policies/{policy}/OS-ENDPOINT-POLICY/services/{service}", None, [401, 403, 403, 403, 403, 204, 403, 403]),
    (Method::DELETE, "/v3/policies/{policy}/OS-ENDPOINT-POLICY/services/{service}", None, [401, 403, 403, 403, 403, 204, 403, 403]),
    (Method::PUT, "/v3/policies/{policy}/OS-ENDPOINT-POLICY/services/{service}/regions/{region}", None, [401, 403, 403, 403, 403, 204, 403, 403]),
    (Method::HEAD, "/v3/policies/{policy}/OS-ENDPOINT-POLICY/services/{service}/regions/{region}", None, [401, 403, 403, 403, 403, 204, 403, 403]),
    (Method::DELETE, "/v3/policies/{policy}/OS-ENDPOINT-POLICY/services/{service}/regions/{region}", None, [401, 403, 403, 403, 403, 204, 403, 403]),
    (Method::PUT, "/v3/policies/no-such-policy/OS-ENDPOINT-POLICY/endpoints/{endpoint}", None, [401, 403, 403, 403, 403, 404, 403, 403]),
    (Method::GET, "/v3/endpoints/no-such-endpoint/OS-ENDPOINT-POLICY/policy", None, [401, 403, 403, 403, 403, 404, 403, 403]),
    (Method::GET, "/v3/OS-FEDERATION/identity_providers", None,         [401, 403, 403, 403, 403, 200, 403, 403]),
    (Method::PUT, "/v3/OS-FEDERATION/identity_providers/idp-{uniq}", Some(r#"{"identity_provider": {"domain_id": "{dA}"}}"#), [401, 403, 403, 403, 403, 201, 403, 403]),
    (Method::GET, "/v3/OS-FEDERATION/mappings", None,                   [401, 403, 403, 403, 403, 200, 403, 403]),
    (Method::GET, "/v3/OS-FEDERATION/service_providers", None,          [401, 403, 403, 403, 403, 200, 403, 403]),
    (Method::GET, "/v3/OS-OAUTH1/consumers", None,                      [401, 403, 403, 403, 403, 200, 403, 403]),
    (Method::POST, "/v3/OS-OAUTH1/consumers", Some(r#"{"consumer": {}}"#), [401, 403, 403, 403, 403, 201, 403, 403]),
    (Method::GET, "/v3/domains/config/default", None,                   [401, 403, 403, 403, 403, 200, 403, 403]),
    (Method::GET, "/v3/domains/{dA}/config/security_compliance", None,  [401, 200, 200, 200, 200, 200, 200, 200]),
    (Method::POST, "/v3/users/{self}/application_credentials", Some(r#"{"application_credential": {"name": "{uniq}"}}"#), [401, 201, 201, 403, 403, 201, 403, 403]),
    (Method::GET, "/v3/users/{uM}/application_credentials", None,       [401, 403, 200, 403, 403, 200, 403, 403]),
    (Method::GET, "/v3/users/{self}/access_rules", None,                [401, 200, 200, 403, 403, 200, 403, 403]),
    (Method::GET, "/v3/OS-TRUST/trusts", None,                          [401, 403, 403, 403, 403, 200, 403, 403]),
    (Method::GET, "/v3/OS-TRUST/trusts?trustor_user_id={self}", None,   [401, 200, 200, 403, 403, 200, 403, 403]),
    // S3 request signatures (/v3/s3tokens): the S3 service (role `service`) or an admin, as in
    // Keystone; the policy decides first, so only a caller it lets through hears that the
    // string to sign is malformed (400) or the access key unknown (401).
    (Method::POST, "/v3/s3tokens", Some(r#"{"credentials": {"access": "{uniq}", "token": "!", "signature": "x"}}"#), [401, 403, 403, 403, 403, 400, 403, 400]),
    (Method::POST, "/v3/s3tokens", Some(r#"{"credentials": {"access": "{uniq}", "token": "R0VU", "signature": "x"}}"#), [401, 403, 403, 403, 403, 401, 403, 401]),
    // ---- v4 ----                                                    anon rdr mbr mgrA mgrB admin admB:sys admB:any
    (Method::GET, "/v4", None,                                          [200, 200, 200, 200, 200, 200, 200, 200]),
    // Tokens under /v4: the v3 operations unchanged. Issuing takes no token (the caller's is
    // ignored): the credentials in the body decide.
    (Method::GET, "/v4/auth/tokens#{self_token}", None,                 [401, 200, 200, 200, 200, 200, 200, 200]),
    (Method::GET, "/v4/auth/tokens#{member_token}", None,               [401, 403, 200, 403, 403, 200, 403, 200]),
    (Method::HEAD, "/v4/auth/tokens#{member_token}", None,              [401, 403, 200, 403, 403, 200, 403, 200]),
    (Method::DELETE, "/v4/auth/tokens#{scratch_token}", None,           [401, 403, 204, 403, 403, 204, 403, 204]),
    (Method::POST, "/v4/auth/tokens", Some(r#"{"auth": {"identity": {"methods": ["password"], "password": {"user": {"id": "{uM}", "password": "correct horse battery"}}}}}"#), [200, 200, 200, 200, 200, 200, 200, 200]),
    // A password change needs no token (Keystone's is unenforced: the original password is the
    // proof); a token, when sent, is judged by policy. A wrong original password here.
    (Method::POST, "/v3/users/{uM}/password", Some(r#"{"user": {"original_password": "wrong", "password": "a new password"}}"#), [401, 403, 401, 403, 403, 401, 403, 401]),
    (Method::POST, "/v4/auth/tokens", Some(r#"{"auth": {"identity": {"methods": ["password"], "password": {"user": {"id": "{uM}", "password": "wrong"}}}}}"#), [401, 401, 401, 401, 401, 401, 401, 401]),
    // OAuth2 consents: the user's own (with an ordinary token), or an admin. Managing a
    // domain gives no hold on its users' consents.
    (Method::GET, "/v4/users/{self}/oauth2/consents", None,             [401, 200, 200, 200, 200, 200, 200, 200]),
    (Method::GET, "/v4/users/{uM}/oauth2/consents", None,               [401, 403, 200, 403, 403, 200, 403, 200]),
    (Method::GET, "/v4/users/{uB}/oauth2/consents", None,               [401, 403, 403, 403, 403, 200, 403, 200]),
    (Method::DELETE, "/v4/users/{self}/oauth2/consents/no-such-client", None, [401, 404, 404, 404, 404, 404, 404, 404]),
    (Method::DELETE, "/v4/users/{uM}/oauth2/consents/no-such-client", None, [401, 403, 404, 403, 403, 404, 403, 404]),
    (Method::DELETE, "/v4/users/{uB}/oauth2/consents/no-such-client", None, [401, 403, 403, 403, 403, 404, 403, 404]),
    // OAuth2 sessions (live refresh families): as consents. Ending all of a user's sessions
    // succeeds with none to end.
    (Method::GET, "/v4/users/{self}/oauth2/sessions", None,             [401, 200, 200, 200, 200, 200, 200, 200]),
    (Method::GET, "/v4/users/{uM}/oauth2/sessions", None,               [401, 403, 200, 403, 403, 200, 403, 200]),
    (Method::GET, "/v4/users/{uB}/oauth2/sessions", None,               [401, 403, 403, 403, 403, 200, 403, 200]),
    (Method::DELETE, "/v4/users/{self}/oauth2/sessions/no-such-session", None, [401, 404, 404, 404, 404, 404, 404, 404]),
    (Method::DELETE, "/v4/users/{uM}/oauth2/sessions/no-such-session", None, [401, 403, 404, 403, 403, 404, 403, 404]),
    (Method::DELETE, "/v4/users/{uB}/oauth2/sessions/no-such-session", None, [401, 403, 403, 403, 403, 404, 403, 404]),
    (Method::DELETE, "/v4/users/{self}/oauth2/sessions", None,          [401, 204, 204, 204, 204, 204, 204, 204]),
    (Method::DELETE, "/v4/users/{uM}/oauth2/sessions", None,            [401, 403, 204, 403, 403, 204, 403, 204]),
    (Method::DELETE, "/v4/users/{uB}/oauth2/sessions", None,            [401, 403, 403, 403, 403, 204, 403, 204]),
    (Method::GET, "/v4/users/fakeuser/oauth2/sessions", None,           [401, 403, 403, 403, 403, 404, 403, 404]),
    // Passkeys: the user's own (with an ordinary token), or an admin; login needs no token.
    // The registration ceremony's second half with a credential answering no challenge is 400
    // once the policy let the caller through. (A privileged owner: GUARD_CASES.)
    (Method::POST, "/v4/users/{self}/passkeys/register_start", None,   [401, 201, 201, 201, 201, 201, 201, 201]),
    (Method::POST, "/v4/users/{uM}/passkeys/register_start", None,     [401, 403, 201, 403, 403, 201, 403, 201]),
    (Method::POST, "/v4/users/{uB}/passkeys/register_start", None,     [401, 403, 403, 403, 403, 201, 403, 201]),
    (Method::POST, "/v4/users/{self}/passkeys/register_finish", Some(ATTESTATION), [401, 400, 400, 400, 400, 400, 400, 400]),
    (Method::POST, "/v4/users/{uM}/passkeys/register_finish", Some(ATTESTATION), [401, 403, 400, 403, 403, 400, 403, 400]),
    (Method::GET, "/v4/users/{self}/passkeys", None,                    [401, 200, 200, 200, 200, 200, 200, 200]),
    (Method::GET, "/v4/users/{uM}/passkeys", None,                      [401, 403, 200, 403, 403, 200, 403, 200]),
    (Method::GET, "/v4/users/{uB}/passkeys", None,                      [401, 403, 403, 403, 403, 200, 403, 200]),
    (Method::DELETE, "/v4/users/{self}/passkeys/no-such-passkey", None, [401, 404, 404, 404, 404, 404, 404, 404]),
    (Method::DELETE, "/v4/users/{uM}/passkeys/no-such-passkey", None,   [401, 403, 404, 403, 403, 404, 403, 404]),
    (Method::DELETE, "/v4/users/{uB}/passkeys/no-such-passkey", None,   [401, 403, 403, 403, 403, 404, 403, 404]),
    (Method::PATCH, "/v4/users/{self}/passkeys/no-such-passkey", Some(r#"{"passkey": {"description": "x"}}"#), [401, 404, 404, 404, 404, 404, 404, 404]),
    (Method::PATCH, "/v4/users/{uM}/passkeys/no-such-passkey", Some(r#"{"passkey": {"description": "x"}}"#), [401, 403, 404, 403, 403, 404, 403, 404]),
    (Method::PATCH, "/v4/users/{uB}/passkeys/no-such-passkey", Some(r#"{"passkey": {"description": "x"}}"#), [401, 403, 403, 403, 403, 404, 403, 404]),
    (Method::PATCH, "/v4/users/{self}/passkeys/no-such-passkey", Some(r#"{"passkey": {"description": " "}}"#), [401, 400, 400, 400, 400, 400, 400, 400]),
    (Method::POST, "/v4/auth/passkey/start", Some(r#"{"passkey": {"user_id": "{uM}"}}"#), [201, 201, 201, 201, 201, 201, 201, 201]),
    (Method::POST, "/v4/auth/passkey/finish", Some(r#"{"id": "AA", "rawId": "AA", "type": "public-key", "response": {"authenticatorData": "AA", "clientDataJSON": "e30", "signature": "AA"}}"#), [401, 401, 401, 401, 401, 401, 401, 401]),
    // OAuth2 client registry: an admin, or a manager of the client's domain; a client is
    // addressed under its domain, so another domain's path finds nothing.
    (Method::GET, "/v4/oauth2/{dA}/clients", None,                      [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::POST, "/v4/oauth2/{dA}/clients", Some(r#"{"oauth2_client": {"name": "{uniq}", "grant_types": ["client_credentials"]}}"#), [401, 403, 403, 201, 403, 201, 403, 201]),
    (Method::GET, "/v4/oauth2/{dA}/clients/{client_A}", None,           [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::PATCH, "/v4/oauth2/{dA}/clients/{client_A}", Some(r#"{"oauth2_client": {"description": "x"}}"#), [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::POST, "/v4/oauth2/{dA}/clients/{client_A}/rotate-secret", None, [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::DELETE, "/v4/oauth2/{dA}/clients/{scratch_client_A}", None, [401, 403, 403, 204, 403, 204, 403, 204]),
    (Method::GET, "/v4/oauth2/{dB}/clients", None,                      [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::POST, "/v4/oauth2/{dB}/clients", Some(r#"{"oauth2_client": {"name": "{uniq}", "grant_types": ["client_credentials"]}}"#), [401, 403, 403, 403, 201, 201, 201, 201]),
    (Method::GET, "/v4/oauth2/{dB}/clients/{client_B}", None,           [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::PATCH, "/v4/oauth2/{dB}/clients/{client_B}", Some(r#"{"oauth2_client": {"description": "x"}}"#), [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::POST, "/v4/oauth2/{dB}/clients/{client_B}/rotate-secret", None, [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::DELETE, "/v4/oauth2/{dB}/clients/{scratch_client_B}", None, [401, 403, 403, 403, 204, 204, 204, 204]),
    (Method::GET, "/v4/oauth2/{dB}/clients/{client_A}", None,           [401, 403, 403, 403, 404, 404, 404, 404]),
    (Method::PATCH, "/v4/oauth2/{dB}/clients/{client_A}", Some(r#"{"oauth2_client": {"description": "x"}}"#), [401, 403, 403, 403, 404, 404, 404, 404]),
    (Method::DELETE, "/v4/oauth2/{dB}/clients/{client_A}", None,        [401, 403, 403, 403, 404, 404, 404, 404]),
    // OAuth2 signing keys: admin only. The admin's rotation answers 409: the staged key made
    // with the domain's keys is younger than `[oauth2] key_publish_delay` (300 s), which the
    // policy lets the admin reach.
    (Method::GET, "/v4/oauth2/{dA}/keys", None,                         [401, 403, 403, 403, 403, 200, 403, 200]),
    (Method::POST, "/v4/oauth2/{dA}/keys/rotate", None,                 [401, 403, 403, 403, 403, 409, 403, 409]),
    (Method::GET, "/v4/oauth2/{dB}/keys", None,                         [401, 403, 403, 403, 403, 200, 403, 200]),
    (Method::POST, "/v4/oauth2/{dB}/keys/rotate", None,                 [401, 403, 403, 403, 403, 409, 403, 409]),
    // OAuth2 / OpenID Connect protocol endpoints: a Keystone token opens none of them (each
    // persona's is sent and ignored); clients authenticate with their own credentials, users
    // on the pages. Discovery and keys are public.
    (Method::GET, "/v4/oauth2/{dA}/.well-known/openid-configuration", None, [200, 200, 200, 200, 200, 200, 200, 200]),
    (Method::GET, "/v4/oauth2/{dA}/jwks", None,                         [200, 200, 200, 200, 200, 200, 200, 200]),
    (Method::GET, "/v4/oauth2/{dA}/jwks/revocation", None,              [200, 200, 200, 200, 200, 200, 200, 200]),
    (Method::POST, "/v4/oauth2/{dA}/token", Some("form:grant_type=client_credentials&client_id={client_A}&client_secret=wrong"), [401, 401, 401, 401, 401, 401, 401, 401]),
    (Method::POST, "/v4/oauth2/{dA}/introspect", Some("form:token=x"),  [401, 401, 401, 401, 401, 401, 401, 401]),
    (Method::POST, "/v4/oauth2/{dA}/revoke", Some("form:token=x"),      [401, 401, 401, 401, 401, 401, 401, 401]),
    (Method::GET, "/v4/oauth2/{dA}/userinfo", None,                     [401, 401, 401, 401, 401, 401, 401, 401]),
    (Method::POST, "/v4/oauth2/{dA}/userinfo", None,                    [401, 401, 401, 401, 401, 401, 401, 401]),
    (Method::GET, "/v4/oauth2/{dA}/authorize?client_id=no-such-client&response_type=code", None, [400, 400, 400, 400, 400, 400, 400, 400]),
    (Method::POST, "/v4/oauth2/{dA}/authorize/login", Some("form:request=forged&username=u&password=p"), [400, 400, 400, 400, 400, 400, 400, 400]),
    (Method::POST, "/v4/oauth2/{dA}/authorize/consent", Some("form:request=forged&decision=allow"), [400, 400, 400, 400, 400, 400, 400, 400]),
    (Method::POST, "/v4/oauth2/{dA}/authorize/passkey/start", Some("form:request=forged"), [400, 400, 400, 400, 400, 400, 400, 400]),
    (Method::POST, "/v4/oauth2/{dA}/authorize/passkey", Some("form:request=forged"), [400, 400, 400, 400, 400, 400, 400, 400]),
    (Method::POST, "/v4/oauth2/{dA}/device_authorization", Some("form:client_id=no-such-client"), [401, 401, 401, 401, 401, 401, 401, 401]),
    (Method::GET, "/v4/oauth2/{dA}/device", None,                       [200, 200, 200, 200, 200, 200, 200, 200]),
    (Method::POST, "/v4/oauth2/{dA}/device/login", Some("form:user_code=forged&username=u&password=p"), [400, 400, 400, 400, 400, 400, 400, 400]),
    (Method::POST, "/v4/oauth2/{dA}/device/consent", Some("form:request=forged&decision=allow"), [400, 400, 400, 400, 400, 400, 400, 400]),
    // Provider registries (OIDC IdPs, Kubernetes cluster issuers, SPIFFE trust domains): an
    // admin, or a manager of the provider's domain; listing every domain's, or a global
    // provider, is for admins only. Under Keystone's mode the admin of domain B passes
    // `admin_required` here for every domain's providers, but a global one is a cloud
    // administrator's alone (`guard::change_global`): global providers feed global rulesets.
    (Method::GET, "/v4/federation/identity_providers?domain_id={dA}", None, [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::POST, "/v4/federation/identity_providers", Some(r#"{"identity_provider": {"domain_id": "{dA}", "provider_id": "{uniq}", "issuer": "https://idp.example", "client_id": "c", "jwks_uri": "https://idp.example/jwks"}}"#), [401, 403, 403, 201, 403, 201, 403, 201]),
    (Method::GET, "/v4/federation/identity_providers/{idp_A}", None, [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::PATCH, "/v4/federation/identity_providers/{idp_A}", Some(r#"{"identity_provider": {"oidc_scopes": ["openid"]}}"#), [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::DELETE, "/v4/federation/identity_providers/{scratch_idp_A}", None, [401, 403, 403, 204, 403, 204, 403, 204]),
    (Method::GET, "/v4/federation/identity_providers?domain_id={dB}", None, [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::POST, "/v4/federation/identity_providers", Some(r#"{"identity_provider": {"domain_id": "{dB}", "provider_id": "{uniq}", "issuer": "https://idp.example", "client_id": "c", "jwks_uri": "https://idp.example/jwks"}}"#), [401, 403, 403, 403, 201, 201, 201, 201]),
    (Method::GET, "/v4/federation/identity_providers/{idp_B}", None, [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::PATCH, "/v4/federation/identity_providers/{idp_B}", Some(r#"{"identity_provider": {"oidc_scopes": ["openid"]}}"#), [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::DELETE, "/v4/federation/identity_providers/{scratch_idp_B}", None, [401, 403, 403, 403, 204, 204, 204, 204]),
    (Method::GET, "/v4/federation/identity_providers", None, [401, 403, 403, 403, 403, 200, 403, 200]),
    (Method::GET, "/v4/federation/identity_providers/{idp_global}", None, [401, 403, 403, 403, 403, 200, 403, 200]),
    (Method::PATCH, "/v4/federation/identity_providers/{idp_global}", Some(r#"{"identity_provider": {"oidc_scopes": ["openid"]}}"#), [401, 403, 403, 403, 403, 200, 403, 403]),
    (Method::GET, "/v4/k8s_auth/instances?domain_id={dA}", None, [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::POST, "/v4/k8s_auth/instances", Some(r#"{"instance": {"domain_id": "{dA}", "provider_id": "{uniq}", "kubernetes_host": "https://k8s.example"}}"#), [401, 403, 403, 201, 403, 201, 403, 201]),
    (Method::GET, "/v4/k8s_auth/instances/{k8s_A}", None, [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::PATCH, "/v4/k8s_auth/instances/{k8s_A}", Some(r#"{"instance": {"disable_local_ca_jwt": true}}"#), [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::DELETE, "/v4/k8s_auth/instances/{scratch_k8s_A}", None, [401, 403, 403, 204, 403, 204, 403, 204]),
    (Method::GET, "/v4/k8s_auth/instances?domain_id={dB}", None, [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::POST, "/v4/k8s_auth/instances", Some(r#"{"instance": {"domain_id": "{dB}", "provider_id": "{uniq}", "kubernetes_host": "https://k8s.example"}}"#), [401, 403, 403, 403, 201, 201, 201, 201]),
    (Method::GET, "/v4/k8s_auth/instances/{k8s_B}", None, [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::PATCH, "/v4/k8s_auth/instances/{k8s_B}", Some(r#"{"instance": {"disable_local_ca_jwt": true}}"#), [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::DELETE, "/v4/k8s_auth/instances/{scratch_k8s_B}", None, [401, 403, 403, 403, 204, 204, 204, 204]),
    (Method::GET, "/v4/k8s_auth/instances", None, [401, 403, 403, 403, 403, 200, 403, 200]),
    (Method::GET, "/v4/k8s_auth/instances/{k8s_global}", None, [401, 403, 403, 403, 403, 200, 403, 200]),
    (Method::PATCH, "/v4/k8s_auth/instances/{k8s_global}", Some(r#"{"instance": {"disable_local_ca_jwt": true}}"#), [401, 403, 403, 403, 403, 200, 403, 403]),
    (Method::GET, "/v4/spiffe/trust_domains?domain_id={dA}", None, [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::POST, "/v4/spiffe/trust_domains", Some(r#"{"trust_domain": {"domain_id": "{dA}", "provider_id": "{uniq}", "trust_domain": "example.org", "trust_bundle_pem": "{cert}"}}"#), [401, 403, 403, 201, 403, 201, 403, 201]),
    (Method::GET, "/v4/spiffe/trust_domains/{td_A}", None, [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::PATCH, "/v4/spiffe/trust_domains/{td_A}", Some(r#"{"trust_domain": {"trust_domain": "example.org"}}"#), [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::DELETE, "/v4/spiffe/trust_domains/{scratch_td_A}", None, [401, 403, 403, 204, 403, 204, 403, 204]),
    (Method::GET, "/v4/spiffe/trust_domains?domain_id={dB}", None, [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::POST, "/v4/spiffe/trust_domains", Some(r#"{"trust_domain": {"domain_id": "{dB}", "provider_id": "{uniq}", "trust_domain": "example.org", "trust_bundle_pem": "{cert}"}}"#), [401, 403, 403, 403, 201, 201, 201, 201]),
    (Method::GET, "/v4/spiffe/trust_domains/{td_B}", None, [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::PATCH, "/v4/spiffe/trust_domains/{td_B}", Some(r#"{"trust_domain": {"trust_domain": "example.org"}}"#), [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::DELETE, "/v4/spiffe/trust_domains/{scratch_td_B}", None, [401, 403, 403, 403, 204, 204, 204, 204]),
    (Method::GET, "/v4/spiffe/trust_domains", None, [401, 403, 403, 403, 403, 200, 403, 200]),
    (Method::GET, "/v4/spiffe/trust_domains/{td_global}", None, [401, 403, 403, 403, 403, 200, 403, 200]),
    (Method::PATCH, "/v4/spiffe/trust_domains/{td_global}", Some(r#"{"trust_domain": {"trust_domain": "example.org"}}"#), [401, 403, 403, 403, 403, 200, 403, 403]),
    (Method::POST, "/v4/federation/identity_providers", Some(r#"{"identity_provider": {"domain_id": null, "provider_id": "{uniq}", "issuer": "https://idp.example", "client_id": "c", "jwks_uri": "https://idp.example/jwks"}}"#), [401, 403, 403, 403, 403, 201, 403, 403]),
    (Method::DELETE, "/v4/federation/identity_providers/{scratch_idp_global}", None, [401, 403, 403, 403, 403, 204, 403, 403]),
    (Method::POST, "/v4/k8s_auth/instances", Some(r#"{"instance": {"domain_id": null, "provider_id": "{uniq}", "kubernetes_host": "https://k8s.example"}}"#), [401, 403, 403, 403, 403, 201, 403, 403]),
    (Method::DELETE, "/v4/k8s_auth/instances/{scratch_k8s_global}", None, [401, 403, 403, 403, 403, 204, 403, 403]),
    (Method::POST, "/v4/spiffe/trust_domains", Some(r#"{"trust_domain": {"domain_id": null, "provider_id": "{uniq}", "trust_domain": "example.org", "trust_bundle_pem": "{cert}"}}"#), [401, 403, 403, 403, 403, 201, 403, 403]),
    (Method::DELETE, "/v4/spiffe/trust_domains/{scratch_td_global}", None, [401, 403, 403, 403, 403, 204, 403, 403]),
    // Mapped logins: the identity the provider vouches for authenticates (no token needed or
    // used); the fixtures' providers have no ruleset, a forged state opens nothing, and the
    // redirect URI is not the provider's.
    (Method::POST, "/v4/federation/identity_providers/{idp_A}/jwt", None, [401, 401, 401, 401, 401, 401, 401, 401]),
    (Method::POST, "/v4/federation/identity_providers/{idp_A}/auth", Some(r#"{"redirect_uri": "https://elsewhere.example/cb"}"#), [400, 400, 400, 400, 400, 400, 400, 400]),
    (Method::POST, "/v4/federation/oidc/callback", Some(r#"{"state": "forged", "code": "c"}"#), [401, 401, 401, 401, 401, 401, 401, 401]),
    (Method::POST, "/v4/k8s_auth/instances/{k8s_A}/auth", Some(r#"{"jwt": "x"}"#), [404, 404, 404, 404, 404, 404, 404, 404]),
    (Method::POST, "/v4/spiffe/trust_domains/{td_A}/auth", Some(r#"{"jwt": "x"}"#), [404, 404, 404, 404, 404, 404, 404, 404]),
    // API keys: an admin, or a manager of the key's domain; the domain is always named, and a
    // key not of it is not found (after the policy, so a refused caller learns nothing).
    (Method::GET, "/v4/api-keys?domain_id={dA}", None,                  [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::POST, "/v4/api-keys", Some(r#"{"api_key": {"domain_id": "{dA}", "provider_id": "{uniq}", "expires_at": "2099-01-01T00:00:00Z"}}"#), [401, 403, 403, 201, 403, 201, 403, 201]),
    (Method::GET, "/v4/api-keys/{key_A}?domain_id={dA}", None,          [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::PUT, "/v4/api-keys/{key_A}?domain_id={dA}", Some(r#"{"api_key": {"description": "x"}}"#), [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::POST, "/v4/api-keys/{scratch_key_A}/revoke?domain_id={dA}", None, [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::POST, "/v4/api-keys/simulate-access", Some(r#"{"client_id": "{key_A}", "domain_id": "{dA}"}"#), [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::GET, "/v4/api-keys/no-such-key?domain_id={dA}", None,      [401, 403, 403, 404, 403, 404, 403, 404]),
    (Method::GET, "/v4/api-keys?domain_id={dB}", None,                  [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::POST, "/v4/api-keys", Some(r#"{"api_key": {"domain_id": "{dB}", "provider_id": "{uniq}", "expires_at": "2099-01-01T00:00:00Z"}}"#), [401, 403, 403, 403, 201, 201, 201, 201]),
    (Method::GET, "/v4/api-keys/{key_B}?domain_id={dB}", None,          [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::PUT, "/v4/api-keys/{key_B}?domain_id={dB}", Some(r#"{"api_key": {"description": "x"}}"#), [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::GET, "/v4/api-keys/{key_B}?domain_id={dA}", None,          [401, 403, 403, 404, 403, 404, 403, 404]),
    (Method::GET, "/v4/api-keys/{key_A}?domain_id={dB}", None,          [401, 403, 403, 403, 404, 404, 404, 404]),
    (Method::PUT, "/v4/api-keys/{key_A}?domain_id={dB}", Some(r#"{"api_key": {"enabled": false}}"#), [401, 403, 403, 403, 404, 404, 404, 404]),
    (Method::POST, "/v4/api-keys/{key_A}/revoke?domain_id={dB}", None,  [401, 403, 403, 403, 404, 404, 404, 404]),
    (Method::POST, "/v4/api-keys/simulate-access", Some(r#"{"client_id": "{key_A}", "domain_id": "{dB}"}"#), [401, 403, 403, 403, 404, 404, 404, 404]),
    // Token restrictions: an admin, or a manager of the restriction's domain (without a
    // `domain_id` a manager lists its own domain's). An unknown id is refused to whoever may
    // not see every domain's, so a 404 tells no manager what exists elsewhere.
    (Method::GET, "/v4/tokens/restrictions", None,                     [401, 403, 403, 200, 200, 200, 200, 200]),
    (Method::GET, "/v4/tokens/restrictions?domain_id={dA}", None,      [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::POST, "/v4/tokens/restrictions", Some(r#"{"restriction": {"domain_id": "{dA}", "allow_renew": true, "allow_rescope": false, "roles": [{"id": "{role_reader}"}]}}"#), [401, 403, 403, 201, 403, 201, 403, 201]),
    (Method::GET, "/v4/tokens/restrictions/{restriction_A}", None,     [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::PUT, "/v4/tokens/restrictions/{restriction_A}", Some(r#"{"restriction": {"allow_renew": false}}"#), [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::DELETE, "/v4/tokens/restrictions/{scratch_restriction_A}", None, [401, 403, 403, 204, 403, 204, 403, 204]),
    (Method::GET, "/v4/tokens/restrictions/no-such-restriction", None, [401, 403, 403, 403, 403, 404, 403, 404]),
    (Method::GET, "/v4/tokens/restrictions?domain_id={dB}", None,      [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::POST, "/v4/tokens/restrictions", Some(r#"{"restriction": {"domain_id": "{dB}", "allow_renew": true, "allow_rescope": false, "roles": [{"id": "{role_reader}"}]}}"#), [401, 403, 403, 403, 201, 201, 201, 201]),
    (Method::GET, "/v4/tokens/restrictions/{restriction_B}", None,     [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::PUT, "/v4/tokens/restrictions/{restriction_B}", Some(r#"{"restriction": {"allow_rescope": true}}"#), [401, 403, 403, 403, 200, 200, 200, 200]),
    // SCIM realms: an admin, or a manager of the realm's domain; `scim-a` is domain A's realm
    // (identity provider idp_A), `scim-b` domain B's. A realm is addressed under its domain:
    // another domain's path finds nothing, and a realm names only its domain's (or a global)
    // identity provider (404).
    (Method::GET, "/v4/scim-realms?domain_id={dA}", None,               [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::POST, "/v4/scim-realms", Some(r#"{"scim_realm": {"domain_id": "{dA}", "provider_id": "{uniq}", "idp_id": "{idp_A}", "display_name": "x"}}"#), [401, 403, 403, 201, 403, 201, 403, 201]),
    (Method::GET, "/v4/scim-realms/{dA}/scim-a", None,                  [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::PATCH, "/v4/scim-realms/{dA}/scim-a", Some(r#"{"scim_realm": {"enabled": true}}"#), [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::DELETE, "/v4/scim-realms/{dA}/scim-a/purge/user/no-such-user", None, [401, 403, 403, 404, 403, 404, 403, 404]),
    (Method::DELETE, "/v4/scim-realms/{dA}/no-such-realm/purge/group/x", None, [401, 403, 403, 404, 403, 404, 403, 404]),
    (Method::GET, "/v4/scim-realms?domain_id={dB}", None,               [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::POST, "/v4/scim-realms", Some(r#"{"scim_realm": {"domain_id": "{dB}", "provider_id": "{uniq}", "idp_id": "{idp_B}", "display_name": "x"}}"#), [401, 403, 403, 403, 201, 201, 201, 201]),
    (Method::POST, "/v4/scim-realms", Some(r#"{"scim_realm": {"domain_id": "{dB}", "provider_id": "{uniq}", "idp_id": "{idp_A}", "display_name": "x"}}"#), [401, 403, 403, 403, 404, 404, 404, 404]),
    (Method::GET, "/v4/scim-realms/{dB}/scim-b", None,                  [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::PATCH, "/v4/scim-realms/{dB}/scim-b", Some(r#"{"scim_realm": {"enabled": true}}"#), [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::GET, "/v4/scim-realms/{dA}/scim-b", None,                  [401, 403, 403, 404, 403, 404, 403, 404]),
    (Method::GET, "/v4/scim-realms/{dB}/scim-a", None,                  [401, 403, 403, 403, 404, 404, 404, 404]),
    (Method::PATCH, "/v4/scim-realms/{dB}/scim-a", Some(r#"{"scim_realm": {"enabled": false}}"#), [401, 403, 403, 403, 404, 404, 404, 404]),
    (Method::DELETE, "/v4/scim-realms/{dB}/scim-a/purge/user/no-such-user", None, [401, 403, 403, 403, 404, 404, 404, 404]),
    // SCIM v2: an API key (Authorization: Bearer kscim_…) is the only credential, so every
    // persona's token is 401 (the keys' own policy is tested in scim::endpoint_tests); the
    // discovery documents need none; /Bulk and /Me are not implemented.
    (Method::GET, "/SCIM/v2/{dA}/Users", None,                          [401, 401, 401, 401, 401, 401, 401, 401]),
    (Method::POST, "/SCIM/v2/{dA}/Users", Some(r#"{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "x", "externalId": "x"}"#), [401, 401, 401, 401, 401, 401, 401, 401]),
    (Method::GET, "/SCIM/v2/{dA}/Users/x", None,                        [401, 401, 401, 401, 401, 401, 401, 401]),
    (Method::PUT, "/SCIM/v2/{dA}/Users/x", Some(r#"{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "x"}"#), [401, 401, 401, 401, 401, 401, 401, 401]),
    (Method::PATCH, "/SCIM/v2/{dA}/Users/x", Some(r#"{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": []}"#), [401, 401, 401, 401, 401, 401, 401, 401]),
    (Method::DELETE, "/SCIM/v2/{dA}/Users/x", None,                     [401, 401, 401, 401, 401, 401, 401, 401]),
    (Method::GET, "/SCIM/v2/{dA}/Groups", None,                         [401, 401, 401, 401, 401, 401, 401, 401]),
    (Method::POST, "/SCIM/v2/{dA}/Groups", Some(r#"{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "x"}"#), [401, 401, 401, 401, 401, 401, 401, 401]),
    (Method::GET, "/SCIM/v2/{dA}/Groups/x", None,                       [401, 401, 401, 401, 401, 401, 401, 401]),
    (Method::PUT, "/SCIM/v2/{dA}/Groups/x", Some(r#"{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "x"}"#), [401, 401, 401, 401, 401, 401, 401, 401]),
    (Method::PATCH, "/SCIM/v2/{dA}/Groups/x", Some(r#"{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": []}"#), [401, 401, 401, 401, 401, 401, 401, 401]),
    (Method::DELETE, "/SCIM/v2/{dA}/Groups/x", None,                    [401, 401, 401, 401, 401, 401, 401, 401]),
    (Method::GET, "/SCIM/v2/{dA}/ServiceProviderConfig", None,          [200, 200, 200, 200, 200, 200, 200, 200]),
    (Method::GET, "/SCIM/v2/{dA}/Schemas", None,                        [200, 200, 200, 200, 200, 200, 200, 200]),
    (Method::GET, "/SCIM/v2/{dA}/Schemas/urn:ietf:params:scim:schemas:core:2.0:Group", None, [200, 200, 200, 200, 200, 200, 200, 200]),
    (Method::GET, "/SCIM/v2/{dA}/ResourceTypes", None,                  [200, 200, 200, 200, 200, 200, 200, 200]),
    (Method::GET, "/SCIM/v2/{dA}/ResourceTypes/User", None,             [200, 200, 200, 200, 200, 200, 200, 200]),
    (Method::POST, "/SCIM/v2/{dA}/Bulk", Some("{}"),                    [501, 501, 501, 501, 501, 501, 501, 501]),
    (Method::GET, "/SCIM/v2/{dA}/Me", None,                             [501, 501, 501, 501, 501, 501, 501, 501]),
    (Method::POST, "/SCIM/v2/{dA}/.search", Some("{}"),                 [501, 501, 501, 501, 501, 501, 501, 501]),
    // Mapping rulesets: an admin, or a manager of the ruleset's domain; global ones admin only.
    // Every write of a ruleset (create, PUT, rule mutation) then runs the two-tier checks,
    // which only a cloud administrator (never by a domain-scoped token) skips: the ruleset
    // stays in the writer's domain and grants only roles the writer holds there. So the admin
    // of domain B passes the Keystone-mode policy on domain A's ruleset, reads and deletes
    // it, but cannot write it, nor write or delete a global one (422: the claims-driven domain
    // resolution modes are an administrator's; 403: `guard::change_global`). (Privileged
    // names: GUARD_CASES.)
    (Method::GET, "/v4/mappings", None,                                 [401, 403, 403, 200, 200, 200, 200, 200]),
    (Method::POST, "/v4/mappings", Some(MAPPING_A),                     [401, 403, 403, 201, 403, 201, 403, 403]),
    (Method::GET, "/v4/mappings/{mapping_A}", None,                     [401, 403, 403, 200, 403, 200, 403, 200]),
    (Method::PUT, "/v4/mappings/{mapping_A}", Some(MAPPING_A),          [401, 403, 403, 200, 403, 200, 403, 403]),
    (Method::POST, "/v4/mappings/{mapping_A}/rules/mutate", Some(MUTATION), [401, 403, 403, 200, 403, 200, 403, 403]),
    (Method::DELETE, "/v4/mappings/{scratch_mapping_A}", None,          [401, 403, 403, 204, 403, 204, 403, 204]),
    (Method::POST, "/v4/mappings", Some(MAPPING_B),                     [401, 403, 403, 403, 201, 201, 201, 201]),
    (Method::GET, "/v4/mappings/{mapping_B}", None,                     [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::PUT, "/v4/mappings/{mapping_B}", Some(MAPPING_B),          [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::POST, "/v4/mappings/{mapping_B}/rules/mutate", Some(MUTATION), [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::DELETE, "/v4/mappings/{scratch_mapping_B}", None,          [401, 403, 403, 403, 204, 204, 204, 204]),
    // A manager of B cannot move domain A's ruleset into its own domain, nor can anyone else
    // (422: a ruleset's domain never changes).
    (Method::PUT, "/v4/mappings/{scratch_mapping_A}", Some(MAPPING_B),  [401, 403, 403, 403, 403, 422, 403, 422]),
    (Method::POST, "/v4/mappings", Some(MAPPING_GLOBAL),                [401, 403, 403, 403, 403, 201, 403, 422]),
    (Method::GET, "/v4/mappings/{mapping_global}", None,                [401, 403, 403, 403, 403, 200, 403, 200]),
    (Method::PUT, "/v4/mappings/{mapping_global}", Some(MAPPING_GLOBAL), [401, 403, 403, 403, 403, 200, 403, 422]),
    (Method::DELETE, "/v4/mappings/{scratch_mapping_global}", None,     [401, 403, 403, 403, 403, 204, 403, 403]),
    // Unified limits (keystone/common/policies/registered_limit.py, limit.py): registered
    // limits and the model are readable by anyone authenticated; limits by an admin, a system
    // reader, or a caller scoped to the limit's project or domain (a domain's sees its
    // projects'). Writes are admin_required with Keystone's scope types system and project, so
    // a domain-scoped admin is refused in both modes. `{limit_service}` has the registered
    // limit `{registered_limit}` (resource `matrix-cores`); `{limit_A}` and `{limit_B}` are
    // limits of pA and pB on it; `{scratch_limit_A}` one on a fresh project of domain A.
    (Method::GET, "/v3/registered_limits", None,                        [401, 200, 200, 200, 200, 200, 200, 200]),
    (Method::GET, "/v3/registered_limits/{registered_limit}", None,     [401, 200, 200, 200, 200, 200, 200, 200]),
    (Method::POST, "/v3/registered_limits", Some(r#"{"registered_limits": [{"service_id": "{limit_service}", "resource_name": "{uniq}", "default_limit": 5}]}"#), [401, 403, 403, 403, 403, 201, 403, 403]),
    (Method::PATCH, "/v3/registered_limits/{scratch_registered_limit}", Some(r#"{"registered_limit": {"default_limit": 7}}"#), [401, 403, 403, 403, 403, 200, 403, 403]),
    (Method::DELETE, "/v3/registered_limits/{scratch_registered_limit}", None, [401, 403, 403, 403, 403, 204, 403, 403]),
    (Method::GET, "/v3/limits/model", None,                             [401, 200, 200, 200, 200, 200, 200, 200]),
    (Method::GET, "/v3/limits", None,                                   [401, 200, 200, 200, 200, 200, 200, 200]),
    (Method::GET, "/v3/limits/{limit_A}", None,                         [401, 200, 200, 200, 403, 200, 403, 200]),
    (Method::GET, "/v3/limits/{limit_B}", None,                         [401, 403, 403, 403, 200, 200, 200, 200]),
    (Method::POST, "/v3/limits", Some(r#"{"limits": [{"service_id": "{limit_service}", "resource_name": "matrix-cores", "resource_limit": 5, "project_id": "{scratch_project_A}"}]}"#), [401, 403, 403, 403, 403, 201, 403, 403]),
    (Method::PATCH, "/v3/limits/{limit_A}", Some(r#"{"limit": {"resource_limit": 6}}"#), [401, 403, 403, 403, 403, 200, 403, 403]),
    (Method::DELETE, "/v3/limits/{scratch_limit_A}", None,              [401, 403, 403, 403, 403, 204, 403, 403]),
];

/// The guard rails on the v4 write paths, for privileged targets: the bootstrap admin
/// (`{admin_user}`, in the admin project `{admin_project}`), the group `{g_priv}` of domain A
/// (named `{g_priv_name}`), which holds `admin` on project pA, and the `admin` role. Whatever a
/// persona's policy lets it do with an ordinary target, only a cloud administrator (never by
/// way of a domain-scoped token: `policy::guard::cloud_admin`) or the user itself may give a
/// privileged user a way to sign in (passkey, credential, EC2 credential), and a ruleset may
/// name no user, group, role or identity provider outside its domain, nor a privileged one,
/// unless a cloud administrator writes it. `0`: the answer is not pinned by the guard rails
/// (a cloud administrator's ruleset naming an existing user or another domain's provider may
/// be refused or accepted) and is not checked.
#[rustfmt::skip]
const GUARD_CASES: &[Case] = &[
    //                                                                  anon rdr mbr mgrA mgrB admin admB:sys admB:any
    (Method::POST, "/v4/users/{admin_user}/passkeys/register_start", None, [401, 403, 403, 403, 403, 201, 403, 403]),
    // Renaming or removing the bootstrap admin's passkeys, ending its sessions: a cloud
    // administrator (here: the admin itself) only.
    (Method::PATCH, "/v4/users/{admin_user}/passkeys/no-such-passkey", Some(r#"{"passkey": {"description": "x"}}"#), [401, 403, 403, 403, 403, 404, 403, 403]),
    (Method::DELETE, "/v4/users/{admin_user}/passkeys/no-such-passkey", None, [401, 403, 403, 403, 403, 404, 403, 403]),
    (Method::DELETE, "/v4/users/{admin_user}/oauth2/sessions/no-such-session", None, [401, 403, 403, 403, 403, 404, 403, 403]),
    (Method::DELETE, "/v4/users/{admin_user}/oauth2/sessions", None,    [401, 403, 403, 403, 403, 204, 403, 403]),
    (Method::POST, "/v3/credentials", Some(r#"{"credential": {"type": "totp", "blob": "{uniq}", "user_id": "{admin_user}"}}"#), [401, 403, 403, 403, 403, 201, 403, 403]),
    (Method::POST, "/v3/users/{admin_user}/credentials/OS-EC2", Some(r#"{"tenant_id": "{admin_project}"}"#), [401, 403, 403, 403, 403, 201, 403, 403]),
    // Token restrictions naming `admin`: the cloud administrators' own, in any domain.
    (Method::POST, "/v4/tokens/restrictions", Some(r#"{"restriction": {"domain_id": "{dA}", "allow_renew": true, "allow_rescope": false, "roles": [{"id": "{role_admin}"}]}}"#), [401, 403, 403, 403, 403, 201, 403, 403]),
    (Method::POST, "/v4/tokens/restrictions", Some(r#"{"restriction": {"domain_id": "{dB}", "allow_renew": true, "allow_rescope": false, "roles": [{"id": "{role_admin}"}]}}"#), [401, 403, 403, 403, 403, 201, 403, 403]),
    (Method::PUT, "/v4/tokens/restrictions/{restriction_B}", Some(r#"{"restriction": {"roles": [{"id": "{role_admin}"}]}}"#), [401, 403, 403, 403, 403, 200, 403, 403]),
    // Rulesets of domain A: the admin as the local identity (created, PUT, or mutated in),
    // another domain's ordinary user, the admin role, the privileged group by id and by name,
    // domain B's and a global identity provider as the source.
    (Method::POST, "/v4/mappings", Some(r#"{"mapping": {"domain_id": "{dA}", "provider_id": "p", "source": {"type": "federation", "idp_id": "{idp_A}"}, "rules": [{"name": "r", "match": {"all_of": []}, "identity": {"identity_mode": "local", "user_name": "admin", "user_id": "{admin_user}"}}]}}"#), [401, 403, 403, 403, 403, 0, 403, 403]),
    (Method::PUT, "/v4/mappings/{mapping_A}", Some(r#"{"mapping": {"domain_id": "{dA}", "provider_id": "p", "source": {"type": "federation", "idp_id": "{idp_A}"}, "rules": [{"name": "r", "match": {"all_of": []}, "identity": {"identity_mode": "local", "user_name": "admin", "user_id": "{admin_user}"}}]}}"#), [401, 403, 403, 403, 403, 0, 403, 403]),
    (Method::POST, "/v4/mappings/{mapping_A}/rules/mutate", Some(r#"{"mutations": [{"operation": "insert", "rule": {"name": "{uniq}", "match": {"all_of": []}, "identity": {"identity_mode": "local", "user_name": "admin", "user_id": "{admin_user}"}}}]}"#), [401, 403, 403, 403, 403, 0, 403, 403]),
    (Method::POST, "/v4/mappings", Some(r#"{"mapping": {"domain_id": "{dA}", "provider_id": "p", "source": {"type": "federation", "idp_id": "{idp_A}"}, "rules": [{"name": "r", "match": {"all_of": []}, "identity": {"identity_mode": "local", "user_name": "b", "user_id": "{uB}"}}]}}"#), [401, 403, 403, 403, 403, 0, 403, 403]),
    (Method::POST, "/v4/mappings", Some(r#"{"mapping": {"domain_id": "{dA}", "provider_id": "p", "source": {"type": "federation", "idp_id": "{idp_A}"}, "rules": [{"name": "r", "match": {"all_of": []}, "identity": {"user_name": "u"}, "authorizations": [{"type": "domain", "domain_id": "{dA}", "roles": [{"id": "{role_admin}"}]}]}]}}"#), [401, 403, 403, 403, 403, 201, 403, 403]),
    (Method::POST, "/v4/mappings", Some(r#"{"mapping": {"domain_id": "{dA}", "provider_id": "p", "source": {"type": "federation", "idp_id": "{idp_A}"}, "rules": [{"name": "r", "match": {"all_of": []}, "identity": {"user_name": "u"}, "groups": [{"group_id": "{g_priv}", "group_name": "{g_priv_name}"}]}]}}"#), [401, 403, 403, 403, 403, 201, 403, 403]),
    (Method::POST, "/v4/mappings", Some(r#"{"mapping": {"domain_id": "{dA}", "provider_id": "p", "source": {"type": "federation", "idp_id": "{idp_A}"}, "rules": [{"name": "r", "match": {"all_of": []}, "identity": {"user_name": "u"}, "groups": [{"group_name": "{g_priv_name}", "group_domain_id": "{dA}", "strategy": "get"}]}]}}"#), [401, 403, 403, 403, 403, 201, 403, 403]),
    (Method::POST, "/v4/mappings", Some(r#"{"mapping": {"domain_id": "{dA}", "provider_id": "p", "source": {"type": "federation", "idp_id": "{idp_B}"}, "rules": [{"name": "r", "match": {"all_of": []}, "identity": {"user_name": "u"}}]}}"#), [401, 403, 403, 403, 403, 0, 403, 403]),
    (Method::POST, "/v4/mappings", Some(r#"{"mapping": {"domain_id": "{dA}", "provider_id": "p", "source": {"type": "federation", "idp_id": "{idp_global}"}, "rules": [{"name": "r", "match": {"all_of": []}, "identity": {"user_name": "u"}}]}}"#), [401, 403, 403, 403, 403, 201, 403, 403]),
    // Rulesets of domain B, which its manager and its admin may write: the admin as the local
    // identity, `admin` on domain B (which its admin holds, but may not hand out: the v3
    // grant guard refuses it the same), domain A's identity provider as the source.
    (Method::POST, "/v4/mappings", Some(r#"{"mapping": {"domain_id": "{dB}", "provider_id": "p", "source": {"type": "federation", "idp_id": "{idp_B}"}, "rules": [{"name": "r", "match": {"all_of": []}, "identity": {"identity_mode": "local", "user_name": "admin", "user_id": "{admin_user}"}}]}}"#), [401, 403, 403, 403, 403, 0, 403, 403]),
    (Method::POST, "/v4/mappings", Some(r#"{"mapping": {"domain_id": "{dB}", "provider_id": "p", "source": {"type": "federation", "idp_id": "{idp_B}"}, "rules": [{"name": "r", "match": {"all_of": []}, "identity": {"user_name": "u"}, "authorizations": [{"type": "domain", "domain_id": "{dB}", "roles": [{"id": "{role_admin}"}]}]}]}}"#), [401, 403, 403, 403, 403, 201, 403, 403]),
    (Method::POST, "/v4/mappings", Some(r#"{"mapping": {"domain_id": "{dB}", "provider_id": "p", "source": {"type": "federation", "idp_id": "{idp_A}"}, "rules": [{"name": "r", "match": {"all_of": []}, "identity": {"user_name": "u"}}]}}"#), [401, 403, 403, 403, 403, 0, 403, 403]),
];

/// A ruleset of domain A (source: domain A's identity provider) granting `reader` there,
/// which its manager holds.
const MAPPING_A: &str = r#"{"mapping": {"domain_id": "{dA}", "provider_id": "p", "source": {"type": "federation", "idp_id": "{idp_A}"}, "rules": [{"name": "r", "match": {"all_of": []}, "identity": {"user_name": "u"}, "authorizations": [{"type": "domain", "domain_id": "{dA}", "roles": [{"id": "{role_reader}"}]}]}]}}"#;
/// The same for domain B.
const MAPPING_B: &str = r#"{"mapping": {"domain_id": "{dB}", "provider_id": "p", "source": {"type": "federation", "idp_id": "{idp_B}"}, "rules": [{"name": "r", "match": {"all_of": []}, "identity": {"user_name": "u"}, "authorizations": [{"type": "domain", "domain_id": "{dB}", "roles": [{"id": "{role_reader}"}]}]}]}}"#;
/// A global ruleset (the domain comes from the claims), fed by the global identity provider.
const MAPPING_GLOBAL: &str = r#"{"mapping": {"provider_id": "p", "source": {"type": "federation", "idp_id": "{idp_global}"}, "domain_resolution_mode": "claims_only", "allowed_domains": ["{dA}"], "rules": [{"name": "r", "match": {"all_of": []}, "identity": {"user_name": "u", "user_domain_id": "${claims.d}"}}]}}"#;
/// One ordinary rule added to a ruleset.
const MUTATION: &str = r#"{"mutations": [{"operation": "insert", "rule": {"name": "{uniq}", "match": {"all_of": []}, "identity": {"user_name": "u"}}}]}"#;
/// A new credential answering no challenge the node issued.
const ATTESTATION: &str = r#"{"id": "AA", "rawId": "AA", "type": "public-key", "response": {"attestationObject": "AA", "clientDataJSON": "e30"}}"#;

pub(super) fn fill(template: &str, vars: &HashMap<String, String>) -> String {
    vars.iter().fold(template.to_string(), |t, (k, v)| t.replace(&format!("{{{k}}}"), v))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_matrix_strict_admin_scope() {
    run_matrix("system", CASES).await;
}

/// Keystone's `admin_required` (`role:admin` on any scope): an admin of an ordinary project is
/// a cloud administrator, as tempest and every OpenStack deployment expect; an admin of a
/// domain passes the policy as one too, but not the guard rails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_matrix_keystone_admin_scope() {
    run_matrix("any", CASES).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_matrix_guard_rails_strict() {
    run_matrix("system", GUARD_CASES).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_matrix_guard_rails_keystone() {
    run_matrix("any", GUARD_CASES).await;
}

/// One caller of the matrix: its token (none: anonymous), the user `{self}` names, and the
/// column of the table that holds its expected answers.
struct Caller {
    name: &'static str,
    token: Option<String>,
    user: String,
    column: usize,
}

/// One request with a JSON body, or a form body (`form:` prefix), from the fixed client address
/// the test node's other calls use.
pub(super) async fn send(t: &TestNode, method: Method, path: &str, token: Option<&str>, body: Option<String>) -> Reply {
    let Some(form) = body.as_deref().and_then(|b| b.strip_prefix("form:")) else {
        let body = body.map(|b| serde_json::from_str(&b).unwrap_or_else(|e| panic!("{path}: body {b}: {e}")));
        return t.call(method, path, token, body).await;
    };
    let headers: Vec<(&str, &str)> = token.map(|t| ("x-auth-token", t)).into_iter().collect();
    send_content(&t.router, method, path, &headers, Some(("application/x-www-form-urlencoded", form.to_string()))).await
}

async fn run_matrix(admin_scope: &str, cases: &[Case]) {
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
    let u_bm = t.create("/v3/users", "user", user("manager-b", &d_b)).await;
    let u_ob = t.create("/v3/users", "user", user("admin-b", &d_b)).await;
    let u_b = t.create("/v3/users", "user", user("user-b", &d_b)).await;
    let role = |name: &str| t.node.engine.read().id_by_name(ns::ROLE_NAME, "", name).unwrap().unwrap();
    let (role_admin, role_manager, role_member, role_reader) =
        (role("admin"), role("manager"), role("member"), role("reader"));
    for (u, target, r) in [
        (&u_r, format!("projects/{p_a}"), &role_reader),
        (&u_m, format!("projects/{p_a}"), &role_member),
        (&u_dm, format!("domains/{d_a}"), &role_manager),
        (&u_bm, format!("domains/{d_b}"), &role_manager),
        (&u_ob, format!("domains/{d_b}"), &role_admin),
        (&u_ob, format!("projects/{p_b}"), &role_admin),
    ] {
        let r = t.call(Method::PUT, &format!("/v3/{target}/users/{u}/roles/{r}"), Some(admin), None).await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "grant: {}", r.body);
    }
    let g_a = t.create("/v3/groups", "group", json!({"name": "ga", "domain_id": d_a})).await;
    let g_b = t.create("/v3/groups", "group", json!({"name": "gb", "domain_id": d_b})).await;
    // A privileged group of domain A: it holds admin on pA.
    let g_priv = t.create("/v3/groups", "group", json!({"name": "g-priv", "domain_id": d_a})).await;
    let grant = format!("/v3/projects/{p_a}/groups/{g_priv}/roles/{role_admin}");
    assert_eq!(t.call(Method::PUT, &grant, Some(admin), None).await.status, StatusCode::NO_CONTENT);
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
    let domains = [("A", json!(d_a)), ("B", json!(d_b)), ("global", Value::Null)];
    let provider = |path: &'static str, envelope: &'static str, fields: &Value, domain: Value, handle: String| {
        let mut body = fields.clone();
        body["domain_id"] = domain;
        body["provider_id"] = json!(handle);
        let t = &t;
        async move { t.create(path, envelope, body).await }
    };
    let mut fixtures: Vec<(String, String)> = Vec::new();
    for (prefix, path, envelope, fields) in &registries {
        for (suffix, domain) in &domains {
            let id = provider(path, envelope, fields, domain.clone(), format!("fixture-{suffix}")).await;
            fixtures.push((format!("{prefix}_{suffix}"), id));
        }
    }
    let base: HashMap<String, String> = fixtures
        .iter()
        .cloned()
        .chain([("dA".into(), d_a.clone()), ("dB".into(), d_b.clone()), ("role_reader".into(), role_reader.clone())])
        .collect();
    // A ruleset made by the admin from one of the templates.
    let mapping = |template: &'static str| {
        let t = &t;
        let body = fill(template, &base);
        async move {
            let r = t.admin(Method::POST, "/v4/mappings", Some(serde_json::from_str(&body).unwrap())).await;
            assert_eq!(r.status, StatusCode::CREATED, "mapping: {}", r.body);
            r.body["mapping"]["mapping_id"].as_str().unwrap().to_string()
        }
    };
    let api_key = |domain: &str| {
        let t = &t;
        let body =
            json!({"api_key": {"domain_id": domain, "provider_id": "matrix", "expires_at": "2099-01-01T00:00:00Z"}});
        async move {
            let r = t.admin(Method::POST, "/v4/api-keys", Some(body)).await;
            assert_eq!(r.status, StatusCode::CREATED, "API key: {}", r.body);
            r.body["api_key"]["client_id"].as_str().unwrap().to_string()
        }
    };
    let restriction = |domain: &str| {
        let t = &t;
        let body = json!({"restriction": {"domain_id": domain, "allow_renew": true, "allow_rescope": true,
                                          "roles": [{"id": role_reader}]}});
        async move {
            let r = t.admin(Method::POST, "/v4/tokens/restrictions", Some(body)).await;
            assert_eq!(r.status, StatusCode::CREATED, "token restriction: {}", r.body);
            r.body["restriction"]["id"].as_str().unwrap().to_string()
        }
    };
    // Unified limits: a service with the registered limit `matrix-cores`, and limits on it.
    let limit_service = t.create("/v3/services", "service", json!({"type": "matrix-limits"})).await;
    let registered_limit = |resource: String| {
        let (t, service) = (&t, &limit_service);
        async move {
            let body =
                json!({"registered_limits": [{"service_id": service, "resource_name": resource, "default_limit": 10}]});
            let r = t.admin(Method::POST, "/v3/registered_limits", Some(body)).await;
            assert_eq!(r.status, StatusCode::CREATED, "registered limit: {}", r.body);
            r.body["registered_limits"][0]["id"].as_str().unwrap().to_string()
        }
    };
    let project_limit = |project: &str| {
        let (t, service) = (&t, &limit_service);
        let body = json!({"limits": [{"service_id": service, "resource_name": "matrix-cores", "resource_limit": 5,
                                      "project_id": project}]});
        async move {
            let r = t.admin(Method::POST, "/v3/limits", Some(body)).await;
            assert_eq!(r.status, StatusCode::CREATED, "limit: {}", r.body);
            r.body["limits"][0]["id"].as_str().unwrap().to_string()
        }
    };
    for (domain, handle, idp) in [(&d_a, "scim-a", &base["idp_A"]), (&d_b, "scim-b", &base["idp_B"])] {
        let realm =
            json!({"scim_realm": {"domain_id": domain, "provider_id": handle, "idp_id": idp, "display_name": handle}});
        let r = t.admin(Method::POST, "/v4/scim-realms", Some(realm)).await;
        assert_eq!(r.status, StatusCode::CREATED, "SCIM realm: {}", r.body);
    }
    let cred_m = t.create("/v3/credentials", "credential", json!({"type": "totp", "blob": "m", "user_id": u_m})).await;
    // OS-ENDPOINT-POLICY: a policy, a service and its endpoint in a region.
    let policy = t.create("/v3/policies", "policy", json!({"blob": "{}", "type": "t"})).await;
    let service = t.create("/v3/services", "service", json!({"type": "matrix-ep-policy"})).await;
    let region = t.create("/v3/regions", "region", json!({"id": "matrix-region"})).await;
    let endpoint_fields = json!({"service_id": service, "interface": "public", "url": "http://x", "region_id": region});
    let endpoint = t.create("/v3/endpoints", "endpoint", endpoint_fields).await;

    let mut vars = base.clone();
    vars.extend([
        ("pA".into(), p_a.clone()),
        ("pB".into(), p_b.clone()),
        ("uM".into(), u_m.clone()),
        ("uB".into(), u_b.clone()),
        ("gA".into(), g_a.clone()),
        ("gB".into(), g_b.clone()),
        ("g_priv".into(), g_priv.clone()),
        ("g_priv_name".into(), "g-priv".into()),
        ("rX".into(), r_x.clone()),
        ("role_admin".into(), role_admin.clone()),
        ("role_member".into(), role_member.clone()),
        ("cred_M".into(), cred_m.clone()),
        ("client_A".into(), client_a.clone()),
        ("client_B".into(), client_b.clone()),
        ("cert".into(), cert.clone()),
        ("mapping_A".into(), mapping(MAPPING_A).await),
        ("mapping_B".into(), mapping(MAPPING_B).await),
        ("mapping_global".into(), mapping(MAPPING_GLOBAL).await),
        ("key_A".into(), api_key(&d_a).await),
        ("key_B".into(), api_key(&d_b).await),
        ("restriction_A".into(), restriction(&d_a).await),
        ("restriction_B".into(), restriction(&d_b).await),
        ("limit_service".into(), limit_service.clone()),
        ("registered_limit".into(), registered_limit("matrix-cores".to_string()).await),
        ("limit_A".into(), project_limit(&p_a).await),
        ("limit_B".into(), project_limit(&p_b).await),
        ("admin_user".into(), info.admin_user_id.clone()),
        ("admin_project".into(), info.admin_project_id.clone()),
        ("policy".into(), policy),
        ("service".into(), service),
        ("region".into(), region),
        ("endpoint".into(), endpoint),
    ]);

    let on_pa = json!({"project": {"id": p_a}});
    let on_db = json!({"domain": {"id": d_b}});
    let member_token = t.token_for_id(&u_m, PASSWORD, on_pa.clone()).await;
    let caller =
        |name, token: Option<String>, user: &String, column| Caller { name, token, user: user.clone(), column };
    let mut callers = vec![
        caller("anonymous", None, &u_m, 0),
        caller("reader", Some(t.token_for_id(&u_r, PASSWORD, on_pa.clone()).await), &u_r, 1),
        caller("member", Some(member_token.clone()), &u_m, 2),
        caller("manager A", Some(t.token_for_id(&u_dm, PASSWORD, json!({"domain": {"id": d_a}})).await), &u_dm, 3),
        caller("manager B", Some(t.token_for_id(&u_bm, PASSWORD, on_db.clone()).await), &u_bm, 4),
        caller("admin", Some(admin_token.clone()), &info.admin_user_id, 5),
    ];
    let admin_b = t.token_for_id(&u_ob, PASSWORD, on_db.clone()).await;
    if strict {
        callers.push(caller("admin B (domain-scoped)", Some(admin_b), &u_ob, 6));
    } else {
        callers.push(caller("admin B (domain-scoped)", Some(admin_b), &u_ob, 7));
        // An admin of an ordinary project is a cloud administrator in Keystone's mode.
        let on_pb = json!({"project": {"id": p_b}});
        callers.push(caller("admin B (on pB)", Some(t.token_for_id(&u_ob, PASSWORD, on_pb).await), &u_ob, 5));
    }
    vars.insert("member_token".into(), member_token.clone());

    let mut failures = Vec::new();
    let mut n = 0;
    for (method, path, body, expected) in cases {
        for c in &callers {
            let expected = expected[c.column];
            n += 1;
            let mut vars = vars.clone();
            vars.insert("self".into(), c.user.clone());
            vars.insert("self_token".into(), c.token.clone().unwrap_or_else(|| member_token.clone()));
            vars.insert("uniq".into(), format!("case-{n}"));

            let text = format!("{path} {}", body.unwrap_or(""));
            let wants = |placeholder: &str| text.contains(&format!("{{{placeholder}}}"));
            for (prefix, path, envelope, fields) in &registries {
                for (suffix, domain) in &domains {
                    let placeholder = format!("scratch_{prefix}_{suffix}");
                    if wants(&placeholder) {
                        let id = provider(path, envelope, fields, domain.clone(), format!("scratch-{n}")).await;
                        vars.insert(placeholder, id);
                    }
                }
            }
            if wants("scratch_project_A") {
                let id = t.create("/v3/projects", "project", json!({"name": format!("s{n}"), "domain_id": d_a}));
                vars.insert("scratch_project_A".into(), id.await);
            }
            if wants("scratch_user_A") {
                let id = t.create("/v3/users", "user", json!({"name": format!("s{n}"), "domain_id": d_a}));
                vars.insert("scratch_user_A".into(), id.await);
            }
            if wants("scratch_domain") {
                let id = t.create("/v3/domains", "domain", json!({"name": format!("s{n}"), "enabled": false}));
                vars.insert("scratch_domain".into(), id.await);
            }
            if wants("scratch_group_A") {
                let id = t.create("/v3/groups", "group", json!({"name": format!("s{n}"), "domain_id": d_a}));
                vars.insert("scratch_group_A".into(), id.await);
            }
            if wants("scratch_role") {
                let id = t.create("/v3/roles", "role", json!({"name": format!("s{n}")})).await;
                vars.insert("scratch_role".into(), id);
            }
            if wants("scratch_service") {
                let id = t.create("/v3/services", "service", json!({"type": format!("s{n}")}));
                vars.insert("scratch_service".into(), id.await);
            }
            for (placeholder, domain) in [("scratch_client_A", &d_a), ("scratch_client_B", &d_b)] {
                if wants(placeholder) {
                    vars.insert(placeholder.into(), oauth2_client(domain).await);
                }
            }
            for (placeholder, template) in [
                ("scratch_mapping_A", MAPPING_A),
                ("scratch_mapping_B", MAPPING_B),
                ("scratch_mapping_global", MAPPING_GLOBAL),
            ] {
                if wants(placeholder) {
                    vars.insert(placeholder.into(), mapping(template).await);
                }
            }
            if wants("scratch_key_A") {
                vars.insert("scratch_key_A".into(), api_key(&d_a).await);
            }
            if wants("scratch_restriction_A") {
                vars.insert("scratch_restriction_A".into(), restriction(&d_a).await);
            }
            if wants("scratch_registered_limit") {
                vars.insert("scratch_registered_limit".into(), registered_limit(format!("scratch-{n}")).await);
            }
            if wants("scratch_limit_A") {
                let p = t.create("/v3/projects", "project", json!({"name": format!("l{n}"), "domain_id": d_a})).await;
                vars.insert("scratch_limit_A".into(), project_limit(&p).await);
            }
            if wants("granted_user_A") {
                let id = t.create("/v3/users", "user", json!({"name": format!("g{n}"), "domain_id": d_a})).await;
                let grant = format!("/v3/projects/{p_a}/users/{id}/roles/{role_member}");
                assert_eq!(t.call(Method::PUT, &grant, Some(admin), None).await.status, StatusCode::NO_CONTENT);
                vars.insert("granted_user_A".into(), id);
            }
            if wants("scratch_token") {
                vars.insert("scratch_token".into(), t.token_for_id(&u_m, PASSWORD, on_pa.clone()).await);
            }
            let r =
                send(&t, method.clone(), &fill(path, &vars), c.token.as_deref(), body.map(|b| fill(b, &vars))).await;
            // 0: not pinned (see GUARD_CASES).
            if expected != 0 && r.status.as_u16() != expected {
                let persona = c.name;
                failures.push(format!("{method} {path} as {persona}: {} (expected {expected}) {}", r.status, r.text));
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
