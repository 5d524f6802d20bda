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
mod restricted;
mod scim;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{Cluster, Http, Resp};

pub(super) struct Api<'a> {
    pub(super) http: &'a Http,
    pub(super) base: String,
}

/// What every path starts from: the bootstrap admin's project-scoped token, password, user id
/// and project id.
pub(super) struct Admin {
    pub(super) token: String,
    pub(super) pw: String,
    pub(super) id: String,
    pub(super) project: String,
}

/// A one-node cluster in policy mode `mode` (`any` or `system`), with `env` set as well.
pub(super) async fn start(mode: &str, env: &[(&str, &str)]) -> Cluster {
    let env: Vec<_> = [("IDNODE_POLICY_ADMIN_SCOPE", mode)].into_iter().chain(env.iter().copied()).collect();
    Cluster::start_with_env(1, &env).await
}

impl<'a> Api<'a> {
    /// The API of the cluster's first node and its bootstrap admin.
    pub(super) async fn with_admin(cluster: &'a Cluster) -> (Api<'a>, Admin) {
        let api = Api { http: &cluster.http, base: cluster.api(0) };
        let token = cluster.admin_token(0).await;
        let pw = cluster.admin_password.clone();
        let id = api.id_of("/v3/users", "users", "admin", &token).await;
        let project = api.id_of("/v3/projects", "projects", "admin", &token).await;
        (api, Admin { token, pw, id, project })
    }
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
    /// Sends the request and checks it is refused (see [`refused`]).
    pub(super) async fn refuses(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: Option<Value>,
        what: &str,
    ) {
        refused(&self.call(method, path, token, body).await, what);
    }
    pub(super) async fn role(&self, name: &str, admin: &str) -> String {
        self.id_of("/v3/roles", "roles", name, admin).await
    }
    /// Creates user `name` (password `{name}-pw-1`) in `domain` with `role` on the domain;
    /// returns its id and a token scoped to the domain.
    pub(super) async fn domain_user(&self, name: &str, domain: &str, role: &str, admin: &str) -> (String, String) {
        let pw = format!("{name}-pw-1");
        let id =
            self.create("/v3/users", "user", json!({"name": name, "domain_id": domain, "password": pw}), admin).await;
        self.ok(reqwest::Method::PUT, &format!("/v3/domains/{domain}/users/{id}/roles/{role}"), admin, None).await;
        let token = self.token(&id, &pw, json!({"domain": {"id": domain}})).await;
        (id, token)
    }
    /// Creates the service user `svc` (password `svc-pw-1`) holding `service_role` on a new
    /// project `service` of the Default domain; returns both ids.
    pub(super) async fn service_user(&self, service_role: &str, admin: &str) -> (String, String) {
        let body = json!({"name": "svc", "domain_id": "default", "password": "svc-pw-1"});
        let svc = self.create("/v3/users", "user", body, admin).await;
        let body = json!({"name": "service", "domain_id": "default"});
        let project = self.create("/v3/projects", "project", body, admin).await;
        let path = format!("/v3/projects/{project}/users/{svc}/roles/{service_role}");
        self.ok(reqwest::Method::PUT, &path, admin, None).await;
        (svc, project)
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

/// The ids of the `what` (`user`, `role`) of each entry of a role assignment listing.
fn assigned<'a>(listing: &'a Value, what: &str) -> Vec<&'a str> {
    listing["role_assignments"].as_array().into_iter().flatten().filter_map(|a| a[what]["id"].as_str()).collect()
}

