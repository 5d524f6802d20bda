//! `--fga`: what the OpenFGA assignment driver itself costs. The store here is OpenFGA's engine
//! behind the test server (`tests/openfga/server.py`), far slower than a real OpenFGA, so the
//! figures are idnode's own: the same requests run on a node with the raft driver and on one
//! with the openfga driver; for the latter the node's own clock of its store calls
//! (`idnode_assignment_driver_call_duration_seconds`) and the server's call counts give the
//! time spent waiting for the store and the calls made per request. What the driver adds
//! besides waiting is `openfga latency − store time − raft latency` (means; where the driver's
//! calls run concurrently their summed time is no wait time and no figure is given).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use reqwest::{Client, Method};
use serde_json::{json, Value};

use crate::api::{call, call_retry, password_body, validate};
use crate::cluster::IdCluster;
use crate::util::progress;

const ROLES: &str = "admin:admin, manager:manager, member:member, reader:reader";

/// The test server, stopped when dropped (its stdin closes with it).
struct Store {
    child: Child,
    url: String,
    store_id: String,
}

impl Store {
    fn start() -> Result<Store> {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/openfga/server.py");
        let mut child = Command::new("python3")
            .args([script, "--port", "0", "--max-seconds", "1800"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .context("start tests/openfga/server.py")?;
        let mut lines = BufReader::new(child.stdout.take().context("stdout")?).lines();
        let mut next = |prefix: &str| -> Result<String> {
            let line = lines.next().context("test server output")??;
            Ok(line.strip_prefix(prefix).with_context(|| format!("{prefix:?} expected: {line}"))?.trim().to_owned())
        };
        let url = format!("http://{}", next("listening ")?);
        let store_id = next("store_id ")?;
        Ok(Store { child, url, store_id })
    }

    async fn calls(&self, http: &Client) -> Result<f64> {
        let r = call(http, Method::GET, &format!("{}/_test/calls", self.url), None, None).await?;
        Ok(r.json["calls"].as_object().map_or(0.0, |m| m.values().filter_map(Value::as_f64).sum()))
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Seconds the node has waited for the store so far (every operation).
async fn store_seconds(http: &Client, ops: &str) -> Result<f64> {
    let r = call(http, Method::GET, &format!("{ops}/metrics"), None, None).await?;
    Ok(r.text
        .lines()
        .filter(|l| l.starts_with("idnode_assignment_driver_call_duration_seconds_sum"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}

/// One driver's figures per operation: (name, mean ms, store ms per request, calls per request).
type Figures = Vec<(&'static str, f64, f64, f64)>;

async fn measure(bin: &Path, dir: &Path, store: Option<&Store>, rounds: usize) -> Result<Figures> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("rm -r {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir)?;
    let mut c = IdCluster::new(bin, dir, 1)?;
    if let Some(s) = store {
        for (k, v) in [
            ("IDNODE_ASSIGNMENT_DRIVER", "openfga"),
            ("IDNODE_OPENFGA_API_URL", s.url.as_str()),
            ("IDNODE_OPENFGA_STORE_ID", s.store_id.as_str()),
            ("IDNODE_OPENFGA_ROLE_TO_RELATION", ROLES),
        ] {
            c.env.push((k.to_owned(), v.to_owned()));
        }
    }
    c.start_all().await?;
    let result = async {
        let (http, api, ops) = (c.http.clone(), c.nodes[0].api.clone(), c.nodes[0].ops.clone());
        let body = password_body("admin", &c.admin_password, "admin");
        let tokens = format!("{api}/v3/auth/tokens");
        let admin =
            call_retry(&http, Method::POST, &tokens, None, Some(&body)).await?.subject_token.context("admin")?;
        let make = |kind: &'static str, fields: Value| {
            let (http, url, admin) = (http.clone(), format!("{api}/v3/{kind}s"), admin.clone());
            async move {
                let r = call_retry(&http, Method::POST, &url, Some(&admin), Some(&json!({ kind: fields }))).await?;
                r.json[kind]["id"].as_str().map(str::to_owned).with_context(|| format!("create {kind}: {}", r.text))
            }
        };
        let user = make("user", json!({"name": "fga-bench", "password": "pw", "domain_id": "default"})).await?;
        let project = make("project", json!({"name": "fga-bench", "domain_id": "default"})).await?;
        let roles = call_retry(&http, Method::GET, &format!("{api}/v3/roles?name=member"), Some(&admin), None).await?;
        let member = roles.json["roles"][0]["id"].as_str().context("member role")?.to_owned();
        let grant = format!("{api}/v3/projects/{project}/users/{user}/roles/{member}");
        let r = call_retry(&http, Method::PUT, &grant, Some(&admin), None).await?;
        if !r.status.is_success() {
            bail!("grant: {} {}", r.status, r.text);
        }
        let issue = password_body("fga-bench", "pw", "fga-bench");
        let subject =
            call_retry(&http, Method::POST, &tokens, None, Some(&issue)).await?.subject_token.context("user")?;
        let mut out = Vec::new();
        for op in [
            "validate a project token",
            "issue a project token",
            "list a user's roles on a project",
            "list a user's roles everywhere",
        ] {
            let (s0, k0) = (
                store_seconds(&http, &ops).await?,
                match store {
                    Some(s) => s.calls(&http).await?,
                    None => 0.0,
                },
            );
            let mut took = Vec::with_capacity(rounds);
            for _ in 0..rounds {
                let t = Instant::now();
                let r = match op {
                    "validate a project token" => validate(&http, &tokens, &admin, &subject).await?,
                    "issue a project token" => call(&http, Method::POST, &tokens, None, Some(&issue)).await?,
                    "list a user's roles on a project" => {
                        let q =
                            format!("{api}/v3/role_assignments?user.id={user}&scope.project.id={project}&effective");
                        call(&http, Method::GET, &q, Some(&admin), None).await?
                    }
                    _ => {
                        call(
                            &http,
                            Method::GET,
                            &format!("{api}/v3/role_assignments?user.id={user}&effective"),
                            Some(&admin),
                            None,
                        )
                        .await?
                    }
                };
                took.push(t.elapsed().as_secs_f64());
                if !r.status.is_success() {
                    bail!("{op}: {} {}", r.status, r.text);
                }
            }
            let (s1, k1) = (
                store_seconds(&http, &ops).await?,
                match store {
                    Some(s) => s.calls(&http).await?,
                    None => 0.0,
                },
            );
            let n = rounds as f64;
            let mean = took.iter().sum::<f64>() * 1000.0 / n;
            out.push((op, mean, (s1 - s0) * 1000.0 / n, (k1 - k0) / n));
        }
        Ok::<_, anyhow::Error>(out)
    }
    .await;
    c.kill_all().await;
    result
}

/// The `--fga` run: a Markdown section with the figures.
pub async fn bench_fga(bin: &Path, out: &Path, rounds: usize) -> Result<String> {
    progress("== assignment driver: raft");
    let raft = measure(bin, &out.join("raft"), None, rounds).await?;
    progress("== assignment driver: openfga (OpenFGA's engine behind the test server)");
    let store = Store::start()?;
    let fga = measure(bin, &out.join("openfga"), Some(&store), rounds).await?;
    let mut table = String::from(
        "## OpenFGA assignment driver\n\n| request (1 node, sequential, mean) | raft | openfga | store calls | \
         waiting for the store | driver's own cost |\n|---|---|---|---|---|---|\n",
    );
    for ((op, r, _, _), (_, f, wait, calls)) in raft.iter().zip(&fga) {
        // Concurrent calls overlap: their summed time is no longer time the request waited.
        let own = if wait < f { format!("{:.2} ms", f - wait - r) } else { "calls overlap".to_owned() };
        table.push_str(&format!("| {op} | {r:.2} ms | {f:.2} ms | {calls:.1} | {wait:.2} ms | {own} |\n"));
    }
    Ok(table)
}
