//! OTLP traces, judged by an OTLP/HTTP receiver built on the OpenTelemetry project's protobuf
//! types (`otlp/receiver.py`, opentelemetry-proto): a 3-node cluster with `[otlp] traces = on`
//! and a sample ratio of 0, so only the requests whose caller sent a sampled `traceparent` are
//! traced (parent-based sampling) and nothing else reaches the receiver. One write through a
//! follower gives the tree request → policy, request → raft.propose → raft.forward → (the
//! leader) forwarded → raft.commit → raft.apply, across two processes; a role grant through the
//! OpenFGA driver adds the store's call; a federated login adds the JWKS fetch, whose request
//! carries the trace on to the identity provider.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{random_hex, Cluster};

use crate::openfga_cluster::fga_server;

const PYTHON: &str = "/opt/anchors/otlp-venv/bin/python";
const ISSUER: &str = "https://idp.traces.test";

/// The receiver as a child process; it stops when its stdin closes (this handle drops).
struct Receiver {
    child: Child,
    port: u16,
    out: PathBuf,
}

impl Receiver {
    fn start(dir: &Path) -> Receiver {
        let out = dir.join("spans.jsonl");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/otlp/receiver.py");
        let mut child = Command::new(PYTHON)
            .arg(script)
            .arg(&out)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the OTLP receiver");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("the receiver's first line");
        let port = line.trim().strip_prefix("listening ").and_then(|p| p.parse().ok()).expect("listening PORT");
        Receiver { child, port, out }
    }

    fn records(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        text.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect()
    }

    fn spans(&self) -> Vec<Value> {
        self.records().into_iter().filter(|r| r.get("span_id").is_some()).collect()
    }

