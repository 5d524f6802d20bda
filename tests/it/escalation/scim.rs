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

use super::{refused, Api};
use crate::support::{Cluster, Resp};

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
    let cluster = Cluster::start_with_env(1, &[("IDNODE_POLICY_ADMIN_SCOPE", mode)]).await;
    let api = Api { http: &cluster.http, base: cluster.api(0) };
    let admin = cluster.admin_token(0).await;
    let pw = cluster.admin_password.clone();
    let admin_id = api.id_of("/v3/users", "users", "admin", &admin).await;
    let admin_project = api.id_of("/v3/projects", "projects", "admin", &admin).await;
    let admin_role = api.id_of("/v3/roles", "roles", "admin", &admin).await;
    let manager = api.id_of("/v3/roles", "roles", "manager", &admin).await;

    // The domain and its manager; everything else of the realm is the manager's doing.
    let d = api.create("/v3/domains", "domain", json!({"name": format!("corp-{mode}")}), &admin).await;
    let dm =
        api.create("/v3/users", "user", json!({"name": "dm", "domain_id": d, "password": "dm-pw-1"}), &admin).await;
    api.ok(M::PUT, &format!("/v3/domains/{d}/users/{dm}/roles/{manager}"), &admin, None).await;
    let dm_token = api.token(&dm, "dm-pw-1", json!({"domain": {"id": d}})).await;
    let idp = api
        .create(
            "/v4/federation/identity_providers",
            "identity_provider",
            json!({"domain_id": d, "provider_id": "okta", "issuer": "https://okta.example", "client_id": "idnode",
                   "jwks_uri": "https://okta.example/jwks"}),
            &dm_token,
        )
        .await;
    let realm =
        json!({"scim_realm": {"domain_id": d, "provider_id": "okta-scim", "idp_id": idp, "display_name": "Okta"}});
    api.ok(M::POST, "/v4/scim-realms", &dm_token, Some(realm)).await;
    let rule = json!({"name": "provisioning",
        "match": {"all_of": [{"type": "equals", "claim": "provider_id", "value": "okta-scim"}]},
        "identity": {"user_name": "scim-${claims.client_id}"},
        "authorizations": [{"type": "domain", "domain_id": d, "roles": [{"id": manager}]}]});
    let mapping = json!({"mapping": {"domain_id": d, "provider_id": "okta-scim",
        "source": {"type": "federation", "idp_id": idp}, "rules": [rule]}});
    api.ok(M::POST, "/v4/mappings", &dm_token, Some(mapping)).await;
    let key = json!({"api_key": {"domain_id": d, "provider_id": "okta-scim", "expires_at": "2099-01-01T00:00:00Z"}});
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
    let r = scim(&api, &key, M::PATCH, &format!("{base}/Groups/{ops}"), Some(add)).await;
    scim_refused(&r, &format!("[{mode}] adding the manager's user to a group holding admin"));
    let replace = json!({"schemas": [GROUP_URN], "displayName": "ops", "members": [{"value": mine}]});
    let r = scim(&api, &key, M::PUT, &format!("{base}/Groups/{ops}"), Some(replace)).await;
    scim_refused(&r, &format!("[{mode}] replacing the members of a group holding admin"));
    let off = json!({"schemas": [PATCH_URN], "Operations": [{"op": "replace", "path": "active", "value": false}]});
    let r = scim(&api, &key, M::PATCH, &format!("{base}/Users/{boss}"), Some(off)).await;
    scim_refused(&r, &format!("[{mode}] deactivating a user holding admin"));
    let r = scim(&api, &key, M::PUT, &format!("{base}/Users/{boss}"), Some(user("e-2", "boss", false))).await;
    scim_refused(&r, &format!("[{mode}] replacing a user holding admin"));
    let r = scim(&api, &key, M::DELETE, &format!("{base}/Users/{boss}"), None).await;
    scim_refused(&r, &format!("[{mode}] deprovisioning a user holding admin"));
    let r = scim(&api, &key, M::DELETE, &format!("{base}/Groups/{ops}"), None).await;
    scim_refused(&r, &format!("[{mode}] deprovisioning a group holding admin"));
    let r = api.call(M::DELETE, &format!("/v4/scim-realms/{d}/okta-scim/purge/user/{boss}"), &dm_token, None).await;
    refused(&r, &format!("[{mode}] the domain manager purging a user holding admin"));

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
