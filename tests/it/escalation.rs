//! No role climbs to cloud administrator through delegated administration, in both policy
//! modes (`[policy] admin_scope = any`, Keystone's, and `system`, the strict one): a manager of
//! the Default domain and an admin of another domain try every path of the bug report against
//! a real node; each attempt is refused and changes nothing.
//!
//! The v4 paths each have a child module: `mapping` (rulesets naming users, groups, roles and
//! providers outside their domain), `credentials` (passkeys and credentials registered on a
//! privileged user) and `scim` (SCIM writes reaching privileged users and groups).

mod credentials;
mod mapping;
mod scim;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{Cluster, Http, Resp};

pub(super) struct Api<'a> {
    pub(super) http: &'a Http,
    pub(super) base: String,
}

impl Api<'_> {
    pub(super) async fn call(&self, method: reqwest::Method, path: &str, token: &str, body: Option<Value>) -> Resp {
        let url = format!("{}{path}", self.base);
        let token = (!token.is_empty()).then_some(token);
        self.http
            .request(method.clone(), &url, token, &[], body.as_ref())
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
    }
    pub(super) async fn get(&self, path: &str, token: &str) -> Resp {
        self.call(reqwest::Method::GET, path, token, None).await
    }
    pub(super) async fn ok(&self, method: reqwest::Method, path: &str, token: &str, body: Option<Value>) -> Value {
        let r = self.call(method.clone(), path, token, body).await;
        assert!(r.status.is_success(), "{method} {path}: {} {}", r.status, r.text);
        r.json
    }
    pub(super) async fn token(&self, user_id: &str, password: &str, scope: Value) -> String {
        let body = json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {"id": user_id, "password": password}}},
            "scope": scope,
        }});
        let r = self.call(reqwest::Method::POST, "/v3/auth/tokens", "", Some(body)).await;
        assert!(r.status.is_success(), "login of {user_id}: {} {}", r.status, r.text);
        r.header("X-Subject-Token").expect("X-Subject-Token")
    }
    pub(super) async fn id_of(&self, path: &str, key: &str, name: &str, admin: &str) -> String {
        let list = self.get(&format!("{path}?name={name}"), admin).await;
        list.json[key][0]["id"].as_str().unwrap_or_else(|| panic!("no {name} in {}", list.text)).to_string()
    }
    /// Creates `body` under `path` (envelope `key`) and returns its id.
    pub(super) async fn create(&self, path: &str, key: &str, body: Value, admin: &str) -> String {
        let v = self.ok(reqwest::Method::POST, path, admin, Some(json!({ key: body }))).await;
        v[key]["id"].as_str().expect("id").to_string()
    }
}

pub(super) fn refused(r: &Resp, what: &str) {
    assert!(
        r.status == StatusCode::FORBIDDEN || r.status == StatusCode::NOT_FOUND,
        "{what}: expected 403 (or 404 for a domain on the projects path), got {} {}",
        r.status,
        r.text
    );
    assert!(r.json["error"]["message"].is_string(), "{what}: error body without a message: {}", r.text);
}

