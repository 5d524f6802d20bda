//! `idnode-bench`: measures idnode (a 1-node and a 3-node cluster of real processes on loopback)
//! with `wrk` and the shared Keystone wrk script, and optionally the reference Python Keystone
//! with the same script in the same run. Prints a Markdown table on stdout (progress on stderr).
//!
//! It builds nothing: it runs an existing `idnode` binary (argument, `IDNODE_BIN`, or
//! `$CARGO_TARGET_DIR/debug/idnode`; the dev profile builds dependencies optimised).
//!
//! Workloads (each: a warm-up run, then a measured run, `wrk -t2 -c16` by default):
//!   validate  GET  /v3/auth/tokens   X-Auth-Token=admin, X-Subject-Token=bench-user token
//!   issue     POST /v3/auth/tokens   password, project-scoped (bench-user on bench-project)
//!   create    POST /v3/projects      unique names (lua MODE=project)
//! On the 3-node cluster validate and create also run against a follower.
//! Besides: idle RSS (VmRSS of the node processes, summed), RSS after load, cold start (spawn to
//! first `/ready` 200; for Keystone: run.sh's `cold_start_s`, start to first `GET /v3` 200).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use base64::Engine;
use clap::Parser;
use reqwest::{Client, Method, StatusCode};
use serde_json::{json, Value};

const KEYSTONE_BASE: &str = "http://127.0.0.1:35357";
const ANCHORS: &str = "/opt/anchors";
const READY_TIMEOUT: Duration = Duration::from_secs(120);
const POLL: Duration = Duration::from_millis(50);

#[derive(Parser, Debug, Clone)]
#[command(name = "idnode-bench", about = "Benchmark idnode (1 and 3 nodes) against the reference Keystone with wrk")]
struct Args {
    /// Path of the idnode binary (default: $IDNODE_BIN, then $CARGO_TARGET_DIR/debug/idnode).
    idnode: Option<PathBuf>,
    /// Also run the workloads against the reference Python Keystone (memcached variant).
    #[arg(long)]
    reference: bool,
    /// Measured seconds per workload.
    #[arg(long, default_value_t = 10)]
    duration: u64,
    /// Warm-up seconds per workload (not measured).
    #[arg(long, default_value_t = 3)]
    warmup: u64,
    /// wrk threads.
    #[arg(long, default_value_t = 2)]
    threads: u32,
    /// wrk connections.
    #[arg(long, default_value_t = 16)]
    conns: u32,
    /// Cluster sizes to measure, comma separated.
    #[arg(long, value_delimiter = ',', default_values_t = [1u32, 3])]
    sizes: Vec<u32>,
    /// Directory of the shared keystone-reference scripts (lua/keystone.lua, setup.sh, run.sh, ...).
    #[arg(long)]
    keystone_reference: Option<PathBuf>,
    /// Where raw wrk output and node logs go (default: a new directory under the temp dir).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Measure only the reference Keystone (with --reference), no idnode cluster.
    #[arg(long)]
    skip_idnode: bool,
    /// Extra fixture users and projects (the reference fixture's N_EXTRA).
    #[arg(long, default_value_t = 10)]
    n_extra: u32,
}

// ---------------------------------------------------------------------------------------------
// small helpers
// ---------------------------------------------------------------------------------------------

fn random_bytes(n: usize) -> Result<Vec<u8>> {
    let mut buf = vec![0u8; n];
    File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut buf)).context("read /dev/urandom")?;
    Ok(buf)
}

fn random_hex(n: usize) -> Result<String> {
    Ok(random_bytes(n)?.iter().map(|b| format!("{b:02x}")).collect())
}

fn free_ports(n: usize) -> Result<Vec<u16>> {
    let ls = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()
        .context("bind 127.0.0.1:0")?;
    ls.iter().map(|l| Ok(l.local_addr()?.port())).collect::<std::io::Result<Vec<_>>>().context("local_addr")
}

fn progress(msg: impl AsRef<str>) {
    eprintln!("[idnode-bench] {}", msg.as_ref());
}

/// VmRSS of a process in KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok())
}

/// utime + stime of a process in clock ticks.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = s.rsplit_once(')')?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state); utime is field 14, stime 15
    let ut: u64 = f.get(11)?.parse().ok()?;
    let st: u64 = f.get(12)?.parse().ok()?;
    Some(ut + st)
}

fn children_of(ppid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let parent =
            stat.rsplit_once(')').and_then(|(_, r)| r.split_whitespace().nth(1)).and_then(|p| p.parse::<u32>().ok());
        if parent == Some(ppid) {
            out.push(pid);
        }
    }
    out
}

/// Share of all CPUs busy over `secs` seconds, in percent (other jobs on a shared machine).
async fn host_busy_pct(secs: u64) -> Option<f64> {
    fn ticks() -> Option<(u64, u64)> {
        let s = std::fs::read_to_string("/proc/stat").ok()?;
        let line = s.lines().find(|l| l.starts_with("cpu "))?;
        let v: Vec<u64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
        let total: u64 = v.iter().take(8).sum();
        let idle = v.get(3)? + v.get(4)?;
        Some((total, idle))
    }
    let (t0, i0) = ticks()?;
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let (t1, i1) = ticks()?;
    let dt = t1.saturating_sub(t0);
    (dt > 0).then(|| 100.0 * (dt - i1.saturating_sub(i0).min(dt)) as f64 / dt as f64)
}

