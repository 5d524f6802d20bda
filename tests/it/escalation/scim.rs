//! Findings of the v4 review on SCIM: provisioning writes that reach privileged users and
//! groups.
//!
//! A manager of a domain sets up SCIM on their own (an identity provider, a realm, a ruleset
//! granting its keys `manager` on the domain, an API key) and provisions a user and a group.
//! Once the cloud administrator grants `admin` to the realm's group and to one of its users,
//! the key may not add its user to that group, nor deactivate or deprovision that user, and
//! the manager may not purge it: each is a 403 (the SCIM error envelope on SCIM paths) and
//! nothing changes.

use reqwest::Method as M;
use reqwest::StatusCode;
use serde_json::{json, Value};

use super::{start, Admin, Api};
use crate::support::scim_setup as setup;
use crate::support::Resp;

const ERROR_URN: &str = "urn:ietf:params:scim:api:messages:2.0:Error";
const USER_URN: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
const GROUP_URN: &str = "urn:ietf:params:scim:schemas:core:2.0:Group";
const PATCH_URN: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";

async fn scim(api: &Api<'_>, key: &str, method: M, path: &str, body: Option<Value>) -> Resp {
    let url = format!("{}{path}", api.base);
    let auth = format!("Bearer {key}");
    api.http
        .request(method.clone(), &url, None, &[("Authorization", &auth)], body.as_ref())
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
}

fn scim_refused(r: &Resp, what: &str) {
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{what}: {}", r.text);
    assert_eq!(r.json["schemas"], json!([ERROR_URN]), "{what}: {}", r.text);
    assert_eq!(r.json["status"], json!("403"), "{what}: {}", r.text);
    assert!(r.json["detail"].is_string(), "{what}: {}", r.text);
}

async fn scim_writes_are_guarded(mode: &str) {
    let cluster = start(mode, &[]).await;
    let (api, Admin { token: admin, pw, id: admin_id, project: admin_project }) = Api::with_admin(&cluster).await;
    let admin_role = api.role("admin", &admin).await;
    let manager = api.role("manager", &admin).await;

    // The domain and its manager; everything else of the realm is the manager's doing.
    let d = api.create("/v3/domains", "domain", json!({"name": format!("corp-{mode}")}), &admin).await;
    let (_, dm_token) = api.domain_user("dm", &d, &manager, &admin).await;
    let idp =
        api.create("/v4/federation/identity_providers", "identity_provider", setup::idp(&d, "idnode"), &dm_token).await;
    let realm = json!({"scim_realm": setup::realm(&d, "okta-scim", &idp, "Okta")});
    api.ok(M::POST, "/v4/scim-realms", &dm_token, Some(realm)).await;
    let ruleset = setup::ruleset(&d, "okta-scim", &idp, "provisioning", setup::on_domain(&d, &manager));
    api.ok(M::POST, "/v4/mappings", &dm_token, Some(json!({ "mapping": ruleset }))).await;
    let key = json!({"api_key": setup::key(&d, "okta-scim", "2099-01-01T00:00:00Z")});
    let key = api.ok(M::POST, "/v4/api-keys", &dm_token, Some(key)).await;
    let key = key["token"].as_str().expect("key token").to_string();

    let base = format!("/SCIM/v2/{d}");
    let user = |ext: &str, name: &str, active: bool| json!({"schemas": [USER_URN], "externalId": ext, "userName": name, "active": active});
    let created = |r: Resp| {
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
        r.json["id"].as_str().expect("id").to_string()
    };
    let mine = created(scim(&api, &key, M::POST, &format!("{base}/Users"), Some(user("e-1", "mallory", true))).await);
    let boss = created(scim(&api, &key, M::POST, &format!("{base}/Users"), Some(user("e-2", "boss", true))).await);
    let group = json!({"schemas": [GROUP_URN], "displayName": "ops", "members": []});
    let ops = created(scim(&api, &key, M::POST, &format!("{base}/Groups"), Some(group)).await);

    // The cloud administrator makes the realm's group and one of its users admins.
    api.ok(M::PUT, &format!("/v3/domains/{d}/groups/{ops}/roles/{admin_role}"), &admin, None).await;
    api.ok(M::PUT, &format!("/v3/domains/{d}/users/{boss}/roles/{admin_role}"), &admin, None).await;

    let add =
        json!({"schemas": [PATCH_URN], "Operations": [{"op": "add", "path": "members", "value": [{"value": mine}]}]});
    let replace = json!({"schemas": [GROUP_URN], "displayName": "ops", "members": [{"value": mine}]});
    let off = json!({"schemas": [PATCH_URN], "Operations": [{"op": "replace", "path": "active", "value": false}]});
    #[rustfmt::skip]
    let refusals = [
        (M::PATCH, format!("{base}/Groups/{ops}"), Some(add), "adding the manager's user to a group holding admin"),
        (M::PUT, format!("{base}/Groups/{ops}"), Some(replace), "replacing the members of a group holding admin"),
        (M::PATCH, format!("{base}/Users/{boss}"), Some(off), "deactivating a user holding admin"),
        (M::PUT, format!("{base}/Users/{boss}"), Some(user("e-2", "boss", false)), "replacing a user holding admin"),
        (M::DELETE, format!("{base}/Users/{boss}"), None, "deprovisioning a user holding admin"),
        (M::DELETE, format!("{base}/Groups/{ops}"), None, "deprovisioning a group holding admin"),
    ];
    for (method, path, body, what) in refusals {
        scim_refused(&scim(&api, &key, method, &path, body).await, &format!("[{mode}] {what}"));
    }
    let purge = format!("/v4/scim-realms/{d}/okta-scim/purge/user/{boss}");
    api.refuses(
        M::DELETE,
        &purge,
        &dm_token,
        None,
        &format!("[{mode}] the domain manager purging a user holding admin"),
    )
    .await;

    // Nothing changed.
    let again = api.token(&admin_id, &pw, json!({"project": {"id": admin_project}})).await;
    let b = api.get(&format!("/v3/users/{boss}"), &again).await;
    assert_eq!(b.json["user"]["enabled"], json!(true), "[{mode}] {}", b.text);
    let members = api.get(&format!("/v3/groups/{ops}/users"), &again).await;
    assert_eq!(members.json["users"], json!([]), "[{mode}] {}", members.text);
    let grants = api.get(&format!("/v3/role_assignments?group.id={ops}"), &again).await;
    assert_eq!(grants.json["role_assignments"].as_array().map(Vec::len), Some(1), "[{mode}] {}", grants.text);
    let seen = scim(&api, &key, M::GET, &format!("{base}/Users/{boss}"), None).await;
    assert_eq!(seen.json["active"], json!(true), "[{mode}] {}", seen.text);

    // The same writes on an ordinary group and user of the realm still pass.
    let group = json!({"schemas": [GROUP_URN], "displayName": "plain", "members": [{"value": mine}]});
    created(scim(&api, &key, M::POST, &format!("{base}/Groups"), Some(group)).await);
    let r = scim(&api, &key, M::DELETE, &format!("{base}/Users/{mine}"), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "[{mode}] {}", r.text);
    api.ok(M::DELETE, &format!("/v4/scim-realms/{d}/okta-scim/purge/user/{mine}"), &dm_token, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scim_writes_never_reach_privileged_users_or_groups_in_keystone_mode() {
    scim_writes_are_guarded("any").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scim_writes_never_reach_privileged_users_or_groups_in_strict_mode() {
    scim_writes_are_guarded("system").await;
}
