//! `/v3/s3tokens` judged by Swift's own S3 stack: botocore signs S3 requests (signature V2
//! with `HmacV1Auth`, V4 with `S3SigV4Auth`, and both presigned), Swift's s3api middleware
//! parses them and builds their string to sign, and Swift's s3token middleware
//! (`swift.common.middleware.s3api.s3token`, `delay_auth_decision` off, logged in to idnode with
//! a service user's password as a deployment configures it) asks the node who signed each one.
//! The whole WSGI pipeline runs in-process in `s3token_judge.py` (next to this file), in
//! `/opt/anchors/swift-venv` (`bash scripts/install-test-deps` installs it; without it this test
//! fails); only s3token's calls reach the node, over loopback.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::{metric_value, output_within_async, Cluster, Resp};

const PYTHON: &str = "/opt/anchors/swift-venv/bin/python";
const JUDGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/s3token_judge.py");
const JUDGE_TIMEOUT: Duration = Duration::from_secs(120);
const PASSWORD: &str = "a long enough password";

async fn call(c: &Cluster, method: Method, path: &str, token: &str, body: Option<Value>) -> Resp {
    let url = format!("{}{path}", c.api(0));
    c.http.request(method, &url, Some(token), &[], body.as_ref()).await.expect("request")
}

/// `POST path` answering 201 (or 409 for a fixed name made before): the `kind` object's id.
async fn create(c: &Cluster, admin: &str, path: &str, kind: &str, body: Value) -> String {
    let r = call(c, Method::POST, path, admin, Some(json!({ kind: body }))).await;
    assert_eq!(r.status, StatusCode::CREATED, "POST {path}: {}", r.text);
    r.json[kind]["id"].as_str().expect("id").to_string()
}

async fn role_id(c: &Cluster, admin: &str, name: &str) -> String {
    let r = call(c, Method::GET, &format!("/v3/roles?name={name}"), admin, None).await;
    if let Some(id) = r.json["roles"][0]["id"].as_str() {
        return id.to_string();
    }
    create(c, admin, "/v3/roles", "role", json!({"name": name})).await
}

/// A user of the Default domain with `role` on a new project `project`: (user id, project id).
async fn user_with_role(c: &Cluster, admin: &str, user: &str, project: &str, role: &str) -> (String, String) {
    let p = create(c, admin, "/v3/projects", "project", json!({"name": project, "domain_id": "default"})).await;
    let body = json!({"name": user, "domain_id": "default", "password": PASSWORD});
    let u = create(c, admin, "/v3/users", "user", body).await;
    let r = role_id(c, admin, role).await;
    let grant = call(c, Method::PUT, &format!("/v3/projects/{p}/users/{u}/roles/{r}"), admin, None).await;
    assert_eq!(grant.status, StatusCode::NO_CONTENT, "{}", grant.text);
    (u, p)
}

fn case<'a>(out: &'a Value, name: &str) -> &'a Value {
    out.get(name).unwrap_or_else(|| panic!("no case {name} in {out}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn swift_s3token_authenticates_s3_requests_through_s3tokens() {
    let c = Cluster::start(1).await;
    let admin = c.admin_token(0).await;
    let (alice, project) = user_with_role(&c, &admin, "s3-alice", "s3-project", "member").await;
    user_with_role(&c, &admin, "swift", "s3-service", "service").await;
    let ec2 = call(
        &c,
        Method::POST,
        &format!("/v3/users/{alice}/credentials/OS-EC2"),
        &admin,
        Some(json!({"tenant_id": project})),
    )
    .await;
    assert_eq!(ec2.status, StatusCode::CREATED, "{}", ec2.text);
    let access = ec2.json["credential"]["access"].as_str().expect("access").to_string();
    let secret = ec2.json["credential"]["secret"].as_str().expect("secret").to_string();

    assert!(std::path::Path::new(PYTHON).exists(), "{PYTHON} is missing: run `bash scripts/install-test-deps`");
    let mut cmd = tokio::process::Command::new(PYTHON);
    cmd.arg(JUDGE).args([c.api(0).as_str(), &access, &secret, "swift", PASSWORD, "s3-service"]);
    let run = output_within_async(&mut cmd, JUDGE_TIMEOUT).await;
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{JUDGE} failed:\n{stdout}\n{}", String::from_utf8_lossy(&run.stderr));
    let out: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("no JSON ({e}): {stdout}"));

    let object = format!("/v1/AUTH_{project}/bucket/obj");
    for name in ["v2", "v4", "v2query", "v4query", "v4query_first_use", "v4query_second_use"] {
        let r = case(&out, name);
        assert_eq!(r["status"], 200, "{name}: {r}");
        // The object GET, moved by s3token into the project's account, with its identity.
        let calls = r["calls"].as_array().expect("calls");
        assert_eq!(calls.len(), 1, "{name}: {r}");
        let get = &calls[0];
        assert_eq!((&get["method"], &get["path"]), (&json!("GET"), &json!(object)), "{name}");
        let id = &get["identity"];
        assert_eq!(id["X-Identity-Status"], "Confirmed", "{name}: {id}");
        assert_eq!((&id["X-Project-Id"], &id["X-Tenant-Id"]), (&json!(project), &json!(project)), "{name}");
        assert_eq!((&id["X-Project-Name"], &id["X-Project-Domain-Id"]), (&json!("s3-project"), &json!("default")));
        assert_eq!((&id["X-User-Id"], &id["X-User-Name"]), (&json!(alice), &json!("s3-alice")), "{name}");
        assert_eq!(id["X-User-Domain-Id"], "default");
        let roles: Vec<&str> = id["X-Roles"].as_str().expect("roles").split(',').collect();
        assert!(roles.contains(&"member") && !roles.contains(&"admin"), "{name}: {roles:?}");
        assert_eq!(get["token_info"], true, "{name}: s3token keeps the token body");
    }
    let refused = ["wrong_secret", "tampered", "unknown_access"]
        .iter()
        .flat_map(|why| ["v2", "v4", "v2query", "v4query"].map(|mode| format!("{mode}_{why}")))
        .chain(["v4_without_service_auth".to_string()]);
    for name in refused {
        let r = case(&out, &name);
        let status = r["status"].as_u64().expect("status");
        assert!(status == 401 || status == 403, "{name}: {r}");
        let confirmed =
            r["calls"].as_array().expect("calls").iter().any(|c| c["identity"]["X-Identity-Status"] == "Confirmed");
        assert!(!confirmed, "{name}: no identity reaches the app: {r}");
        assert!(!r["calls"].as_array().expect("calls").iter().any(|c| c["method"] == "GET"), "{name}: {r}");
    }
    // The node refused the twelve wrong signatures itself and answered the six right ones; the
    // call without a service token never got that far (401 before any signature work).
    let metrics = c.http.get(&format!("{}/metrics", c.nodes[0].ops()), None).await.expect("metrics").text;
    let count = |result: &str| {
        let name = format!("idnode_auth_attempts_total{{method=\"s3credential\",result=\"{result}\"}}");
        metric_value(&metrics, &name).unwrap_or_else(|| panic!("no {name} in the metrics"))
    };
    assert_eq!((count("success"), count("failure")), (6.0, 12.0));
}
