//! The OpenFGA-API test server (`tests/openfga/server.py`, OpenFGA's own engine behind a small
//! HTTP server) as a child process, and the settings that point a test node at it. The server
//! stops when this handle drops (its stdin closes) or after ten minutes, whichever is first.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

pub struct FgaServer {
    child: Child,
    pub url: String,
    pub store_id: String,
    pub model_id: String,
    http: reqwest::Client,
}

/// Every bootstrap role mapped by name to the worked model's relation of the same name.
pub const ROLE_TO_RELATION: &str = "admin:admin, manager:manager, member:member, reader:reader";

impl FgaServer {
    /// Starts the server with extra command-line arguments (`--token`, `--model`, …).
    pub fn start(args: &[&str]) -> FgaServer {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/openfga/server.py");
        let mut child = Command::new("python3")
            .arg(script)
            .args(["--port", "0", "--max-seconds", "600"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start tests/openfga/server.py");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut next = |prefix: &str| {
            let line = lines.next().expect("a line from the test server").expect("readable");
            line.strip_prefix(prefix).unwrap_or_else(|| panic!("{prefix:?} expected, got {line:?}")).trim().to_string()
        };
        let addr = next("listening ");
        let store_id = next("store_id ");
        let model_id = next("authorization_model_id ");
        FgaServer { child, url: format!("http://{addr}"), store_id, model_id, http: reqwest::Client::new() }
    }

    /// `[assignment]` and `[openfga]` settings for a node on this store, plus `extra` keys of
    /// `[openfga]`.
    pub fn settings<'a>(&'a self, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str, &'a str)> {
        let mut s = vec![
            ("assignment", "driver", "openfga"),
            ("openfga", "api_url", self.url.as_str()),
            ("openfga", "store_id", self.store_id.as_str()),
            ("openfga", "role_to_relation", ROLE_TO_RELATION),
        ];
        s.extend(extra.iter().map(|(k, v)| ("openfga", *k, *v)));
        s
    }

    /// A control call (`/_test/...`): its JSON answer.
    pub async fn control(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self.http.request(method, format!("{}/_test/{path}", self.url));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("test server control call");
        assert!(resp.status().is_success(), "control {path}: {}", resp.status());
        resp.json().await.unwrap_or(Value::Null)
    }

    /// Calls made so far to one store endpoint (`check`, `read`, …), faulted ones included.
    pub async fn calls(&self, endpoint: &str) -> u64 {
        let c = self.control(reqwest::Method::GET, "calls", None).await;
        c["calls"][endpoint].as_u64().unwrap_or(0)
    }

    /// Every stored tuple as (user, relation, object).
    pub async fn tuples(&self) -> Vec<(String, String, String)> {
        let t = self.control(reqwest::Method::GET, "tuples", None).await;
        let list = t["tuple_keys"].as_array().or_else(|| t["tuples"].as_array()).cloned().unwrap_or_default();
        let field = |v: &Value, k: &str| v.get("key").unwrap_or(v)[k].as_str().unwrap_or_default().to_string();
        list.iter().map(|v| (field(v, "user"), field(v, "relation"), field(v, "object"))).collect()
    }

    /// Writes tuples straight into the store (what a deployment's own sync would do).
    pub async fn seed(&self, tuples: &[(&str, &str, &str)]) {
        let keys: Vec<Value> = tuples
            .iter()
            .map(|(user, relation, object)| serde_json::json!({"user": user, "relation": relation, "object": object}))
            .collect();
        self.control(reqwest::Method::POST, "tuples", Some(serde_json::json!({ "tuple_keys": keys }))).await;
    }

    /// Queues a fault rule (`{"status": 503, "count": 2, "paths": ["check"]}`, …).
    pub async fn fault(&self, rule: Value) {
        self.control(reqwest::Method::POST, "faults", Some(rule)).await;
    }

    /// A call straight to the store's API (what the driver never uses, e.g. `list-objects`).
    pub async fn api(&self, endpoint: &str, body: Value) -> Value {
        let url = format!("{}/stores/{}/{endpoint}", self.url, self.store_id);
        let resp = self.http.post(url).json(&body).send().await.expect("store call");
        resp.json().await.expect("store answer")
    }
}

impl Drop for FgaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
