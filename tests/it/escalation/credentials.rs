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

use super::{start, Admin, Api};

async fn authenticators_are_guarded(mode: &str) {
    let cluster = start(mode, &[]).await;
    let (api, Admin { token: admin, pw, id: admin_id, project: admin_project }) = Api::with_admin(&cluster).await;
    let admin_role = api.role("admin", &admin).await;
    let service = api.role("service", &admin).await;

    // A service user, privileged like the admin.
    let (svc, service_project) = api.service_user(&service, &admin).await;

    // The admin of another domain.
    let d2 = api.create("/v3/domains", "domain", json!({"name": format!("d2-{mode}")}), &admin).await;
    let (_, da_token) = api.domain_user("da", &d2, &admin_role, &admin).await;

    for (victim, project) in [(&admin_id, &admin_project), (&svc, &service_project)] {
        let blob = json!({"access": format!("da-{victim}"), "secret": "known-to-da"}).to_string();
        let credential = json!({"credential": {"type": "ec2", "user_id": victim, "project_id": project, "blob": blob}});
        let ec2 = json!({"tenant_id": project, "access": format!("da2-{victim}"), "secret": "known-to-da"});
        #[rustfmt::skip]
        let refusals = [
            (format!("/v4/users/{victim}/passkeys/register_start"), None, "passkey register_start on"),
            ("/v3/credentials".to_string(), Some(credential), "/v3/credentials for"),
            (format!("/v3/users/{victim}/credentials/OS-EC2"), Some(ec2), "OS-EC2 credential for"),
        ];
        for (path, body, what) in refusals {
            api.refuses(M::POST, &path, &da_token, body, &format!("[{mode}] {what} {victim}")).await;
        }
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
    for (user, project) in [(&admin_id, &admin_project), (&svc, &service_project)] {
        let body = json!({"tenant_id": project});
        api.ok(M::POST, &format!("/v3/users/{user}/credentials/OS-EC2"), &again, Some(body)).await;
    }
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