/// Waits (at most 60 s) until the processes stop burning CPU, so requests wrk left queued do not
/// bleed into the next case (the same idea as the reference bench.sh's `drain`).
async fn drain(pids: &[u32]) {
    let total = |pids: &[u32]| pids.iter().filter_map(|p| cpu_ticks(*p)).sum::<u64>();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let a = total(pids);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let b = total(pids);
        if b.saturating_sub(a) <= 1 {
            return;
        }
    }
}

fn http_client(timeout: Duration) -> Result<Client> {
    Client::builder()
        .no_proxy()
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(2))
        .build()
        .context("build HTTP client")
}

struct Resp {
    status: StatusCode,
    subject_token: Option<String>,
    json: Value,
    text: String,
}

async fn call(http: &Client, method: Method, url: &str, token: Option<&str>, body: Option<&Value>) -> Result<Resp> {
    let mut req = http.request(method.clone(), url);
    if let Some(t) = token {
        req = req.header("X-Auth-Token", t);
    }
    if let Some(b) = body {
        req = req.json(b);
    }
    let r = req.send().await.with_context(|| format!("{method} {url}"))?;
    let status = r.status();
    let subject_token = r.headers().get("X-Subject-Token").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let text = r.text().await.with_context(|| format!("{method} {url}: body"))?;
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    Ok(Resp { status, subject_token, json, text })
}

/// `call` retried on transport errors and 5xx (e.g. 503 while there is no leader) until 60 s.
async fn call_retry(
    http: &Client,
    method: Method,
    url: &str,
    token: Option<&str>,
    body: Option<&Value>,
) -> Result<Resp> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let res = call(http, method.clone(), url, token, body).await;
        let retry = match &res {
            Ok(r) => r.status.is_server_error(),
            Err(_) => true,
        };
        if !retry || Instant::now() >= deadline {
            return res;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn password_body(user: &str, password: &str, project: &str) -> Value {
    json!({"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": user, "domain": {"id": "default"}, "password": password}}},
        "scope": {"project": {"name": project, "domain": {"id": "default"}}}}})
}

// ---------------------------------------------------------------------------------------------
// wrk
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Default)]
struct WrkResult {
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
    requests: u64,
    non2xx: u64,
    sock_err: u64,
    /// CPU milliseconds of the server processes per completed request.
    cpu_ms_per_req: Option<f64>,
    /// RSS of the server processes right after the measured run, KiB.
    rss_after_kib: Option<u64>,
}

fn parse_wrkresult(out: &str) -> Option<WrkResult> {
    let line = out.lines().find(|l| l.starts_with("WRKRESULT"))?;
    let kv: BTreeMap<&str, &str> = line.split_whitespace().skip(1).filter_map(|p| p.split_once('=')).collect();
    let f = |k: &str| kv.get(k).and_then(|v| v.parse::<f64>().ok());
    Some(WrkResult {
        rps: f("rps")?,
        p50_ms: f("p50_ms")?,
        p99_ms: f("p99_ms")?,
        requests: f("requests")? as u64,
        non2xx: f("non2xx").unwrap_or(0.0) as u64,
        sock_err: f("sock_err").unwrap_or(0.0) as u64,
        cpu_ms_per_req: None,
        rss_after_kib: None,
    })
}

struct Wrk {
    lua: PathBuf,
    out: PathBuf,
    threads: u32,
    conns: u32,
    duration: u64,
    warmup: u64,
}

impl Wrk {
    async fn run_once(&self, file: &Path, secs: u64, url: &str, vars: &[(&str, String)], tag: &str) -> Result<String> {
        let mut cmd = tokio::process::Command::new("wrk");
        cmd.arg(format!("-t{}", self.threads))
            .arg(format!("-c{}", self.conns))
            .arg(format!("-d{secs}s"))
            .arg("--timeout")
            .arg("30s")
            .arg("--latency")
            .arg("-s")
            .arg(&self.lua)
            .arg(url)
            .env("RUN_TAG", tag)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let child = cmd.spawn().context("spawn wrk")?;
        let out = tokio::time::timeout(Duration::from_secs(secs + 60), child.wait_with_output())
            .await
            .map_err(|_| anyhow!("wrk did not finish within {}s", secs + 60))?
            .context("wait for wrk")?;
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        std::fs::write(file, &text).with_context(|| format!("write {}", file.display()))?;
        Ok(text)
    }

