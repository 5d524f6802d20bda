//! Black-box tests of the catalog (regions, services, endpoints), credentials, the OS-EC2
//! signature credential view and signed-request tokens, against the real binary over HTTP.
//! Signed requests are made by botocore, a real AWS client library (see `sig_client.py`).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::{Client, Method, StatusCode};
use serde_json::{json, Value};

use crate::support::free_ports;

const ADMIN_PASSWORD: &str = "admin-secret";

struct Server {
    child: Child,
    base: String,
    http: Client,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Reply {
    status: StatusCode,
    body: Value,
    subject: Option<String>,
}

impl Server {
    async fn start() -> Server {
        let dir = tempfile::tempdir().unwrap();
        let [api, ops, peer] = free_ports(3)[..] else { unreachable!("three ports asked") };
        let child = Command::new(env!("CARGO_BIN_EXE_idnode"))
            .arg("serve")
            .arg("--data-dir")
            .arg(dir.path())
            .args(["--listen", &format!("127.0.0.1:{api}")])
            .args(["--ops-listen", &format!("127.0.0.1:{ops}")])
            .args(["--peer-listen", &format!("127.0.0.1:{peer}")])
            .env("IDNODE_ADMIN_PASSWORD", ADMIN_PASSWORD)
            .env_remove("IDNODE_CONFIG")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let s = Server { child, base: format!("http://127.0.0.1:{api}"), http: Client::new(), _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(30);
        while s.try_admin_token().await.is_none() {
            assert!(Instant::now() < deadline, "server did not come up");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        s
    }

    async fn call(&self, method: Method, path: &str, token: Option<&str>, body: Option<Value>) -> Reply {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(t) = token {
            req = req.header("x-auth-token", t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status();
        let subject = resp.headers().get("x-subject-token").map(|v| v.to_str().unwrap().to_string());
        let text = resp.text().await.unwrap();
        let body = if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap() };
        Reply { status, body, subject }
    }

    async fn try_admin_token(&self) -> Option<String> {
        let body = json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {"name": "admin", "domain": {"id": "default"}, "password": ADMIN_PASSWORD}}},
            "scope": {"project": {"name": "admin", "domain": {"id": "default"}}}}});
        let resp = self.http.post(format!("{}/v3/auth/tokens", self.base)).json(&body).send().await.ok()?;
        resp.headers().get("x-subject-token").map(|v| v.to_str().unwrap().to_string())
    }

    /// An admin token scoped to the admin project (system authority), its user and project ids.
    async fn admin(&self) -> (String, String, String) {
        let token = self.try_admin_token().await.unwrap();
        let r = self.call_subject(&token, &token).await;
        assert_eq!(r.status, StatusCode::OK);
        let user = r.body["token"]["user"]["id"].as_str().unwrap().to_string();
        let project = r.body["token"]["project"]["id"].as_str().unwrap().to_string();
        (token, user, project)
    }

    async fn call_subject(&self, caller: &str, subject: &str) -> Reply {
        let resp = self
            .http
            .get(format!("{}/v3/auth/tokens", self.base))
            .header("x-auth-token", caller)
            .header("x-subject-token", subject)
            .send()
            .await
            .unwrap();
        let status = resp.status();
        let text = resp.text().await.unwrap();
        Reply { status, body: serde_json::from_str(&text).unwrap_or(Value::Null), subject: None }
    }

    /// A new user without roles and an unscoped token for it.
    async fn plain_user(&self, admin: &str, name: &str) -> (String, String) {
        let r = self
            .call(
                Method::POST,
                "/v3/users",
                Some(admin),
                Some(json!({"user": {"name": name, "domain_id": "default", "password": "pw-of-a-plain-user"}})),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{:?}", r.body);
        let id = r.body["user"]["id"].as_str().unwrap().to_string();
        let body = json!({"auth": {"identity": {"methods": ["password"], "password": {"user": {"id": id, "password": "pw-of-a-plain-user"}}}}});
        let r = self.call(Method::POST, "/v3/auth/tokens", None, Some(body)).await;
        assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        (id, r.subject.unwrap())
    }
}

