//! The black-box integration tests of `idnode`, in one test binary: real `idnode serve`
//! processes (the binary built from this package) on loopback, each with its own data dir,
//! driven only over HTTP and the `idnode cluster …` CLI through the harness in [`support`].
//!
//! * `account_page`: the account page (issue 55) in headless Chromium on a 3-node cluster: password
//!   and passkey sign-in, passkeys, password rules, consents, sessions, application credentials;
//! * `backup_restore`: a backup taken under writes restores every acknowledged write into a new
//!   cluster;
//! * `blackbox_cluster`: acknowledged creates survive a SIGKILL of the leader;
//! * `catalog_credentials`: catalog, credentials, EC2 signatures and signed-request tokens
//!   (botocore signs the requests, see `sig_client.py` next to this file);
//! * `container`: the image built from Debian's packages runs `cluster-examples/three-node`
//!   under Docker Compose, passes the OpenStack smoke session and survives a killed container;
//! * `deb_package`: the Debian package installed with `dpkg -i` in a Debian container with
//!   systemd: the service it starts passes the smoke session, `dpkg --purge` removes it;
//! * `cluster_membership`: a node joins as a learner, is promoted and removed;
//! * `escalation`: no delegated administrator climbs to cloud admin, in both policy modes;
//! * `failover`: a write through a follower during an election reaches the new leader at once;
//! * `fault_snapshot`: the bug report's fault run (SIGKILL/SIGSTOP under a create stream,
//!   snapshot installs) ends with identical replicas;
//! * `horizon`: the OpenStack dashboard (Horizon 27) in headless Chromium against a 3-node
//!   cluster: sign-in, project switch, the Identity panels, sign-out, each checked on every member;
//! * `key_rotation`: token, data and wrapping keys rotate online (SIGKILL mid-way included);
//! * `keystone_import`: a real Keystone 30, populated through python-openstackclient, moves onto
//!   a 3-node cluster with `idnode import keystone`: ids, passwords, tokens and secrets intact;
//! * `kek_startup`: members of a multi-node cluster refuse to start without a KEK;
//! * `mapping_cli`: `idnode mapping test` evaluates a ruleset offline, exit code by outcome;
//! * `kubernetes`: the Kubernetes example's manifests validate strictly (kubernetes-validate),
//!   and a node in a pod's environment ignores the Service link variables;
//! * `monitoring`: the example's alert rules under `promtool check rules` and `promtool test
//!   rules` on series scraped from a real cluster with a killed member; the dashboard's series;
//! * `oauth2_clients`: the OAuth2/OIDC provider judged by authlib, PyJWT and headless Chromium;
//! * `oauth2_cluster`: OAuth2 flows across a 3-node cluster (pages, code, refresh, revocation
//!   and key rotation on different nodes), over HTTP only;
//! * `openapi`: the served OpenAPI description validates, Swagger UI is self-contained;
//! * `openfga_cluster`: the OpenFGA assignment driver on three nodes, judged by
//!   python-openstackclient and the smoke session (OpenFGA's engine behind a test server);
//! * `oslo_limit`: unified limits judged by oslo.limit's Enforcer (the quota library Nova uses),
//!   in both enforcement models;
//! * `openstack_smoke`: python-openstackclient's smoke session against one node and a cluster;
//! * `operator_cli`: `idnode cluster status --all`, `move-leader`, `check` and the exit codes
//!   through the ops listeners of a real 3-node cluster;
//! * `peer_flood`: 2,000 strangers with forged headers and slow bodies on one member's peer
//!   port do not stop token validation or writes anywhere, nor grow the member's memory;
//! * `plaintext_audit`: no secret or identity string is stored in plaintext;
//! * `provider_limits`: a per-provider rate limit is the cluster's figure even when every
//!   request reaches one follower (leases from the leader), and no more over all members;
//! * `request_logs`: request ids on answers and in every log line of a request, across
//!   members; JSON logs; no secret in any line;
//! * `s3tokens`: Swift's s3api and s3token middleware authenticate botocore-signed S3
//!   requests through `/v3/s3tokens` (see `s3token_judge.py` next to this file);
//! * `scim_clients`: SCIM v2 judged by scim2-tester and by scim2-client provisioning a directory
//!   through a follower of a 3-node cluster;
//! * `snapshot_consistency`: a follower that caught up by snapshot answers like the others;
//! * `stale_reads`: a node that was stopped never validates a token revoked meanwhile;
//! * `tempest`: the OpenStack identity conformance suites (tempest and keystone-tempest-plugin);
//! * `tls`: mutual TLS between members (only members admitted), HTTPS on the public and ops
//!   listeners, the operator commands with `--cacert`;
//! * `token_cluster`: tokens validate everywhere, revocation is immediate.
//! * `traces`: OTLP traces judged by a receiver on opentelemetry-proto: a sampled request's
//!   tree across members (policy, raft, the OpenFGA store, a JWKS fetch), nothing unsampled;
//! * `totp_mfa`: TOTP and multi-factor rules with auth receipts, judged by keystoneauth1 and
//!   python-openstackclient (`totp_client.py`).
//!
//! Run one module with e.g. `cargo test --test it token_cluster::`.

mod support;

mod account_page;

mod backup_restore;
mod blackbox_cluster;
mod catalog_credentials;
mod cluster_membership;
mod container;
mod deb_package;
mod escalation;
mod failover;
mod fault_snapshot;
mod horizon;
mod jepsen;
mod kek_startup;
mod key_rotation;
mod keystone_hashes;
mod keystone_import;
mod keystone_tokens;
mod kubernetes;
mod mapping_cli;
mod monitoring;
mod oauth2_clients;
mod oauth2_cluster;
mod openapi;
mod openfga_cluster;
mod openstack_smoke;
mod operator_cli;
mod oslo_limit;
mod peer_flood;
mod plaintext_audit;
mod provider_limits;
mod request_logs;
mod s3tokens;
mod scim_clients;
mod snapshot_consistency;
mod stale_reads;
mod tempest;
mod tls;
mod token_cluster;
mod totp_mfa;
mod traces;