async fn escalation_is_refused(mode: &str) {
    use reqwest::Method as M;
    let cluster = Cluster::start_with_env(1, &[("IDNODE_POLICY_ADMIN_SCOPE", mode)]).await;
    let api = Api { http: &cluster.http, base: cluster.api(0) };
    let admin = cluster.admin_token(0).await;
    let pw = cluster.admin_password.clone();

    let admin_id = api.id_of("/v3/users", "users", "admin", &admin).await;
    let admin_project = api.id_of("/v3/projects", "projects", "admin", &admin).await;
    let role = |name: &'static str| {
        let api = &api;
        let admin = admin.clone();
        async move { api.id_of("/v3/roles", "roles", name, &admin).await }
    };
    let (manager, member, reader) = (role("manager").await, role("member").await, role("reader").await);
    let service = role("service").await;

    // A manager of the Default domain, with a domain-scoped token.
    let dm = api
        .create("/v3/users", "user", json!({"name": "dm", "domain_id": "default", "password": "dm-pw-1"}), &admin)
        .await;
    api.ok(M::PUT, &format!("/v3/domains/default/users/{dm}/roles/{manager}"), &admin, None).await;
    let dm_token = api.token(&dm, "dm-pw-1", json!({"domain": {"id": "default"}})).await;

    // A service user and an ordinary user in the Default domain.
    let svc = api
        .create("/v3/users", "user", json!({"name": "svc", "domain_id": "default", "password": "svc-pw-1"}), &admin)
        .await;
    let service_project =
        api.create("/v3/projects", "project", json!({"name": "service", "domain_id": "default"}), &admin).await;
    api.ok(M::PUT, &format!("/v3/projects/{service_project}/users/{svc}/roles/{service}"), &admin, None).await;
    let plain = api
        .create("/v3/users", "user", json!({"name": "plain", "domain_id": "default", "password": "plain-pw-1"}), &admin)
        .await;
    let ordinary_project =
        api.create("/v3/projects", "project", json!({"name": "ordinary", "domain_id": "default"}), &admin).await;

    // The domain manager still manages ordinary users and projects of its domain.
    api.ok(M::PATCH, &format!("/v3/users/{plain}"), &dm_token, Some(json!({"user": {"description": "ok"}}))).await;
    api.ok(M::PUT, &format!("/v3/projects/{ordinary_project}/users/{plain}/roles/{member}"), &dm_token, None).await;

    // 1. The bootstrap admin: password, disable, delete, any update.
    for (method, body, what) in [
        (M::PATCH, Some(json!({"user": {"password": "taken-over"}})), "change the admin's password"),
        (M::PATCH, Some(json!({"user": {"enabled": false}})), "disable the admin"),
        (M::PATCH, Some(json!({"user": {"name": "not-admin"}})), "rename the admin"),
        (M::DELETE, None, "delete the admin"),
    ] {
        let r = api.call(method, &format!("/v3/users/{admin_id}"), &dm_token, body).await;
        refused(&r, &format!("[{mode}] domain manager may not {what}"));
    }
    // 2. A service user likewise.
    let r =
        api.call(M::PATCH, &format!("/v3/users/{svc}"), &dm_token, Some(json!({"user": {"password": "x-1"}}))).await;
    refused(&r, &format!("[{mode}] domain manager may not reset a service user's password"));
    // 3. Anything on the admin project, directly or inherited from the domain.
    for role_id in [&reader, &member] {
        let r = api
            .call(M::PUT, &format!("/v3/projects/{admin_project}/users/{dm}/roles/{role_id}"), &dm_token, None)
            .await;
        refused(&r, &format!("[{mode}] domain manager may not grant itself a role on the admin project"));
    }
    let r = api
        .call(
            M::PUT,
            &format!("/v3/OS-INHERIT/domains/default/users/{dm}/roles/{member}/inherited_to_projects"),
            &dm_token,
            None,
        )
        .await;
    refused(&r, &format!("[{mode}] an inherited grant on the admin project's domain reaches the admin project"));
    // 4. The Default domain through the projects API, and through the domains API.
    let r = api.call(M::PATCH, "/v3/projects/default", &dm_token, Some(json!({"project": {"enabled": false}}))).await;
    refused(&r, &format!("[{mode}] PATCH /v3/projects/default"));
    let r = api.call(M::DELETE, "/v3/projects/default", &dm_token, None).await;
    refused(&r, &format!("[{mode}] DELETE /v3/projects/default"));
    let r = api.call(M::PATCH, "/v3/domains/default", &dm_token, Some(json!({"domain": {"enabled": false}}))).await;
    refused(&r, &format!("[{mode}] domain manager may not disable the Default domain"));
    let r = api
        .call(
            M::PATCH,
            &format!("/v3/projects/{admin_project}"),
            &dm_token,
            Some(json!({"project": {"enabled": false}})),
        )
        .await;
    refused(&r, &format!("[{mode}] domain manager may not disable the admin project"));
    let r = api.call(M::DELETE, &format!("/v3/projects/{admin_project}"), &dm_token, None).await;
    refused(&r, &format!("[{mode}] domain manager may not delete the admin project"));

    // 5. An admin of another domain cannot hand out `service` or `admin`, nor reach the admin
    //    project or the Default domain's administrators.
    let d2 = api.create("/v3/domains", "domain", json!({"name": format!("d2-{mode}")}), &admin).await;
    let da =
        api.create("/v3/users", "user", json!({"name": "da", "domain_id": d2, "password": "da-pw-1"}), &admin).await;
    let admin_role = api.id_of("/v3/roles", "roles", "admin", &admin).await;
    api.ok(M::PUT, &format!("/v3/domains/{d2}/users/{da}/roles/{admin_role}"), &admin, None).await;
    let da_token = api.token(&da, "da-pw-1", json!({"domain": {"id": d2}})).await;
    let p2 = api.create("/v3/projects", "project", json!({"name": "p2", "domain_id": d2}), &admin).await;
    let u2 = api.create("/v3/users", "user", json!({"name": "u2", "domain_id": d2}), &admin).await;
    api.ok(M::PUT, &format!("/v3/projects/{p2}/users/{u2}/roles/{member}"), &da_token, None).await;
    for (role_id, what) in [(&service, "service"), (&admin_role, "admin")] {
        let r = api.call(M::PUT, &format!("/v3/projects/{p2}/users/{u2}/roles/{role_id}"), &da_token, None).await;
        refused(&r, &format!("[{mode}] domain admin may not hand out {what}"));
        let r = api.call(M::PUT, &format!("/v3/domains/{d2}/users/{u2}/roles/{role_id}"), &da_token, None).await;
        refused(&r, &format!("[{mode}] domain admin may not hand out {what} on its domain"));
    }
    let r = api.call(M::PUT, &format!("/v3/projects/{admin_project}/users/{da}/roles/{reader}"), &da_token, None).await;
    refused(&r, &format!("[{mode}] domain admin may not grant on the admin project"));
    let r = api
        .call(M::PATCH, &format!("/v3/users/{admin_id}"), &da_token, Some(json!({"user": {"password": "x-2"}})))
        .await;
    refused(&r, &format!("[{mode}] domain admin may not change the bootstrap admin's password"));
    let r = api.call(M::PATCH, "/v3/domains/default", &da_token, Some(json!({"domain": {"enabled": false}}))).await;
    refused(&r, &format!("[{mode}] domain admin may not disable the bootstrap admin's domain"));
    let r = api.call(M::DELETE, "/v3/domains/default", &da_token, None).await;
    refused(&r, &format!("[{mode}] domain admin may not delete the bootstrap admin's domain"));

    // Nothing changed: the admin logs in with its password, the Default domain is enabled,
    // the manager holds nothing on the admin project, u2 holds only member.
    let again = api.token(&admin_id, &pw, json!({"project": {"id": admin_project}})).await;
    let me = api.get(&format!("/v3/users/{admin_id}"), &again).await;
    assert_eq!(me.json["user"]["enabled"], json!(true), "[{mode}] {}", me.text);
    assert_eq!(me.json["user"]["name"], json!("admin"), "[{mode}] {}", me.text);
    let d = api.get("/v3/domains/default", &again).await;
    assert_eq!(d.json["domain"]["enabled"], json!(true), "[{mode}] {}", d.text);
    let on_admin = api.get(&format!("/v3/role_assignments?scope.project.id={admin_project}&effective"), &again).await;
    let holders: Vec<&str> = on_admin.json["role_assignments"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["user"]["id"].as_str())
        .collect();
    assert!(!holders.contains(&dm.as_str()) && !holders.contains(&da.as_str()), "[{mode}] {}", on_admin.text);
    let u2_roles = api.get(&format!("/v3/role_assignments?user.id={u2}"), &again).await;
    let roles: Vec<&str> = u2_roles.json["role_assignments"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["role"]["id"].as_str())
        .collect();
    assert_eq!(roles, vec![member.as_str()], "[{mode}] {}", u2_roles.text);
    api.token(&svc, "svc-pw-1", json!({"project": {"id": service_project}})).await;

    // A cloud administrator still does all of it.
    api.ok(M::PUT, &format!("/v3/projects/{p2}/users/{u2}/roles/{service}"), &again, None).await;
    api.ok(M::PATCH, &format!("/v3/users/{svc}"), &again, Some(json!({"user": {"password": "svc-pw-2"}}))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delegated_administration_cannot_escalate_in_keystone_mode() {
    escalation_is_refused("any").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delegated_administration_cannot_escalate_in_strict_mode() {
    escalation_is_refused("system").await;
}