    /// Warm-up, drain, measured run, drain. `pids` are the server processes (for CPU/request
    /// and draining).
    async fn case(&self, label: &str, url: &str, vars: &[(&str, String)], pids: &[u32]) -> Result<WrkResult> {
        let stamp = chrono::Utc::now().format("%H%M%S%3f").to_string();
        progress(format!("  {label}: wrk -t{} -c{} -d{}s {url}", self.threads, self.conns, self.duration));
        if self.warmup > 0 {
            self.run_once(&self.out.join(format!("{label}.warmup.txt")), self.warmup, url, vars, &format!("w{stamp}"))
                .await?;
            drain(pids).await;
        }
        let t0: u64 = pids.iter().filter_map(|p| cpu_ticks(*p)).sum();
        let text = self
            .run_once(&self.out.join(format!("{label}.txt")), self.duration, url, vars, &format!("r{stamp}"))
            .await?;
        let t1: u64 = pids.iter().filter_map(|p| cpu_ticks(*p)).sum();
        let rss_after: u64 = pids.iter().filter_map(|p| rss_kib(*p)).sum();
        drain(pids).await;
        let mut r =
            parse_wrkresult(&text).ok_or_else(|| anyhow!("{label}: no WRKRESULT line in wrk output:\n{text}"))?;
        // SAFETY: sysconf has no preconditions.
        let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let tck = if tck > 0 { tck as f64 } else { 100.0 };
        if !pids.is_empty() {
            r.rss_after_kib = Some(rss_after);
        }
        if r.requests > 0 && !pids.is_empty() {
            r.cpu_ms_per_req = Some(1000.0 * (t1.saturating_sub(t0)) as f64 / tck / r.requests as f64);
        }
        progress(format!(
            "    {:.1} req/s, p50 {:.2} ms, p99 {:.2} ms, non-2xx {}, socket errors {}",
            r.rps, r.p50_ms, r.p99_ms, r.non2xx, r.sock_err
        ));
        Ok(r)
    }
}

fn ensure_wrk() -> Result<()> {
    let have =
        || std::process::Command::new("wrk").arg("-v").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    if have() {
        return Ok(());
    }
    progress("wrk not found: apt-get install -y wrk");
    let st = std::process::Command::new("sh")
        .arg("-c")
        .arg("apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk")
        .status()
        .context("run apt-get")?;
    if !st.success() || !have() {
        bail!("wrk is not installed and apt-get could not install it");
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// results
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Default, Clone)]
struct SystemResult {
    label: String,
    cases: BTreeMap<&'static str, WrkResult>,
    idle_rss_kib: Option<u64>,
    load_rss_kib: Option<u64>,
    cold_start_s: Option<f64>,
    restart_s: Option<f64>,
    /// RSS right after the cold start, before the fixture was created, KiB
    start_rss_kib: Option<u64>,
    /// host CPU busy % over 3 s before this system was started (load from other jobs)
    host_busy_before: Option<f64>,
    /// issue/validate ran with admin credentials (fixture fallback)
    as_admin: bool,
    notes: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// idnode clusters
// ---------------------------------------------------------------------------------------------

struct IdNode {
    id: u32,
    api: String,
    ops: String,
    args: Vec<String>,
    kek: String,
    log: PathBuf,
    child: Option<tokio::process::Child>,
}

struct IdCluster {
    bin: PathBuf,
    dir: PathBuf,
    secret: String,
    admin_password: String,
    nodes: Vec<IdNode>,
    http: Client,
}

impl IdCluster {
    fn new(bin: &Path, dir: &Path, n: u32) -> Result<Self> {
        let ports = free_ports(3 * n as usize)?;
        let peers: Vec<String> = (0..n as usize).map(|i| format!("{}=127.0.0.1:{}", i + 1, ports[3 * i + 2])).collect();
        let initial = peers.join(",");
        let mut nodes = Vec::new();
        for i in 0..n as usize {
            let id = i as u32 + 1;
            let data = dir.join(format!("node-{id}"));
            std::fs::create_dir_all(&data).with_context(|| format!("mkdir {}", data.display()))?;
            let (api, ops, peer) = (ports[3 * i], ports[3 * i + 1], ports[3 * i + 2]);
            let args = vec![
                "serve".to_owned(),
                "--node-id".to_owned(),
                id.to_string(),
                "--initial-cluster".to_owned(),
                initial.clone(),
                "--data-dir".to_owned(),
                data.display().to_string(),
                "--listen".to_owned(),
                format!("127.0.0.1:{api}"),
                "--ops-listen".to_owned(),
                format!("127.0.0.1:{ops}"),
                "--peer-listen".to_owned(),
                format!("127.0.0.1:{peer}"),
                "--public-url".to_owned(),
                format!("http://127.0.0.1:{api}"),
            ];
            nodes.push(IdNode {
                id,
                api: format!("http://127.0.0.1:{api}"),
                ops: format!("http://127.0.0.1:{ops}"),
                args,
                kek: base64::engine::general_purpose::STANDARD.encode(random_bytes(32)?),
                log: dir.join(format!("node-{id}.log")),
                child: None,
            });
        }
        Ok(IdCluster {
            bin: bin.to_path_buf(),
            dir: dir.to_path_buf(),
            secret: random_hex(24)?,
            admin_password: format!("bench-admin-{}", random_hex(8)?),
            nodes,
            http: http_client(Duration::from_secs(30))?,
        })
    }

