//! Findings of the v4 review on authenticators: a passkey or credential registered on a
//! privileged user by someone other than a cloud administrator or the user.
//!
//! An admin of another domain, with a domain-scoped token (a cloud administrator for policy in
//! Keystone's mode), tries to give the bootstrap admin and a service user a passkey, a
//! `/v3/credentials` record and an EC2 credential: each is refused, the admin still logs in
//! with its password and holds no passkey or credential; the user itself and a cloud
//! administrator still register theirs.

use reqwest::Method as M;
use serde_json::{json, Value};

use super::{refused, Api};
use crate::support::Cluster;

async fn authenticators_are_guarded(mode: &str) {
    let cluster = Cluster::start_with_env(1, &[("IDNODE_POLICY_ADMIN_SCOPE", mode)]).await;
    let api = Api { http: &cluster.http, base: cluster.api(0) };
    let admin = cluster.admin_token(0).await;
    let pw = cluster.admin_password.clone();
    let admin_id = api.id_of("/v3/users", "users", "admin", &admin).await;
    let admin_project = api.id_of("/v3/projects", "projects", "admin", &admin).await;
    let admin_role = api.id_of("/v3/roles", "roles", "admin", &admin).await;
    let service = api.id_of("/v3/roles", "roles", "service", &admin).await;

    // A service user, privileged like the admin.
    let svc = api
        .create("/v3/users", "user", json!({"name": "svc", "domain_id": "default", "password": "svc-pw-1"}), &admin)
        .await;
    let service_project =
        api.create("/v3/projects", "project", json!({"name": "service", "domain_id": "default"}), &admin).await;
    api.ok(M::PUT, &format!("/v3/projects/{service_project}/users/{svc}/roles/{service}"), &admin, None).await;

    // The admin of another domain.
    let d2 = api.create("/v3/domains", "domain", json!({"name": format!("d2-{mode}")}), &admin).await;
    let da =
        api.create("/v3/users", "user", json!({"name": "da", "domain_id": d2, "password": "da-pw-1"}), &admin).await;
    api.ok(M::PUT, &format!("/v3/domains/{d2}/users/{da}/roles/{admin_role}"), &admin, None).await;
    let da_token = api.token(&da, "da-pw-1", json!({"domain": {"id": d2}})).await;

    for (victim, project) in [(&admin_id, &admin_project), (&svc, &service_project)] {
        let r = api.call(M::POST, &format!("/v4/users/{victim}/passkeys/register_start"), &da_token, None).await;
        refused(&r, &format!("[{mode}] passkey register_start on {victim}"));
        let blob = json!({"access": format!("da-{victim}"), "secret": "known-to-da"}).to_string();
        let body = json!({"credential": {"type": "ec2", "user_id": victim, "project_id": project, "blob": blob}});
        let r = api.call(M::POST, "/v3/credentials", &da_token, Some(body)).await;
        refused(&r, &format!("[{mode}] /v3/credentials for {victim}"));
        let body = json!({"tenant_id": project, "access": format!("da2-{victim}"), "secret": "known-to-da"});
        let r = api.call(M::POST, &format!("/v3/users/{victim}/credentials/OS-EC2"), &da_token, Some(body)).await;
        refused(&r, &format!("[{mode}] OS-EC2 credential for {victim}"));
    }

    // Nothing was written: the admin logs in with its password and holds nothing.
    let again = api.token(&admin_id, &pw, json!({"project": {"id": admin_project}})).await;
    for victim in [&admin_id, &svc] {
        let passkeys = api.get(&format!("/v4/users/{victim}/passkeys"), &again).await;
        assert_eq!(passkeys.json["passkeys"], json!([]), "[{mode}] {}", passkeys.text);
        let creds = api.get(&format!("/v3/credentials?user_id={victim}"), &again).await;
        assert_eq!(creds.json["credentials"], json!([]), "[{mode}] {}", creds.text);
        let ec2 = api.get(&format!("/v3/users/{victim}/credentials/OS-EC2"), &again).await;
        assert_eq!(ec2.json["credentials"], json!([]), "[{mode}] {}", ec2.text);
    }

    // The user itself registers its own, and a cloud administrator one for the service user.
    let started = api.ok(M::POST, &format!("/v4/users/{admin_id}/passkeys/register_start"), &again, None).await;
    assert!(started["publicKey"].is_object(), "[{mode}] {started}");
    api.ok(
        M::POST,
        &format!("/v3/users/{admin_id}/credentials/OS-EC2"),
        &again,
        Some(json!({"tenant_id": admin_project})),
    )
    .await;
    api.ok(
        M::POST,
        &format!("/v3/users/{svc}/credentials/OS-EC2"),
        &again,
        Some(json!({"tenant_id": service_project})),
    )
    .await;
    let svc_token = api.token(&svc, "svc-pw-1", json!({"project": {"id": service_project}})).await;
    let mine: Value = api
        .ok(
            M::POST,
            "/v3/credentials",
            &svc_token,
            Some(json!({"credential": {"type": "totp", "user_id": svc, "blob": "svc-own"}})),
        )
        .await;
    assert_eq!(mine["credential"]["user_id"], json!(svc), "[{mode}] {mine}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authenticators_of_privileged_users_are_refused_in_keystone_mode() {
    authenticators_are_guarded("any").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authenticators_of_privileged_users_are_refused_in_strict_mode() {
    authenticators_are_guarded("system").await;
}