    /// Polls until `done` holds for the spans of trace `trace_id` (the SDK exports in batches).
    async fn wait_trace(&self, trace_id: &str, what: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let spans: Vec<Value> = self.spans().into_iter().filter(|s| s["trace_id"] == trace_id).collect();
            if done(&spans) {
                return spans;
            }
            assert!(Instant::now() < deadline, "no {what} within 30 s; the trace has {spans:#?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The trace's spans by name (each name once in these traces, but for `policy`).
fn by_name(spans: &[Value]) -> HashMap<String, Value> {
    spans.iter().map(|s| (s["name"].as_str().unwrap_or("").to_string(), s.clone())).collect()
}

#[track_caller]
fn child_of(spans: &HashMap<String, Value>, child: &str, parent: &str) {
    let (c, p) = (&spans[child], &spans[parent]);
    assert_eq!(c["parent_span_id"], p["span_id"], "{child} is not a child of {parent}: {c:#} / {p:#}");
}

/// A fresh W3C trace context: (traceparent, trace id, the caller's span id).
fn traceparent() -> (String, String, String) {
    let (trace, span) = (random_hex(16), random_hex(8));
    (format!("00-{trace}-{span}-01"), trace, span)
}

fn b64url(v: &Value) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sampled_request_s_trace_spans_members_policy_raft_the_store_and_outbound_calls() {
    if !Path::new(PYTHON).exists() {
        assert!(std::env::var_os("CI").is_none(), "{PYTHON} is missing (scripts/install-test-deps)");
        eprintln!("SKIPPED: {PYTHON} not found");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let receiver = Receiver::start(dir.path());
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/openfga/keystone-smoke.fga");
    let fga = fga_server::FgaServer::start(&["--model", model]);
    let map = dir.path().join("roles.map");
    std::fs::write(&map, fga_server::ROLE_TO_RELATION).expect("role table");
    let (endpoint, map) = (format!("http://127.0.0.1:{}", receiver.port), map.display().to_string());
    let env = [
        ("IDNODE_OTLP_ENDPOINT", endpoint.as_str()),
        ("IDNODE_OTLP_TRACES", "on"),
        ("IDNODE_OTLP_TRACE_SAMPLE_RATIO", "0"),
        ("IDNODE_FEDERATION_ALLOW_PRIVATE_NETWORKS", "true"),
        ("IDNODE_ASSIGNMENT_DRIVER", "openfga"),
        ("IDNODE_OPENFGA_API_URL", fga.url.as_str()),
        ("IDNODE_OPENFGA_STORE_ID", fga.store_id.as_str()),
        ("IDNODE_OPENFGA_ROLE_TO_RELATION_FILE", map.as_str()),
    ];
    let c = Cluster::start_with_env(3, &env).await;
    let leader = c.wait_leader(Duration::from_secs(30)).await;
    let f = (leader + 1) % 3;
    let token = c.admin_token(f).await;
    let (leader_id, f_id) = (c.nodes[leader].id.to_string(), c.nodes[f].id.to_string());

    // A write through a follower, in the caller's trace.
    let (tp, trace, caller) = traceparent();
    let name = format!("traced-{}", random_hex(4));
    let body = json!({"project": {"name": name, "domain_id": "default"}});
    let url = format!("{}/v3/projects", c.api(f));
    let r = c.http.request(Method::POST, &url, Some(&token), &[("traceparent", &tp)], Some(&body)).await.unwrap();
    assert_eq!(r.status, 201, "{}", r.text);
    let project = r.json["project"]["id"].as_str().expect("project id").to_string();
    let want =
        ["POST /v3/projects", "policy", "raft.propose", "raft.forward", "forwarded", "raft.commit", "raft.apply"];
    let spans = receiver
        .wait_trace(&trace, "write's whole tree", |s| want.iter().all(|w| s.iter().any(|x| x["name"] == *w)))
        .await;
    let t = by_name(&spans);
    let http = &t["POST /v3/projects"];
    assert_eq!(http["parent_span_id"], caller, "the request span continues the caller's: {http:#}");
    assert_eq!(http["kind"], 2, "a server span: {http:#}");
    assert_eq!(http["attributes"]["http.route"], "/v3/projects");
    assert_eq!(http["attributes"]["http.response.status_code"], 201);
    assert_eq!(http["instance"], f_id.as_str());
    let policy = spans.iter().find(|s| s["attributes"]["policy.rule"] == "identity:create_project");
    let policy = policy.unwrap_or_else(|| panic!("no policy span for identity:create_project: {spans:#?}"));
    assert_eq!(policy["parent_span_id"], http["span_id"], "{policy:#}");
    assert_eq!(policy["attributes"]["policy.allowed"], true);
    child_of(&t, "raft.propose", "POST /v3/projects");
    child_of(&t, "raft.forward", "raft.propose");
    child_of(&t, "forwarded", "raft.forward");
    child_of(&t, "raft.commit", "forwarded");
    child_of(&t, "raft.apply", "raft.commit");
    for (span, member) in [("raft.propose", &f_id), ("raft.forward", &f_id), ("forwarded", &leader_id)] {
        assert_eq!(t[span]["instance"], member.as_str(), "{span} ran on member {member}");
    }
    for span in ["raft.commit", "raft.apply"] {
        assert_eq!(t[span]["instance"], leader_id.as_str(), "{span} ran on the leader");
    }
    let index = t["raft.propose"]["attributes"]["raft.index"].as_i64().expect("the proposal's log index");
    assert_eq!(t["raft.apply"]["attributes"]["raft.index"].as_i64(), Some(index));

    // A role grant: the OpenFGA driver's store call joins the trace.
    let (tp, trace, _) = traceparent();
    let admin_user = c.http.validate_token(&c.api(f), &token, &token).await.unwrap().json["token"]["user"]["id"]
        .as_str()
        .expect("admin id")
        .to_string();
    let roles = c.http.get(&format!("{}/v3/roles?name=member", c.api(f)), Some(&token)).await.unwrap();
    let role = roles.json["roles"][0]["id"].as_str().expect("the member role").to_string();
    let url = format!("{}/v3/projects/{project}/users/{admin_user}/roles/{role}", c.api(f));
    let r = c.http.request(Method::PUT, &url, Some(&token), &[("traceparent", &tp)], None).await.unwrap();
    assert_eq!(r.status, 204, "{}", r.text);
    let spans =
        receiver.wait_trace(&trace, "the store's write", |s| s.iter().any(|x| x["name"] == "openfga write")).await;
    let store = spans.iter().find(|s| s["name"] == "openfga write").expect("found");
    assert_eq!(store["kind"], 3, "a client span: {store:#}");
    assert_eq!(store["attributes"]["fga.operation"], "write");
    let parents: HashMap<&str, &Value> = spans.iter().map(|s| (s["span_id"].as_str().unwrap_or(""), s)).collect();
    let mut up = store;
    while let Some(p) = parents.get(up["parent_span_id"].as_str().unwrap_or("")) {
        up = p;
    }
    assert!(up["name"].as_str().is_some_and(|n| n.starts_with("PUT /v3/projects/")), "the store call's root: {up:#}");

    // A federated login: the key set's fetch is a client span, and its request carries it on.
    let idp = json!({"identity_provider": {"domain_id": "default", "provider_id": "traced", "issuer": ISSUER,
        "client_id": "idnode", "jwks_uri": format!("{endpoint}/jwks")}});
    let url = format!("{}/v4/federation/identity_providers", c.api(leader));
    let r = c.http.post(&url, Some(&token), &idp).await.unwrap();
    assert_eq!(r.status, 201, "{}", r.text);
    let idp_id = r.json["identity_provider"]["id"].as_str().expect("idp id").to_string();
    let rule = json!({"name": "r", "match": {"all_of": []}, "authorizations": [], "groups": [],
        "identity": {"identity_mode": "local", "user_name": "${claims.sub}"}});
    let ruleset = json!({"mapping": {"domain_id": "default", "provider_id": "traced",
        "source": {"type": "federation", "idp_id": idp_id}, "rules": [rule]}});
    let r = c.http.post(&format!("{}/v4/mappings", c.api(leader)), Some(&token), &ruleset).await.unwrap();
    assert_eq!(r.status, 201, "{}", r.text);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let jwt = format!(
        "{}.{}.{}",
        b64url(&json!({"alg": "ES256", "kid": "unknown-key", "typ": "JWT"})),
        b64url(&json!({"iss": ISSUER, "aud": "idnode", "sub": "someone", "iat": now, "exp": now + 300})),
        b64url(&json!("not a signature"))
    );
    let (tp, trace, _) = traceparent();
    let bearer = format!("Bearer {jwt}");
    let url = format!("{}/v4/federation/identity_providers/{idp_id}/jwt", c.api(f));
    let headers = [("Authorization", bearer.as_str()), ("traceparent", tp.as_str())];
    let r = c.http.request(Method::POST, &url, None, &headers, None).await.unwrap();
    assert_eq!(r.status, 401, "a key the set lacks: {}", r.text);
    let spans = receiver.wait_trace(&trace, "the JWKS fetch", |s| s.iter().any(|x| x["name"] == "GET 127.0.0.1")).await;
    let fetch = spans.iter().find(|s| s["name"] == "GET 127.0.0.1").expect("found");
    assert_eq!(fetch["kind"], 3, "a client span: {fetch:#}");
    assert_eq!(fetch["attributes"]["url.path"], "/jwks");
    let sent: Vec<String> =
        receiver.records().iter().filter_map(|r| r["jwks_fetch"].as_str().map(str::to_string)).collect();
    let expected = format!("00-{trace}-{}-01", fetch["span_id"].as_str().unwrap_or(""));
    assert!(sent.contains(&expected), "the fetch carried {sent:?}, not {expected}");

    // Sampling: nothing outside the callers' traces reached the receiver (the admin's login and
    // the IdP's creation had no traceparent; the ratio is 0).
    let traced: std::collections::BTreeSet<String> =
        receiver.spans().iter().map(|s| s["trace_id"].as_str().unwrap_or("").to_string()).collect();
    assert_eq!(traced.len(), 3, "only the three traced requests were exported: {traced:?}");
}