    fn spawn(&mut self, i: usize) -> Result<()> {
        let n = &mut self.nodes[i];
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&n.log)
            .with_context(|| format!("open {}", n.log.display()))?;
        let log2 = log.try_clone().context("clone log handle")?;
        let mut cmd = tokio::process::Command::new(&self.bin);
        // the server reads every IDNODE_* variable as configuration: pass only ours
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("IDNODE_") {
                cmd.env_remove(&k);
            }
        }
        let child = cmd
            .args(&n.args)
            .env("IDNODE_CLUSTER_SECRET", &self.secret)
            .env("IDNODE_ADMIN_PASSWORD", &self.admin_password)
            .env("IDNODE_KEK", &n.kek)
            .env("IDNODE_LOG", std::env::var("IDNODE_BENCH_LOG").unwrap_or_else(|_| "warn".to_owned()))
            .env_remove("HTTP_PROXY")
            .env_remove("http_proxy")
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log2))
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("spawn {}", self.bin.display()))?;
        n.child = Some(child);
        Ok(())
    }

    fn pids(&self) -> Vec<u32> {
        self.nodes.iter().filter_map(|n| n.child.as_ref().and_then(|c| c.id())).collect()
    }

    async fn wait_ready(&mut self, i: usize, deadline: Instant) -> Result<()> {
        let url = format!("{}/ready", self.nodes[i].ops);
        let http = http_client(Duration::from_secs(2))?;
        loop {
            if let Some(c) = self.nodes[i].child.as_mut() {
                if let Some(st) = c.try_wait().context("try_wait")? {
                    bail!(
                        "node {} exited ({st}) before it was ready; log: {}",
                        self.nodes[i].id,
                        self.nodes[i].log.display()
                    );
                }
            }
            if let Ok(r) = http.get(&url).send().await {
                if r.status() == StatusCode::OK {
                    return Ok(());
                }
            }
            if Instant::now() >= deadline {
                bail!(
                    "node {} not ready within {READY_TIMEOUT:?}; log: {}",
                    self.nodes[i].id,
                    self.nodes[i].log.display()
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Spawns every node; returns seconds from the first spawn until every node is ready.
    async fn start_all(&mut self) -> Result<f64> {
        let t0 = Instant::now();
        for i in 0..self.nodes.len() {
            self.spawn(i)?;
        }
        let deadline = t0 + READY_TIMEOUT;
        for i in 0..self.nodes.len() {
            self.wait_ready(i, deadline).await?;
        }
        Ok(t0.elapsed().as_secs_f64())
    }

    async fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.nodes[i].child.take() {
            let _ = c.kill().await;
        }
    }

    async fn kill_all(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill(i).await;
        }
    }

    /// Index of the node reporting `idnode_raft_is_leader 1` (polled, 60 s).
    async fn leader(&self) -> Result<usize> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            for (i, n) in self.nodes.iter().enumerate() {
                if let Ok(r) = self.http.get(format!("{}/metrics", n.ops)).send().await {
                    if let Ok(t) = r.text().await {
                        let lead = t.lines().any(|l| {
                            l.strip_prefix("idnode_raft_is_leader")
                                .map(|rest| {
                                    let v = rest.rsplit('}').next().unwrap_or(rest);
                                    v.split_whitespace().next() == Some("1")
                                })
                                .unwrap_or(false)
                        });
                        if lead {
                            return Ok(i);
                        }
                    }
                }
            }
            if Instant::now() >= deadline {
                bail!("no node reports idnode_raft_is_leader 1");
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

struct Fixture {
    /// project-scoped admin token (X-Auth-Token of validate and create)
    admin: String,
    /// the token validated (X-Subject-Token)
    subject: String,
    /// password-auth body of the issue workload
    issue: Value,
    /// subject and issue use the admin user (fallback) instead of bench-user
    as_admin: bool,
    notes: Vec<String>,
}

/// The fixture of the reference bench (bench_fixture.py), created through the Keystone API:
/// bench-project, bench-user (role member on it), n_extra extra projects and users.
/// Returns (admin token, subject token, issue body, notes).
async fn fixture(http: &Client, base: &str, admin_password: &str, n_extra: u32, force_admin: bool) -> Result<Fixture> {
    let mut notes = Vec::new();
    let url = |p: &str| format!("{base}/v3{p}");
    // `/ready` can answer 200 before the new cluster has bootstrapped its admin user: retry
    // until the admin token is issued (60 s).
    let deadline = Instant::now() + Duration::from_secs(60);
    let admin = loop {
        let r = call_retry(
            http,
            Method::POST,
            &url("/auth/tokens"),
            None,
            Some(&password_body("admin", admin_password, "admin")),
        )
        .await?;
        match r.subject_token.filter(|_| r.status.is_success()) {
            Some(t) => break t,
            None if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(100)).await,
            None => bail!("admin token: {} {}", r.status, r.text),
        }
    };
    let tok = Some(admin.as_str());

    async fn ensure(
        http: &Client,
        base: &str,
        tok: Option<&str>,
        kind: &str,
        name: &str,
        body: Value,
    ) -> Result<String> {
        let r = call_retry(http, Method::GET, &format!("{base}/v3/{kind}s?name={name}"), tok, None).await?;
        if let Some(id) = r.json[format!("{kind}s")][0]["id"].as_str() {
            return Ok(id.to_owned());
        }
        let r = call_retry(http, Method::POST, &format!("{base}/v3/{kind}s"), tok, Some(&body)).await?;
        if !r.status.is_success() {
            bail!("create {kind} {name}: {} {}", r.status, r.text);
        }
        r.json[kind]["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| anyhow!("create {kind} {name}: no id in {}", r.text))
    }

    let project = ensure(
        http,
        base,
        tok,
        "project",
        "bench-project",
        json!({"project": {"name": "bench-project", "domain_id": "default", "description": "bench fixture"}}),
    )
    .await?;
    let user = ensure(
        http,
        base,
        tok,
        "user",
        "bench-user",
        json!({"user": {"name": "bench-user", "domain_id": "default", "password": "bench-user-pw",
                        "default_project_id": project, "email": "bench-user@example.org"}}),
    )
    .await?;
    // the role steps are optional: a server without /v3/roles falls back to admin credentials
    let assigned: Result<()> = async {
        let member = ensure(http, base, tok, "role", "member", json!({"role": {"name": "member"}})).await?;
        let r =
            call_retry(http, Method::PUT, &url(&format!("/projects/{project}/users/{user}/roles/{member}")), tok, None)
                .await?;
        if !r.status.is_success() {
            bail!("role assignment: {} {}", r.status, r.text);
        }
        Ok(())
    }
    .await;
    if let Err(e) = &assigned {
        notes.push(format!("no role for bench-user on bench-project ({e:#})"));
    }
    for i in 0..n_extra {
        let name = format!("bench-extra-{i}");
        let p = ensure(
            http,
            base,
            tok,
            "project",
            &name,
            json!({"project": {"name": name, "domain_id": "default", "description": "bench fixture"}}),
        )
        .await?;
        ensure(
            http,
            base,
            tok,
            "user",
            &name,
            json!({"user": {"name": name, "domain_id": "default", "password": format!("bench-extra-pw-{i}"),
                            "default_project_id": p, "email": format!("{name}@example.org")}}),
        )
        .await?;
    }
    let as_admin = |admin: String, mut notes: Vec<String>, why: String| {
        notes.push(format!("admin credentials used for the issue and validate workloads: {why}"));
        let issue = password_body("admin", admin_password, "admin");
        Ok(Fixture { subject: admin.clone(), admin, issue, as_admin: true, notes })
    };
    if force_admin {
        return as_admin(admin, notes, "as in the idnode runs, for the same workload".to_owned());
    }
    if assigned.is_err() {
        return as_admin(admin, notes, "bench-user has no role to scope to".to_owned());
    }
    let issue = password_body("bench-user", "bench-user-pw", "bench-project");
    let r = call_retry(http, Method::POST, &url("/auth/tokens"), None, Some(&issue)).await?;
    match r.subject_token.filter(|_| r.status.is_success()) {
        Some(subject) => Ok(Fixture { admin, subject, issue, as_admin: false, notes }),
        None => as_admin(admin, notes, format!("bench-user project-scoped token failed ({})", r.status)),
    }
}

async fn bench_idnode(args: &Args, bin: &Path, wrk: &Wrk, n: u32, out: &Path) -> Result<SystemResult> {
    let label = if n == 1 { "idnode 1 node".to_owned() } else { format!("idnode {n} nodes") };
    progress(format!("== {label}"));
    let dir = out.join(format!("idnode-{n}"));
    if dir.exists() {
        // a previous run's data dirs (other keys): start fresh
        std::fs::remove_dir_all(&dir).with_context(|| format!("rm -r {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("mkdir {}", dir.display()))?;
    let mut c = IdCluster::new(bin, &dir, n)?;
    let host_busy_before = host_busy_pct(3).await;
    let mut res = SystemResult { label, host_busy_before, ..Default::default() };
    let result = async {
        let cold = c.start_all().await?;
        res.cold_start_s = Some(cold);
        progress(format!("  cold start (spawn to /ready 200 on every node): {cold:.2}s"));
        let leader = c.leader().await?;
        res.start_rss_kib = Some(c.pids().iter().filter_map(|p| rss_kib(*p)).sum());
        let follower = (leader + 1) % c.nodes.len();
        let fx = fixture(&c.http, &c.nodes[leader].api, &c.admin_password, args.n_extra, false).await?;
        res.notes.extend(fx.notes);
        res.as_admin = fx.as_admin;
        let (admin, subject, issue) = (fx.admin, fx.subject, fx.issue);
        let issue_file = dir.join("issue.json");
        std::fs::write(&issue_file, serde_json::to_vec(&issue)?).context("write issue.json")?;
        // idle: let replication and background work settle, then read RSS
        drain(&c.pids()).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        res.idle_rss_kib = Some(c.pids().iter().filter_map(|p| rss_kib(*p)).sum());

        let pids = c.pids();
        let lead_api = c.nodes[leader].api.clone();
        let get_vars =
            vec![("MODE", "get".to_owned()), ("AUTH_TOKEN", admin.clone()), ("SUBJECT_TOKEN", subject.clone())];
        let w = Wrk {
            lua: wrk.lua.clone(),
            out: dir.clone(),
            threads: wrk.threads,
            conns: wrk.conns,
            duration: wrk.duration,
            warmup: wrk.warmup,
        };
        res.cases
            .insert("validate", w.case("validate", &format!("{lead_api}/v3/auth/tokens"), &get_vars, &pids).await?);
        if n > 1 {
            let f_api = c.nodes[follower].api.clone();
            res.cases.insert(
                "validate_follower",
                w.case("validate_follower", &format!("{f_api}/v3/auth/tokens"), &get_vars, &pids).await?,
            );
        }
        res.cases.insert(
            "issue",
            w.case(
                "issue",
                &format!("{lead_api}/v3/auth/tokens"),
                &[("MODE", "post".to_owned()), ("BODY_FILE", issue_file.display().to_string())],
                &pids,
            )
            .await?,
        );
        let create_vars = vec![("MODE", "project".to_owned()), ("AUTH_TOKEN", admin.clone())];
        res.cases.insert("create", w.case("create", &format!("{lead_api}/v3/projects"), &create_vars, &pids).await?);
        if n > 1 {
            let f_api = c.nodes[follower].api.clone();
            res.cases.insert(
                "create_follower",
                w.case("create_follower", &format!("{f_api}/v3/projects"), &create_vars, &pids).await?,
            );
        }
        res.load_rss_kib = Some(c.pids().iter().filter_map(|p| rss_kib(*p)).sum());

        if n == 1 {
            // restart on the existing data dir (now holding the fixture and the created projects)
            c.kill(0).await;
            let t0 = Instant::now();
            c.spawn(0)?;
            c.wait_ready(0, t0 + READY_TIMEOUT).await?;
            res.restart_s = Some(t0.elapsed().as_secs_f64());
            progress(format!("  restart on existing data dir: {:.2}s", t0.elapsed().as_secs_f64()));
        }
        Ok::<(), anyhow::Error>(())
    }
    .await;
    let result = match result {
        Ok(()) => Ok(()),
        Err(e) => {
            // say which nodes had died on their own, and how
            let mut dead = Vec::new();
            for n in c.nodes.iter_mut() {
                if let Some(Ok(Some(st))) = n.child.as_mut().map(|ch| ch.try_wait()) {
                    dead.push(format!("node {} exited ({st}), log {}", n.id, n.log.display()));
                }
            }
            if dead.is_empty() {
                Err(e)
            } else {
                Err(e.context(dead.join("; ")))
            }
        }
    };
    c.kill_all().await;
    result.map(|_| res)
}

// ---------------------------------------------------------------------------------------------
// reference Keystone
// ---------------------------------------------------------------------------------------------

async fn run_script(script: &Path, envs: &[(&str, &str)], log: &Path, timeout: Duration) -> Result<String> {
    progress(format!("  {} (log {})", script.display(), log.display()));
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg(script).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).kill_on_drop(true);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let child = cmd.spawn().with_context(|| format!("run {}", script.display()))?;
    let out = tokio::time::timeout(timeout, child.wait_with_output())
        .await
        .map_err(|_| anyhow!("{} did not finish within {timeout:?}", script.display()))?
        .context("wait")?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::write(log, &text);
    if !out.status.success() {
        bail!("{} failed ({}); see {}", script.display(), out.status, log.display());
    }
    Ok(text)
}

fn keystone_pids() -> Vec<u32> {
    let Ok(s) = std::fs::read_to_string(format!("{ANCHORS}/keystone.pid")) else {
        return Vec::new();
    };
    let Ok(master) = s.trim().parse::<u32>() else {
        return Vec::new();
    };
    let mut v = vec![master];
    v.extend(children_of(master));
    v
}

async fn bench_reference(args: &Args, refdir: &Path, wrk: &Wrk, out: &Path, force_admin: bool) -> Result<SystemResult> {
    progress("== reference Keystone (KEYSTONE_CACHE=memcache)");
    let dir = out.join("keystone");
    std::fs::create_dir_all(&dir).with_context(|| format!("mkdir {}", dir.display()))?;
    let env = [("KEYSTONE_CACHE", "memcache")];
    let stop = refdir.join("stop.sh");
    let _ = run_script(&stop, &env, &dir.join("stop0.log"), Duration::from_secs(60)).await;
    run_script(
        &refdir.join("setup.sh"),
        &[("KEYSTONE_CACHE", "memcache"), ("RESET", "1")],
        &dir.join("setup.log"),
        Duration::from_secs(1200),
    )
    .await?;
    let host_busy_before = host_busy_pct(3).await;
    let mut res = SystemResult { label: "Keystone + memcached".to_owned(), host_busy_before, ..Default::default() };
    let result = async {
        let run = run_script(&refdir.join("run.sh"), &env, &dir.join("run.log"), Duration::from_secs(180)).await?;
        res.cold_start_s =
            run.lines().find_map(|l| l.strip_prefix("cold_start_s=")).and_then(|v| v.trim().parse().ok());
        let pw = std::fs::read_to_string(format!("{ANCHORS}/keystone-data/admin-password"))
            .context("read the reference admin password")?;
        let pw = pw.trim().to_owned();
        let http = http_client(Duration::from_secs(120))?;
        let fx = fixture(&http, KEYSTONE_BASE, &pw, args.n_extra, force_admin).await?;
        res.notes.extend(fx.notes);
        res.as_admin = fx.as_admin;
        let (admin, subject, issue) = (fx.admin, fx.subject, fx.issue);
        let issue_file = dir.join("issue.json");
        std::fs::write(&issue_file, serde_json::to_vec(&issue)?).context("write issue.json")?;
        let pids = keystone_pids();
        drain(&pids).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        res.idle_rss_kib = Some(keystone_pids().iter().filter_map(|p| rss_kib(*p)).sum());
        let w = Wrk {
            lua: wrk.lua.clone(),
            out: dir.clone(),
            threads: wrk.threads,
            conns: wrk.conns,
            duration: wrk.duration,
            warmup: wrk.warmup,
        };
        let get_vars =
            vec![("MODE", "get".to_owned()), ("AUTH_TOKEN", admin.clone()), ("SUBJECT_TOKEN", subject.clone())];
        res.cases.insert(
            "validate",
            w.case("validate", &format!("{KEYSTONE_BASE}/v3/auth/tokens"), &get_vars, &pids).await?,
        );
        res.cases.insert(
            "issue",
            w.case(
                "issue",
                &format!("{KEYSTONE_BASE}/v3/auth/tokens"),
                &[("MODE", "post".to_owned()), ("BODY_FILE", issue_file.display().to_string())],
                &pids,
            )
            .await?,
        );
        res.cases.insert(
            "create",
            w.case(
                "create",
                &format!("{KEYSTONE_BASE}/v3/projects"),
                &[("MODE", "project".to_owned()), ("AUTH_TOKEN", admin.clone())],
                &pids,
            )
            .await?,
        );
        res.load_rss_kib = Some(keystone_pids().iter().filter_map(|p| rss_kib(*p)).sum());
        Ok::<(), anyhow::Error>(())
    }
    .await;
    let _ = run_script(&stop, &env, &dir.join("stop.log"), Duration::from_secs(60)).await;
    result.map(|_| res)
}

// ---------------------------------------------------------------------------------------------
// report
// ---------------------------------------------------------------------------------------------

fn fmt_opt(v: Option<f64>, prec: usize) -> String {
    v.map(|x| format!("{x:.prec$}")).unwrap_or_else(|| "—".to_owned())
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
        _ => "—".to_owned(),
    }
}

fn report(args: &Args, systems: &[SystemResult], reference: Option<&SystemResult>, out: &Path) -> String {
    let mut s = String::new();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "?".to_owned());
    let ncpu = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    let wrk_v = std::process::Command::new("wrk")
        .arg("-v")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().next().unwrap_or("").trim().to_owned())
        .unwrap_or_default();
    s.push_str(&format!(
        "idnode-bench, {} UTC; {ncpu} CPUs ({cpu}); {wrk_v}; wrk -t{} -c{} -d{}s (warm-up {}s), \
         lua/keystone.lua; raw output in `{}`\n\n",
        chrono::Utc::now().format("%Y-%m-%d %H:%M"),
        args.threads,
        args.conns,
        args.duration,
        args.warmup,
        out.display()
    ));
    let mut cols: Vec<&SystemResult> = systems.iter().collect();
    if let Some(r) = reference {
        cols.push(r);
    }
    s.push_str("| metric |");
    for c in &cols {
        s.push_str(&format!(" {} |", c.label));
    }
    if reference.is_some() {
        for c in systems {
            s.push_str(&format!(" {} / reference |", c.label));
        }
    }
    s.push('\n');
    s.push_str("|---|");
    for _ in 0..cols.len() + if reference.is_some() { systems.len() } else { 0 } {
        s.push_str("---:|");
    }
    s.push('\n');

    type Get = Box<dyn Fn(&SystemResult) -> Option<f64>>;
    let case =
        |k: &'static str, f: fn(&WrkResult) -> f64| -> Get { Box::new(move |r: &SystemResult| r.cases.get(k).map(f)) };
    let rows: Vec<(&str, Get, usize)> = vec![
        ("token validation req/s", case("validate", |w| w.rps), 0),
        ("token validation p50 ms", case("validate", |w| w.p50_ms), 2),
        ("token validation p99 ms", case("validate", |w| w.p99_ms), 2),
        ("token validation on a follower req/s", case("validate_follower", |w| w.rps), 0),
        ("token validation on a follower p50 / p99 ms", case("validate_follower", |w| w.p50_ms), 2),
        ("password token issue req/s", case("issue", |w| w.rps), 1),
        ("password token issue p50 ms", case("issue", |w| w.p50_ms), 1),
        ("password token issue p99 ms", case("issue", |w| w.p99_ms), 1),
        ("project create req/s", case("create", |w| w.rps), 1),
        ("project create p50 ms", case("create", |w| w.p50_ms), 2),
        ("project create p99 ms", case("create", |w| w.p99_ms), 2),
        ("project create via a follower req/s", case("create_follower", |w| w.rps), 1),
        ("project create via a follower p50 / p99 ms", case("create_follower", |w| w.p50_ms), 2),
        (
            "idle RSS MiB after the fixture (all processes)",
            Box::new(|r: &SystemResult| r.idle_rss_kib.map(|k| k as f64 / 1024.0)),
            1,
        ),
        (
            "RSS after load MiB (all processes)",
            Box::new(|r: &SystemResult| r.load_rss_kib.map(|k| k as f64 / 1024.0)),
            1,
        ),
        (
            "RSS right after start MiB (before the fixture)",
            Box::new(|r: &SystemResult| r.start_rss_kib.map(|k| k as f64 / 1024.0)),
            1,
        ),
        ("RSS after validate MiB", case("validate", |w| w.rss_after_kib.unwrap_or(0) as f64 / 1024.0), 1),
        ("RSS after issue MiB", case("issue", |w| w.rss_after_kib.unwrap_or(0) as f64 / 1024.0), 1),
        ("host CPU busy % before the run (other jobs)", Box::new(|r: &SystemResult| r.host_busy_before), 0),
        ("cold start s (fresh data dir)", Box::new(|r: &SystemResult| r.cold_start_s), 2),
        ("restart s (existing data dir)", Box::new(|r: &SystemResult| r.restart_s), 2),
    ];
    for (name, get, prec) in &rows {
        if cols.iter().all(|c| get(c).is_none()) {
            continue;
        }
        s.push_str(&format!("| {name} |"));
        for c in &cols {
            let mut cell = fmt_opt(get(c), *prec);
            // "p50 / p99" rows carry both numbers
            if name.ends_with("p50 / p99 ms") {
                let key = if name.contains("validation") { "validate_follower" } else { "create_follower" };
                if let Some(w) = c.cases.get(key) {
                    cell = format!("{:.2} / {:.2}", w.p50_ms, w.p99_ms);
                }
            }
            s.push_str(&format!(" {cell} |"));
        }
        if let Some(r) = reference {
            for c in systems {
                if name.starts_with("host CPU") {
                    s.push_str(" |");
                } else {
                    s.push_str(&format!(" {} |", ratio(get(c), get(r))));
                }
            }
        }
        s.push('\n');
    }
    // errors
    s.push_str("| non-2xx + socket errors (all cases) |");
    for c in &cols {
        let e: u64 = c.cases.values().map(|w| w.non2xx + w.sock_err).sum();
        s.push_str(&format!(" {e} |"));
    }
    if reference.is_some() {
        for _ in systems {
            s.push_str(" |");
        }
    }
    s.push('\n');
    s.push_str("| server CPU ms per request: validate / issue / create |");
    for c in &cols {
        let g = |k: &str| {
            c.cases.get(k).and_then(|w| w.cpu_ms_per_req).map(|v| format!("{v:.2}")).unwrap_or_else(|| "—".to_owned())
        };
        s.push_str(&format!(" {} / {} / {} |", g("validate"), g("issue"), g("create")));
    }
    if reference.is_some() {
        for _ in systems {
            s.push_str(" |");
        }
    }
    s.push('\n');
    let notes: Vec<String> =
        cols.iter().flat_map(|c| c.notes.iter().map(move |n| format!("- {}: {n}", c.label))).collect();
    if !notes.is_empty() {
        s.push('\n');
        s.push_str(&notes.join("\n"));
        s.push('\n');
    }
    s
}

// ---------------------------------------------------------------------------------------------

fn find_idnode(arg: Option<&PathBuf>) -> Result<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(p) = arg {
        candidates.push(p.clone());
    } else {
        if let Some(p) = std::env::var_os("IDNODE_BIN") {
            candidates.push(PathBuf::from(p));
        }
        if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
            candidates.push(PathBuf::from(t).join("debug").join("idnode"));
        }
        candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/debug/idnode"));
    }
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .ok_or_else(|| anyhow!("no idnode binary at {candidates:?}: build it first (cargo build -p idnode)"))
}

