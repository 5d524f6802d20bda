//! Unified limits judged by oslo.limit, the quota library Nova uses: a node per enforcement
//! model serves a service with an endpoint, a registered limit and a project limit, and
//! `limit_enforcer.py` (next to this file) configures the library's `Enforcer` as a service does
//! (`[oslo_limit]` keystoneauth password options, the endpoint id) and checks that a project
//! over its limit is refused (`ProjectOverLimit`) and one under it allowed.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::{output_within_async, Cluster};

const LIMIT_PYTHON: &str = "/opt/anchors/limit-venv/bin/python";

fn limit_python() -> Option<&'static str> {
    let ok = std::process::Command::new(LIMIT_PYTHON).args(["-c", "import oslo_limit"]).output();
    ok.is_ok_and(|o| o.status.success()).then_some(LIMIT_PYTHON)
}

struct Admin<'a> {
    c: &'a Cluster,
    token: String,
}

impl Admin<'_> {
    async fn call(&self, method: Method, path: &str, body: Value) -> Value {
        let url = format!("{}{path}", self.c.api(0));
        let r = self.c.http.request(method, &url, Some(&self.token), &[], Some(&body)).await.unwrap();
        assert!(r.status.is_success(), "{path}: {} {}", r.status, r.text);
        r.json
    }
}

async fn run(model: &str) {
    let Some(python) = limit_python() else {
        eprintln!("SKIPPED oslo_limit ({model}): no oslo.limit in {LIMIT_PYTHON} (run scripts/install-test-deps)");
        return;
    };
    let c = Cluster::start_with_env(1, &[("IDNODE_UNIFIED_LIMIT_ENFORCEMENT_MODEL", model)]).await;
    let a = Admin { c: &c, token: c.admin_token(0).await };
    let got = c.http.get(&format!("{}/v3/limits/model", c.api(0)), Some(&a.token)).await.unwrap();
    assert_eq!(got.json["model"]["name"], model, "{}", got.text);

    a.call(Method::POST, "/v3/regions", json!({"region": {"id": "LimitRegion"}})).await;
    let service = a.call(Method::POST, "/v3/services", json!({"service": {"type": "compute", "name": "nova"}})).await;
    let service = service["service"]["id"].as_str().unwrap().to_string();
    let endpoint = json!({"endpoint": {"service_id": service, "interface": "public", "region_id": "LimitRegion",
                                       "url": "http://127.0.0.1:1/compute"}});
    let endpoint = a.call(Method::POST, "/v3/endpoints", endpoint).await;
    let endpoint = endpoint["endpoint"]["id"].as_str().unwrap().to_string();
    let registered = json!({"registered_limits": [{"service_id": service, "region_id": "LimitRegion",
                                                   "resource_name": "cores", "default_limit": 10}]});
    a.call(Method::POST, "/v3/registered_limits", registered).await;
    let project = |name: &str| {
        let body = json!({"project": {"name": name, "domain_id": "default"}});
        let a = &a;
        async move { a.call(Method::POST, "/v3/projects", body).await["project"]["id"].as_str().unwrap().to_string() }
    };
    let (limited, default) = (project("limited").await, project("unlimited").await);
    let limit = |project: &str, value: i64| {
        json!({"limits": [{"service_id": service, "region_id": "LimitRegion", "resource_name": "cores",
                           "resource_limit": value, "project_id": project}]})
    };
    a.call(Method::POST, "/v3/limits", limit(&limited, 5)).await;
    if model == "strict_two_level" {
        // The model's own rule: a project's limit never exceeds its parent's (here the
        // registered default of its domain, 10).
        let url = format!("{}/v3/limits", c.api(0));
        let r = c.http.post(&url, Some(&a.token), &limit(&default, 11)).await.unwrap();
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    }

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/limit_enforcer.py");
    let auth_url = format!("{}/v3", c.api(0));
    let mut cmd = tokio::process::Command::new(python);
    cmd.args([script, &auth_url, &c.admin_password, &endpoint, &limited, &default, model]);
    cmd.env("NO_PROXY", "127.0.0.1").env("no_proxy", "127.0.0.1");
    let out = output_within_async(&mut cmd, Duration::from_secs(90)).await;
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stdout.trim() == "ok", "oslo.limit ({model}):\n{stdout}\n{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oslo_limit_enforces_the_flat_model() {
    run("flat").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oslo_limit_reads_limits_under_strict_two_level() {
    run("strict_two_level").await;
}