fn code(r: &Reply) -> u16 {
    r.status.as_u16()
}

#[tokio::test]
async fn catalog_crud_and_error_codes() {
    let s = Server::start().await;
    let (admin, _, _) = s.admin().await;
    let a = Some(admin.as_str());
    let post = |path: &'static str, body: Value| s.call(Method::POST, path, a, Some(body));

    // Regions.
    let r = post("/v3/regions", json!({"region": {"description": "anywhere"}})).await;
    assert_eq!(code(&r), 201, "{:?}", r.body);
    assert_eq!(r.body["region"]["id"].as_str().unwrap().len(), 32, "generated id");
    let r = post("/v3/regions", json!({"region": {"id": "east", "parent_region_id": "RegionOne", "x": 1}})).await;
    assert_eq!(
        (code(&r), &r.body["region"]["parent_region_id"], &r.body["region"]["x"]),
        (201, &json!("RegionOne"), &json!(1))
    );
    assert_eq!(code(&post("/v3/regions", json!({"region": {"id": "east"}})).await), 409);
    assert_eq!(code(&post("/v3/regions", json!({"region": {"id": "x", "parent_region_id": "nowhere"}})).await), 404);
    assert_eq!(code(&post("/v3/regions", json!({"region": "flat"})).await), 400);
    let r = s.call(Method::PUT, "/v3/regions/west", a, Some(json!({"region": {}}))).await;
    assert_eq!((code(&r), &r.body["region"]["id"]), (201, &json!("west")));
    assert_eq!(code(&s.call(Method::PUT, "/v3/regions/west2", a, Some(json!({"region": {"id": "other"}}))).await), 400);
    assert_eq!(code(&s.call(Method::GET, "/v3/regions/east", a, None).await), 200);
    assert_eq!(code(&s.call(Method::GET, "/v3/regions/nowhere", a, None).await), 404);
    let r = s.call(Method::GET, "/v3/regions?parent_region_id=RegionOne", a, None).await;
    let ids: Vec<&str> = r.body["regions"].as_array().unwrap().iter().map(|x| x["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["east"]);
    let cycle =
        s.call(Method::PATCH, "/v3/regions/RegionOne", a, Some(json!({"region": {"parent_region_id": "east"}}))).await;
    assert_eq!(code(&cycle), 400);
    let r = s.call(Method::PATCH, "/v3/regions/east", a, Some(json!({"region": {"description": "d"}}))).await;
    assert_eq!((code(&r), &r.body["region"]["description"]), (200, &json!("d")));
    assert_eq!(code(&s.call(Method::PATCH, "/v3/regions/nowhere", a, Some(json!({"region": {}}))).await), 404);

    // Services.
    assert_eq!(code(&post("/v3/services", json!({"service": {"name": "nova"}})).await), 400, "type is required");
    let r = post("/v3/services", json!({"service": {"type": "compute", "name": "nova", "description": "vms"}})).await;
    assert_eq!((code(&r), &r.body["service"]["enabled"]), (201, &json!(true)));
    let svc = r.body["service"]["id"].as_str().unwrap().to_string();
    let r = s.call(Method::GET, "/v3/services?type=compute", a, None).await;
    assert_eq!(r.body["services"].as_array().unwrap().len(), 1);
    let r = s.call(Method::GET, "/v3/services?name=keystone", a, None).await;
    assert_eq!(r.body["services"][0]["type"], "identity");
    assert_eq!(code(&s.call(Method::GET, "/v3/services/nope", a, None).await), 404);
    let r = s.call(Method::PATCH, &format!("/v3/services/{svc}"), a, Some(json!({"service": {"name": "nova2"}}))).await;
    assert_eq!((code(&r), &r.body["service"]["name"]), (200, &json!("nova2")));
    assert_eq!(code(&s.call(Method::PATCH, "/v3/services/nope", a, Some(json!({"service": {}}))).await), 404);

    // Endpoints.
    let ep = |interface: &str, service: &str, region: Option<&str>, url: Option<&str>| {
        let mut e = json!({"interface": interface, "service_id": service, "region_id": region});
        if let Some(u) = url {
            e["url"] = json!(u);
        }
        json!({ "endpoint": e })
    };
    assert_eq!(code(&post("/v3/endpoints", ep("bogus", &svc, None, Some("http://n"))).await), 400);
    assert_eq!(code(&post("/v3/endpoints", ep("public", &svc, None, None)).await), 400, "url is required");
    assert_eq!(code(&post("/v3/endpoints", ep("public", &svc, None, Some("no-scheme"))).await), 400);
    assert_eq!(code(&post("/v3/endpoints", ep("public", "nope", None, Some("http://n"))).await), 404);
    assert_eq!(code(&post("/v3/endpoints", ep("public", &svc, Some("nowhere"), Some("http://n"))).await), 400);
    let r = post("/v3/endpoints", ep("public", &svc, Some("east"), Some("http://nova.example/v2.1"))).await;
    assert_eq!(
        (code(&r), &r.body["endpoint"]["region"], &r.body["endpoint"]["enabled"]),
        (201, &json!("east"), &json!(true))
    );
    let eid = r.body["endpoint"]["id"].as_str().unwrap().to_string();
    let r = s.call(Method::GET, &format!("/v3/endpoints?interface=public&service_id={svc}"), a, None).await;
    assert_eq!(r.body["endpoints"].as_array().unwrap().len(), 1);
    let r = s.call(Method::GET, "/v3/endpoints?region_id=RegionOne", a, None).await;
    assert_eq!(r.body["endpoints"].as_array().unwrap().len(), 3, "the bootstrap identity endpoints");
    assert_eq!(code(&s.call(Method::GET, "/v3/endpoints?interface=bogus", a, None).await), 400);
    let r = s
        .call(Method::PATCH, &format!("/v3/endpoints/{eid}"), a, Some(json!({"endpoint": {"url": "http://nova2"}})))
        .await;
    assert_eq!((code(&r), &r.body["endpoint"]["url"]), (200, &json!("http://nova2")));
    assert_eq!(code(&s.call(Method::GET, "/v3/endpoints/nope", a, None).await), 404);
    assert_eq!(code(&s.call(Method::PATCH, "/v3/endpoints/nope", a, Some(json!({"endpoint": {}}))).await), 404);

    // The token catalog follows.
    let token = s.try_admin_token().await.unwrap();
    let r = s.call_subject(&admin, &token).await;
    let compute = r.body["token"]["catalog"].as_array().unwrap().iter().find(|c| c["type"] == "compute").cloned();
    assert_eq!(compute.unwrap()["endpoints"][0]["url"], "http://nova2");
    s.call(Method::PATCH, &format!("/v3/services/{svc}"), a, Some(json!({"service": {"enabled": false}}))).await;
    let r = s.call_subject(&admin, &token).await;
    assert!(r.body["token"]["catalog"].as_array().unwrap().iter().all(|c| c["type"] != "compute"), "disabled service");

    // A caller without system roles reads regions only.
    let (_, plain) = s.plain_user(&admin, "plain").await;
    let p = Some(plain.as_str());
    assert_eq!(code(&s.call(Method::GET, "/v3/regions", p, None).await), 200);
    assert_eq!(code(&s.call(Method::GET, "/v3/services", p, None).await), 403);
    assert_eq!(code(&s.call(Method::GET, "/v3/endpoints", p, None).await), 403);
    assert_eq!(code(&s.call(Method::POST, "/v3/regions", p, Some(json!({"region": {}}))).await), 403);
    assert_eq!(code(&s.call(Method::GET, "/v3/regions", None, None).await), 401);

    // Deletes: a region serving endpoints stays; a service takes its endpoints along.
    assert_eq!(code(&s.call(Method::DELETE, "/v3/regions/RegionOne", a, None).await), 403);
    assert_eq!(code(&s.call(Method::DELETE, &format!("/v3/services/{svc}"), a, None).await), 204);
    assert_eq!(code(&s.call(Method::GET, &format!("/v3/endpoints/{eid}"), a, None).await), 404);
    assert_eq!(code(&s.call(Method::DELETE, &format!("/v3/services/{svc}"), a, None).await), 404);
    assert_eq!(code(&s.call(Method::DELETE, "/v3/regions/east", a, None).await), 204);
    assert_eq!(code(&s.call(Method::DELETE, "/v3/regions/east", a, None).await), 404);
    let r = post("/v3/endpoints", ep("admin", "nope", None, Some("http://n"))).await;
    assert_eq!(code(&r), 404);
    let keystone = s.call(Method::GET, "/v3/endpoints?interface=admin", a, None).await;
    let kid = keystone.body["endpoints"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(code(&s.call(Method::DELETE, &format!("/v3/endpoints/{kid}"), a, None).await), 204);
    assert_eq!(code(&s.call(Method::DELETE, &format!("/v3/endpoints/{kid}"), a, None).await), 404);
}

#[tokio::test]
async fn credentials_crud_ownership_and_error_codes() {
    let s = Server::start().await;
    let (admin, admin_id, project) = s.admin().await;
    let a = Some(admin.as_str());
    let create = |token: Option<&str>, cred: Value| {
        let t = token.map(str::to_string);
        let s = &s;
        async move { s.call(Method::POST, "/v3/credentials", t.as_deref(), Some(json!({"credential": cred}))).await }
    };

    let r = create(a, json!({"type": "totp", "blob": "{\"seed\":\"abc\"}", "user_id": admin_id, "x": "y"})).await;
    assert_eq!(code(&r), 201, "{:?}", r.body);
    assert_eq!(
        (&r.body["credential"]["blob"], &r.body["credential"]["x"]),
        (&json!("{\"seed\":\"abc\"}"), &json!("y"))
    );
    let totp = r.body["credential"]["id"].as_str().unwrap().to_string();
    assert_eq!(code(&create(a, json!({"type": "totp", "user_id": admin_id})).await), 400, "blob is required");
    assert_eq!(code(&create(a, json!({"type": "totp", "blob": {"a": 1}})).await), 400, "blob is a string");
    assert_eq!(code(&create(a, json!({"blob": "{}"})).await), 400, "type is required");
    assert_eq!(code(&create(a, json!({"type": "totp", "blob": "{}", "user_id": "ghost"})).await), 400);
    let ec2 = |blob: &str, project: Option<&str>| json!({"type": "ec2", "blob": blob, "project_id": project});
    assert_eq!(code(&create(a, ec2("{\"access\":\"k1\",\"secret\":\"s1\"}", None)).await), 400, "ec2 needs project");
    assert_eq!(code(&create(a, ec2("{\"secret\":\"s1\"}", Some(&project))).await), 400, "ec2 needs access");
    assert_eq!(code(&create(a, ec2("not json", Some(&project))).await), 400);
    assert_eq!(code(&create(a, ec2("{\"access\":\"k1\"}", Some("nope"))).await), 400, "unknown project");
    let r = create(a, ec2("{\"access\":\"k1\",\"secret\":\"s1\"}", Some(&project))).await;
    assert_eq!(code(&r), 201);
    let ec2_id = r.body["credential"]["id"].as_str().unwrap().to_string();
    assert_eq!(ec2_id.len(), 64, "hex SHA-256 of the access key");
    assert_eq!(code(&create(a, ec2("{\"access\":\"k1\",\"secret\":\"other\"}", Some(&project))).await), 409);
    let via_ec2 = s.call(Method::GET, &format!("/v3/users/{admin_id}/credentials/OS-EC2/k1"), a, None).await;
    assert_eq!((code(&via_ec2), &via_ec2.body["credential"]["secret"]), (200, &json!("s1")), "found by its access key");

    let r = s.call(Method::GET, "/v3/credentials?type=totp", a, None).await;
    assert_eq!(r.body["credentials"].as_array().unwrap().len(), 1);
    let r = s.call(Method::GET, &format!("/v3/credentials?user_id={admin_id}"), a, None).await;
    assert_eq!(r.body["credentials"].as_array().unwrap().len(), 2);
    assert_eq!(code(&s.call(Method::GET, &format!("/v3/credentials/{totp}"), a, None).await), 200);
    assert_eq!(code(&s.call(Method::GET, "/v3/credentials/nope", a, None).await), 404);
    let patch = |id: &str, cred: Value| {
        let (path, s) = (format!("/v3/credentials/{id}"), &s);
        async move { s.call(Method::PATCH, &path, a, Some(json!({"credential": cred}))).await }
    };
    let r = patch(&totp, json!({"blob": "{\"seed\":\"new\"}"})).await;
    assert_eq!((code(&r), &r.body["credential"]["blob"]), (200, &json!("{\"seed\":\"new\"}")));
    assert_eq!(code(&patch("nope", json!({"blob": "{}"})).await), 404);
    // Keystone: the blob may change (the id stays the hash of the first access key), the
    // delegation it is bound to may not.
    let r = patch(&ec2_id, json!({"blob": "{\"access\":\"k1\",\"secret\":\"s\",\"trust_id\":\"t\"}"})).await;
    assert_eq!(code(&r), 400, "trust_id is fixed: {}", r.body);
    assert_eq!(r.body["error"]["message"], "trust_id can not be updated for credential.");
    assert_eq!(code(&patch(&ec2_id, json!({"blob": "{\"access\":\"k2\",\"secret\":\"s\"}"})).await), 200);
    assert_eq!(
        code(&patch(&ec2_id, json!({"blob": "{\"access\":\"k1\",\"secret\":\"s2\"}"})).await),
        200,
        "secret may change"
    );

    // Ownership: a user sees and manages only its own credentials.
    let (bob, bob_token) = s.plain_user(&admin, "bob").await;
    let b = Some(bob_token.as_str());
    assert_eq!(code(&s.call(Method::GET, &format!("/v3/credentials/{totp}"), b, None).await), 403);
    assert_eq!(code(&s.call(Method::GET, "/v3/credentials/nope", b, None).await), 403, "no existence oracle");
    assert_eq!(code(&s.call(Method::DELETE, &format!("/v3/credentials/{totp}"), b, None).await), 403);
    assert_eq!(code(&create(b, json!({"type": "totp", "blob": "{}", "user_id": admin_id})).await), 403);
    let r = create(b, json!({"type": "totp", "blob": "{}"})).await;
    assert_eq!((code(&r), &r.body["credential"]["user_id"]), (201, &json!(bob)), "owner defaults to the caller");
    let bobs = r.body["credential"]["id"].as_str().unwrap().to_string();
    let r = s.call(Method::GET, "/v3/credentials", b, None).await;
    let listed: Vec<&str> =
        r.body["credentials"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(listed, [bobs.as_str()]);
    let give_away = json!({"credential": {"user_id": admin_id}});
    assert_eq!(code(&s.call(Method::PATCH, &format!("/v3/credentials/{bobs}"), b, Some(give_away)).await), 403);
    assert_eq!(code(&s.call(Method::GET, &format!("/v3/credentials/{bobs}"), b, None).await), 200);

    // Deleting the owner deletes its credentials.
    assert_eq!(code(&s.call(Method::DELETE, &format!("/v3/users/{bob}"), a, None).await), 204);
    assert_eq!(code(&s.call(Method::GET, &format!("/v3/credentials/{bobs}"), a, None).await), 404);

    assert_eq!(code(&s.call(Method::DELETE, &format!("/v3/credentials/{totp}"), a, None).await), 204);
    assert_eq!(code(&s.call(Method::DELETE, &format!("/v3/credentials/{totp}"), a, None).await), 404);
}

/// The Python with botocore that signs requests: `IDNODE_BOTO_PYTHON`, or the venv that
/// `scripts/install-test-deps` creates.
pub(crate) fn boto_python() -> Option<String> {
    let python = std::env::var("IDNODE_BOTO_PYTHON").unwrap_or_else(|_| "/opt/anchors/boto-venv/bin/python".into());
    let ok = Command::new(&python).args(["-c", "import botocore"]).stderr(Stdio::null()).status();
    ok.is_ok_and(|s| s.success()).then_some(python)
}

pub(crate) fn sign(python: &str, base: &str, access: &str, secret: &str, mode: &str) -> Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/sig_client.py");
    let out = Command::new(python).args([script, base, access, secret, mode]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test]
async fn ec2_credentials_and_signed_request_tokens() {
    let s = Server::start().await;
    let (admin, admin_id, project) = s.admin().await;
    let a = Some(admin.as_str());
    let path = format!("/v3/users/{admin_id}/credentials/OS-EC2");

    let r = s.call(Method::POST, &path, a, Some(json!({"tenant_id": project}))).await;
    assert_eq!(code(&r), 201, "{:?}", r.body);
    let c = &r.body["credential"];
    let (access, secret) = (c["access"].as_str().unwrap().to_string(), c["secret"].as_str().unwrap().to_string());
    assert!(access.len() == 32 && secret.len() == 32 && access.chars().all(|c| c.is_ascii_hexdigit()), "uuid hex");
    assert_eq!((&c["tenant_id"], &c["user_id"], &c["trust_id"]), (&json!(project), &json!(admin_id), &Value::Null));
    let r =
        s.call(Method::POST, &path, a, Some(json!({"project_id": project, "access": "mine", "secret": "shh"}))).await;
    assert_eq!(
        (code(&r), &r.body["credential"]["access"], &r.body["credential"]["secret"]),
        (201, &json!("mine"), &json!("shh"))
    );
    assert_eq!(code(&s.call(Method::POST, &path, a, Some(json!({"access": "x"}))).await), 400, "tenant required");
    assert_eq!(code(&s.call(Method::POST, &path, a, Some(json!(["tenant_id"]))).await), 400);
    assert_eq!(code(&s.call(Method::POST, &path, a, Some(json!({"tenant_id": project, "secret": 7}))).await), 400);
    assert_eq!(code(&s.call(Method::POST, &path, a, Some(json!({"tenant_id": "nope"}))).await), 400);
    assert_eq!(code(&s.call(Method::POST, &path, a, Some(json!({"tenant_id": project, "access": "mine"}))).await), 409);
    let r = s.call(Method::GET, &path, a, None).await;
    assert_eq!((code(&r), r.body["credentials"].as_array().unwrap().len()), (200, 2));
    let r = s.call(Method::GET, &format!("{path}/{access}"), a, None).await;
    assert_eq!((code(&r), &r.body["credential"]["secret"]), (200, &json!(secret)));
    assert_eq!(code(&s.call(Method::GET, &format!("{path}/unknown"), a, None).await), 404);
    assert_eq!(code(&s.call(Method::GET, "/v3/users/nobody/credentials/OS-EC2", a, None).await), 404);
    let (_, plain) = s.plain_user(&admin, "plain").await;
    assert_eq!(code(&s.call(Method::GET, &format!("{path}/{access}"), Some(&plain), None).await), 403);
    assert_eq!(code(&s.call(Method::GET, &path, Some(&plain), None).await), 403);
    assert_eq!(code(&s.call(Method::DELETE, &format!("{path}/mine"), a, None).await), 204);
    assert_eq!(code(&s.call(Method::DELETE, &format!("{path}/mine"), a, None).await), 404);

    let sigtoken = |endpoint: &'static str, body: Value| s.call(Method::POST, endpoint, None, Some(body));
    assert_eq!(code(&sigtoken("/v3/sigtokens", json!({})).await), 400, "empty body");
    let unsigned = json!({"credentials": {"access": access, "host": "h", "verb": "GET", "path": "/", "params": {}}});
    assert_eq!(code(&sigtoken("/v3/sigtokens", unsigned).await), 401, "no signature");

    let Some(python) = boto_python() else {
        eprintln!(
            "SKIPPED the botocore part of ec2_credentials_and_signed_request_tokens: no Python with botocore \
             (run scripts/install-test-deps, or set IDNODE_BOTO_PYTHON)"
        );
        return;
    };
    for (i, mode) in ["v4", "v4query", "v2post", "v2get"].into_iter().enumerate() {
        let endpoint = if i % 2 == 0 { "/v3/sigtokens" } else { "/v3/ec2tokens" };
        let signed = sign(&python, &s.base, &access, &secret, mode);
        let r = sigtoken(endpoint, json!({"credentials": signed})).await;
        assert_eq!(code(&r), 200, "{mode} at {endpoint}: {:?}", r.body);
        let t = &r.body["token"];
        assert_eq!(
            (&t["methods"], &t["project"]["id"], &t["user"]["id"]),
            (&json!(["ec2credential"]), &json!(project), &json!(admin_id))
        );
        let token = r.subject.unwrap();
        let v = s.call_subject(&admin, &token).await;
        assert_eq!((code(&v), &v.body["token"]["methods"]), (200, &json!(["ec2credential"])), "{mode}");
        let other_endpoint = if i % 2 == 0 { "/v3/ec2tokens" } else { "/v3/sigtokens" };
        let replay = sigtoken(other_endpoint, json!({"ec2Credentials": signed})).await;
        assert_eq!(code(&replay), 401, "{mode}: a signature buys one token: {:?}", replay.body);
        let again = sign(&python, &s.base, &access, &secret, mode);
        let alias = sigtoken(other_endpoint, json!({"ec2Credentials": again})).await;
        assert_eq!(code(&alias), 200, "{mode}: the ec2Credentials envelope");

        let mut changed_param = signed.clone();
        changed_param["params"]["Action"] = json!("TerminateInstances");
        assert_eq!(
            code(&sigtoken(endpoint, json!({"credentials": changed_param})).await),
            401,
            "{mode}: changed param"
        );
        let mut changed_sig = signed.clone();
        let sig = changed_sig["signature"].as_str().unwrap().to_string();
        let first = if sig.starts_with('a') { "b" } else { "a" };
        let flipped = format!("{first}{}", sig.get(1..).unwrap());
        changed_sig["signature"] = json!(flipped);
        assert_eq!(
            code(&sigtoken(endpoint, json!({"credentials": changed_sig})).await),
            401,
            "{mode}: changed signature"
        );
        let wrong_secret = sign(&python, &s.base, &access, "not-the-secret", mode);
        assert_eq!(code(&sigtoken(endpoint, json!({"credentials": wrong_secret})).await), 401, "{mode}: wrong secret");
        let unknown = sign(&python, &s.base, "unknown-access", &secret, mode);
        assert_eq!(code(&sigtoken(endpoint, json!({"credentials": unknown})).await), 401, "{mode}: unknown access");
    }

    // A token from a signed request is delegated: no identity API, no re-scoping.
    let signed = sign(&python, &s.base, &access, &secret, "v4");
    let token = sigtoken("/v3/sigtokens", json!({"credentials": signed})).await.subject.unwrap();
    assert_eq!(code(&s.call(Method::GET, &format!("/v3/users/{admin_id}"), Some(&token), None).await), 403);
    let rescope = json!({"auth": {"identity": {"methods": ["token"], "token": {"id": token}}, "scope": {"system": {"all": true}}}});
    assert_eq!(code(&s.call(Method::POST, "/v3/auth/tokens", None, Some(rescope)).await), 403);

    // A deleted credential signs nothing.
    let fresh = sign(&python, &s.base, &access, &secret, "v4");
    assert_eq!(code(&s.call(Method::DELETE, &format!("{path}/{access}"), a, None).await), 204);
    assert_eq!(code(&sigtoken("/v3/sigtokens", json!({"credentials": fresh})).await), 401);
}