fn find_reference(arg: Option<&PathBuf>) -> Result<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(p) = arg {
        candidates.push(p.clone());
    } else {
        candidates.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/tools/keystone-reference"));
        candidates.push(PathBuf::from("../shared/tools/keystone-reference"));
        candidates.push(PathBuf::from("/work/shared/tools/keystone-reference"));
    }
    candidates
        .iter()
        .find(|p| p.join("lua/keystone.lua").is_file())
        .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()))
        .ok_or_else(|| anyhow!("keystone-reference scripts not found at {candidates:?} (use --keystone-reference)"))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let args = Args::parse();
    let bin = if args.skip_idnode { PathBuf::new() } else { find_idnode(args.idnode.as_ref())? };
    let refdir = find_reference(args.keystone_reference.as_ref())?;
    ensure_wrk()?;
    let out = match &args.out {
        Some(o) => o.clone(),
        None => std::env::temp_dir().join(format!("idnode-bench-{}", chrono::Utc::now().format("%Y%m%dT%H%M%SZ"))),
    };
    std::fs::create_dir_all(&out).with_context(|| format!("mkdir {}", out.display()))?;
    progress(format!("idnode binary {}, output in {}", bin.display(), out.display()));
    let wrk = Wrk {
        lua: refdir.join("lua/keystone.lua"),
        out: out.clone(),
        threads: args.threads,
        conns: args.conns,
        duration: args.duration,
        warmup: args.warmup,
    };
    let mut systems = Vec::new();
    let mut failures = Vec::new();
    let sizes: &[u32] = if args.skip_idnode { &[] } else { &args.sizes };
    for &n in sizes {
        match bench_idnode(&args, &bin, &wrk, n, &out).await {
            Ok(r) => systems.push(r),
            Err(e) => {
                progress(format!("idnode {n}-node run failed: {e:#}"));
                failures.push(format!("idnode {n} node(s): {e:#}"));
            }
        }
    }
    let reference = if args.reference {
        // same users in the same workloads: if idnode had to fall back to admin, so does Keystone
        let force_admin = systems.iter().any(|s| s.as_admin);
        match bench_reference(&args, &refdir, &wrk, &out, force_admin).await {
            Ok(r) => Some(r),
            Err(e) => {
                progress(format!("reference run failed: {e:#}"));
                failures.push(format!("reference Keystone: {e:#}"));
                None
            }
        }
    } else {
        None
    };
    let mut table = report(&args, &systems, reference.as_ref(), &out);
    if !failures.is_empty() {
        table.push_str("\nFailed runs:\n");
        for f in &failures {
            table.push_str(&format!("- {f}\n"));
        }
    }
    let mut stdout = std::io::stdout();
    stdout.write_all(table.as_bytes()).context("write stdout")?;
    std::fs::write(out.join("report.md"), &table).context("write report.md")?;
    if !failures.is_empty() {
        bail!("{} run(s) failed", failures.len());
    }
    Ok(())
}