async fn escalation_is_refused(mode: &str) {
    use reqwest::Method as M;
    let cluster = start(mode, &[]).await;
    let (api, Admin { token: admin, pw, id: admin_id, project: admin_project }) = Api::with_admin(&cluster).await;
    let (manager, member, reader) =
        (api.role("manager", &admin).await, api.role("member", &admin).await, api.role("reader", &admin).await);
    let service = api.role("service", &admin).await;

    // A manager of the Default domain, with a domain-scoped token.
    let (dm, dm_token) = api.domain_user("dm", "default", &manager, &admin).await;

    // A service user and an ordinary user in the Default domain.
    let (svc, service_project) = api.service_user(&service, &admin).await;
    let plain = api
        .create("/v3/users", "user", json!({"name": "plain", "domain_id": "default", "password": "plain-pw-1"}), &admin)
        .await;
    let ordinary_project =
        api.create("/v3/projects", "project", json!({"name": "ordinary", "domain_id": "default"}), &admin).await;

    // The domain manager still manages ordinary users and projects of its domain.
    api.ok(M::PATCH, &format!("/v3/users/{plain}"), &dm_token, Some(json!({"user": {"description": "ok"}}))).await;
    api.ok(M::PUT, &format!("/v3/projects/{ordinary_project}/users/{plain}/roles/{member}"), &dm_token, None).await;

    let inherited = format!("/v3/OS-INHERIT/domains/default/users/{dm}/roles/{member}/inherited_to_projects");
    #[rustfmt::skip]
    let refusals = [
        // 1. The bootstrap admin: password, disable, delete, any update.
        (M::PATCH, format!("/v3/users/{admin_id}"), Some(json!({"user": {"password": "taken-over"}})),
         "domain manager may not change the admin's password"),
        (M::PATCH, format!("/v3/users/{admin_id}"), Some(json!({"user": {"enabled": false}})),
         "domain manager may not disable the admin"),
        (M::PATCH, format!("/v3/users/{admin_id}"), Some(json!({"user": {"name": "not-admin"}})),
         "domain manager may not rename the admin"),
        (M::DELETE, format!("/v3/users/{admin_id}"), None, "domain manager may not delete the admin"),
        // 2. A service user likewise.
        (M::PATCH, format!("/v3/users/{svc}"), Some(json!({"user": {"password": "x-1"}})),
         "domain manager may not reset a service user's password"),
        // 3. Anything on the admin project, directly or inherited from the domain.
        (M::PUT, format!("/v3/projects/{admin_project}/users/{dm}/roles/{reader}"), None,
         "domain manager may not grant itself a role on the admin project"),
        (M::PUT, format!("/v3/projects/{admin_project}/users/{dm}/roles/{member}"), None,
         "domain manager may not grant itself a role on the admin project"),
        (M::PUT, inherited, None, "an inherited grant on the admin project's domain reaches the admin project"),
        // 4. The Default domain through the projects API, and through the domains API.
        (M::PATCH, "/v3/projects/default".into(), Some(json!({"project": {"enabled": false}})),
         "PATCH /v3/projects/default"),
        (M::DELETE, "/v3/projects/default".into(), None, "DELETE /v3/projects/default"),
        (M::PATCH, "/v3/domains/default".into(), Some(json!({"domain": {"enabled": false}})),
         "domain manager may not disable the Default domain"),
        (M::PATCH, format!("/v3/projects/{admin_project}"), Some(json!({"project": {"enabled": false}})),
         "domain manager may not disable the admin project"),
        (M::DELETE, format!("/v3/projects/{admin_project}"), None, "domain manager may not delete the admin project"),
    ];
    for (method, path, body, what) in refusals {
        api.refuses(method, &path, &dm_token, body, &format!("[{mode}] {what}")).await;
    }

    // 5. An admin of another domain cannot hand out `service` or `admin`, nor reach the admin
    //    project or the Default domain's administrators.
    let d2 = api.create("/v3/domains", "domain", json!({"name": format!("d2-{mode}")}), &admin).await;
    let admin_role = api.role("admin", &admin).await;
    let (da, da_token) = api.domain_user("da", &d2, &admin_role, &admin).await;
    let p2 = api.create("/v3/projects", "project", json!({"name": "p2", "domain_id": d2}), &admin).await;
    let u2 = api.create("/v3/users", "user", json!({"name": "u2", "domain_id": d2}), &admin).await;
    api.ok(M::PUT, &format!("/v3/projects/{p2}/users/{u2}/roles/{member}"), &da_token, None).await;
    #[rustfmt::skip]
    let refusals = [
        (M::PUT, format!("/v3/projects/{p2}/users/{u2}/roles/{service}"), None,
         "domain admin may not hand out service"),
        (M::PUT, format!("/v3/domains/{d2}/users/{u2}/roles/{service}"), None,
         "domain admin may not hand out service on its domain"),
        (M::PUT, format!("/v3/projects/{p2}/users/{u2}/roles/{admin_role}"), None,
         "domain admin may not hand out admin"),
        (M::PUT, format!("/v3/domains/{d2}/users/{u2}/roles/{admin_role}"), None,
         "domain admin may not hand out admin on its domain"),
        (M::PUT, format!("/v3/projects/{admin_project}/users/{da}/roles/{reader}"), None,
         "domain admin may not grant on the admin project"),
        (M::PATCH, format!("/v3/users/{admin_id}"), Some(json!({"user": {"password": "x-2"}})),
         "domain admin may not change the bootstrap admin's password"),
        (M::PATCH, "/v3/domains/default".into(), Some(json!({"domain": {"enabled": false}})),
         "domain admin may not disable the bootstrap admin's domain"),
        (M::DELETE, "/v3/domains/default".into(), None, "domain admin may not delete the bootstrap admin's domain"),
    ];
    for (method, path, body, what) in refusals {
        api.refuses(method, &path, &da_token, body, &format!("[{mode}] {what}")).await;
    }

    // Nothing changed: the admin logs in with its password, the Default domain is enabled,
    // the manager holds nothing on the admin project, u2 holds only member.
    let again = api.token(&admin_id, &pw, json!({"project": {"id": admin_project}})).await;
    let me = api.get(&format!("/v3/users/{admin_id}"), &again).await;
    assert_eq!(me.json["user"]["enabled"], json!(true), "[{mode}] {}", me.text);
    assert_eq!(me.json["user"]["name"], json!("admin"), "[{mode}] {}", me.text);
    let d = api.get("/v3/domains/default", &again).await;
    assert_eq!(d.json["domain"]["enabled"], json!(true), "[{mode}] {}", d.text);
    let on_admin = api.get(&format!("/v3/role_assignments?scope.project.id={admin_project}&effective"), &again).await;
    let holders = assigned(&on_admin.json, "user");
    assert!(!holders.contains(&dm.as_str()) && !holders.contains(&da.as_str()), "[{mode}] {}", on_admin.text);
    let u2_roles = api.get(&format!("/v3/role_assignments?user.id={u2}"), &again).await;
    let roles = assigned(&u2_roles.json, "role");
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
