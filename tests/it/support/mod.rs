//! Black-box harness for the integration tests in `tests/it/`: real `idnode serve` processes on
//! loopback, each with its own temporary data dir, driven only over HTTP (public Keystone API on
//! `--listen`, `/ready` and `/metrics` on `--ops-listen`).
//!
//! * ports are picked by binding `127.0.0.1:0` and releasing;
//! * every node's stdout/stderr is appended to `<tmp>/node-N.log`; when a test panics the
//!   [`Cluster`] is dropped during unwinding and prints the tail of every log;
//! * set `IDNODE_TEST_KEEP=1` to keep the temporary directory (its path is printed), and
//!   `IDNODE_TEST_LOG` to the nodes' log filter (`IDNODE_LOG`, default `info,openraft=warn`).
//!
//! Nothing here sleeps for a fixed time to let something happen: every wait polls with a deadline,
//! and every `idnode cluster …` command is killed when it outlives [`CLI_TIMEOUT`].
#![allow(dead_code)]

pub mod agreement;
/// The listings every replica must agree on, as the in-process tests have them.
#[path = "../../../src/testkit/listings.rs"]
pub mod listings;
pub mod oauth_pages;
/// The SCIM realm set-up bodies the in-process tests use as well.
#[path = "../../../src/testkit/scim_setup.rs"]
pub mod scim_setup;

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use reqwest::header::HeaderMap;
use reqwest::{Client, Method, StatusCode};
use serde_json::{json, Value};

/// How long a freshly spawned node may take to answer `/ready` with 200.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// Poll interval for every wait in this harness.
pub const POLL: Duration = Duration::from_millis(50);
/// How long one `idnode cluster …` command may run before it is killed (its own waits, such as
/// `cluster check --wait-secs`, are shorter).
pub const CLI_TIMEOUT: Duration = Duration::from_secs(90);
/// Bytes of each node log printed when a test fails.
const LOG_TAIL_BYTES: u64 = 24 * 1024;

/// `cmd` without the caller's `IDNODE_*` variables.
fn without_idnode_env(mut cmd: Command) -> Command {
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("IDNODE_") {
            cmd.env_remove(&k);
        }
    }
    cmd
}

/// `n` random bytes from the kernel (no extra dependency needed).
pub fn random_bytes(n: usize) -> Vec<u8> {
    let mut buf = vec![0u8; n];
    File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut buf)).expect("read /dev/urandom");
    buf
}

/// Random lowercase hex string of `2 * n` characters.
pub fn random_hex(n: usize) -> String {
    random_bytes(n).iter().map(|b| format!("{b:02x}")).collect()
}

pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Free loopback ports for servers the tests start. They come from below the kernel's ephemeral
/// range (`ip_local_port_range`), never from `bind(0)`: a port the kernel hands out is one it may
/// hand out again, to any of the many client connections the tests open, between our release and
/// the node's bind, and the node then exits on "address in use". A process-wide cursor keeps the
/// ports of concurrent tests distinct; each is checked by binding it, and all are held until the
/// `n` are chosen.
pub fn free_ports(n: usize) -> Vec<u16> {
    static CURSOR: std::sync::Mutex<Option<u16>> = std::sync::Mutex::new(None);
    const LOWEST: u16 = 10_000;
    let below = ephemeral_range_start().max(LOWEST + 1_000);
    let span = below - LOWEST;
    let mut cursor = CURSOR.lock().unwrap_or_else(|e| e.into_inner());
    // start where another run of this binary on the machine is unlikely to be
    let mut next = cursor.unwrap_or(LOWEST + (std::process::id() % u32::from(span)) as u16);
    let mut held = Vec::with_capacity(n);
    let mut tried = 0u32;
    while held.len() < n {
        assert!(tried < u32::from(span), "no {n} free loopback ports in {LOWEST}..{below}");
        tried += 1;
        let port = next;
        next = if next + 1 >= below { LOWEST } else { next + 1 };
        if let Ok(listener) = TcpListener::bind(("127.0.0.1", port)) {
            held.push(listener);
        }
    }
    *cursor = Some(next);
    held.iter().map(|l| l.local_addr().expect("local_addr").port()).collect()
}

/// First port of the kernel's ephemeral range, 32768 when it cannot be read.
fn ephemeral_range_start() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|p| p.parse().ok()))
        .unwrap_or(32_768)
}

// ---------------------------------------------------------------------------------------------
// HTTP helper
// ---------------------------------------------------------------------------------------------

/// One HTTP answer, body read completely.
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// JSON body, or `Value::Null` when the body is empty or not JSON.
    pub json: Value,
    pub text: String,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
    }
}

/// Tiny reqwest wrapper: loopback only, no proxy, bounded per-request time.
#[derive(Clone)]
pub struct Http {
    client: Client,
}

impl Default for Http {
    fn default() -> Self {
        Self::new(Duration::from_secs(10))
    }
}

impl Http {
    pub fn new(timeout: Duration) -> Self {
        let client = Client::builder()
            .no_proxy()
            .timeout(timeout)
            .connect_timeout(Duration::from_secs(2))
            .pool_max_idle_per_host(8)
            .build()
            .expect("build reqwest client");
        Http { client }
    }

    /// `headers` are extra request headers; `token` goes into `X-Auth-Token`.
    pub async fn request(
        &self,
        method: Method,
        url: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<&Value>,
    ) -> Result<Resp, reqwest::Error> {
        let mut req = self.client.request(method, url);
        if let Some(t) = token {
            req = req.header("X-Auth-Token", t);
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = req.send().await?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let text = resp.text().await?;
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok(Resp { status, headers, json, text })
    }

    pub async fn get(&self, url: &str, token: Option<&str>) -> Result<Resp, reqwest::Error> {
        self.request(Method::GET, url, token, &[], None).await
    }

    pub async fn post(&self, url: &str, token: Option<&str>, body: &Value) -> Result<Resp, reqwest::Error> {
        self.request(Method::POST, url, token, &[], Some(body)).await
    }

    /// `GET /v3/auth/tokens` (validation) of `subject` with `auth` as the caller's token.
    pub async fn validate_token(&self, base: &str, auth: &str, subject: &str) -> Result<Resp, reqwest::Error> {
        self.request(Method::GET, &format!("{base}/v3/auth/tokens"), Some(auth), &[("X-Subject-Token", subject)], None)
            .await
    }

    /// `DELETE /v3/auth/tokens` (revocation) of `subject` with `auth` as the caller's token.
    pub async fn revoke_token(&self, base: &str, auth: &str, subject: &str) -> Result<Resp, reqwest::Error> {
        self.request(
            Method::DELETE,
            &format!("{base}/v3/auth/tokens"),
            Some(auth),
            &[("X-Subject-Token", subject)],
            None,
        )
        .await
    }
}

/// Keystone v3 password authentication body, project-scoped, users and projects in `default`.
pub fn password_auth_body(user: &str, password: &str, project: &str) -> Value {
    json!({"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": user, "domain": {"id": "default"}, "password": password}}},
        "scope": {"project": {"name": project, "domain": {"id": "default"}}}}})
}

/// Keystone v3 password authentication body scoped to `project` (Default domain); the user is
/// named in the Default domain, or given by id when `by_id`.
pub fn password_auth_body_for(user: &str, by_id: bool, password: &str, project: &str) -> Value {
    let who = if by_id {
        json!({"id": user, "password": password})
    } else {
        json!({"name": user, "domain": {"id": "default"}, "password": password})
    };
    json!({"auth": {"identity": {"methods": ["password"], "password": {"user": who}},
        "scope": {"project": {"name": project, "domain": {"id": "default"}}}}})
}

/// Reads a pipe to its end on a thread of its own (so a full pipe never blocks the child).
fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut buf);
        }
        buf
    })
}

/// Runs `cmd` with stdout and stderr captured. Panics when it has not exited within `timeout`
/// (it is killed first). For synchronous callers; async code uses [`output_within_async`].
pub fn output_within(cmd: &mut Command, timeout: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    let (stdout, stderr) = (drain(child.stdout.take()), drain(child.stderr.take()));
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} did not finish within {timeout:?}");
        }
        std::thread::sleep(POLL);
    };
    Output { status, stdout: stdout.join().expect("stdout reader"), stderr: stderr.join().expect("stderr reader") }
}

/// [`output_within`] for async code: the runtime's threads keep running while it waits.
pub async fn output_within_async(cmd: &mut tokio::process::Command, timeout: Duration) -> Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Ok(out) => out.unwrap_or_else(|e| panic!("wait for {cmd:?}: {e}")),
        Err(_) => panic!("{cmd:?} did not finish within {timeout:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Metrics
// ---------------------------------------------------------------------------------------------

/// The raft gauges of one node's `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RaftMetrics {
    pub is_leader: bool,
    pub leader_id: Option<u64>,
    pub applied_index: u64,
}

/// Value of the first sample of metric `name` (exact name, with or without labels).
pub fn metric_value(text: &str, name: &str) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let rest = l.strip_prefix(name)?;
        if !(rest.starts_with(' ') || rest.starts_with('{')) {
            return None;
        }
        let value = if let Some(close) = rest.rfind('}') { &rest[close + 1..] } else { rest };
        value.split_whitespace().next()?.parse::<f64>().ok()
    })
}

pub fn parse_raft_metrics(text: &str) -> Option<RaftMetrics> {
    let is_leader = metric_value(text, "idnode_raft_is_leader")? >= 1.0;
    let leader = metric_value(text, "idnode_raft_leader_id").unwrap_or(0.0);
    let applied = metric_value(text, "idnode_raft_applied_index").unwrap_or(0.0);
    Some(RaftMetrics {
        is_leader,
        leader_id: (leader >= 1.0).then_some(leader as u64),
        applied_index: applied.max(0.0) as u64,
    })
}

// ---------------------------------------------------------------------------------------------
// Nodes and clusters
// ---------------------------------------------------------------------------------------------

pub struct Node {
    /// raft node id (1-based)
    pub id: u64,
    pub api_port: u16,
    pub ops_port: u16,
    pub peer_port: u16,
    pub data_dir: PathBuf,
    pub log_path: PathBuf,
    /// Base64 of this node's 32-byte key-encryption key (distinct per node, as when every node
    /// generates its own key file).
    pub kek_b64: String,
    pub kek: Vec<u8>,
    child: Option<Child>,
    /// When the current process was spawned.
    pub spawned_at: Option<Instant>,
    /// How many times this node has been spawned.
    pub starts: u32,
    /// Started with `--initial-cluster-state existing`: it joins a running cluster.
    pub joins: bool,
    /// Stopped with SIGSTOP by [`Cluster::pause`] and not resumed yet.
    pub paused: bool,
    /// The address its listeners bind (127.0.0.1 unless the node has a network of its own).
    pub host: String,
    /// The network namespace the process runs in (`ip netns exec`), if not the test's own.
    pub netns: Option<String>,
    /// Environment for this node only, after the cluster's.
    pub env: Vec<(String, String)>,
}

impl Node {
    pub fn api(&self) -> String {
        format!("http://{}:{}", self.host, self.api_port)
    }
    pub fn ops(&self) -> String {
        format!("http://{}:{}", self.host, self.ops_port)
    }
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }
    /// True while the spawned process has not exited.
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }
    /// Exit status if the process has exited on its own.
    fn exited(&mut self) -> Option<ExitStatus> {
        self.child.as_mut().and_then(|c| c.try_wait().ok().flatten())
    }
}

pub struct Cluster {
    dir: Option<tempfile::TempDir>,
    pub root: PathBuf,
    pub nodes: Vec<Node>,
    pub secret: String,
    pub admin_password: String,
    pub initial_cluster: String,
    pub http: Http,
    bin: PathBuf,
    /// Extra environment for every (re)spawn of every node, e.g. `IDNODE_RAFT_*` tuning.
    env: Vec<(String, String)>,
    /// Tokens the harness was issued: with the admin password and the cluster secret, no
    /// member's log may hold one ([`Cluster::assert_no_secret_logged`], run at the end of
    /// every test that passed).
    issued: std::sync::Mutex<Vec<String>>,
}

/// The idnode binary the clusters run: `IDNODE_IT_BIN` when set (a copy kept apart, so an hours-long
/// campaign is not cut by a rebuild of `target/debug/idnode` beside it), else the one cargo built.
fn node_binary() -> PathBuf {
    std::env::var_os("IDNODE_IT_BIN")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_idnode")), PathBuf::from)
}

impl Cluster {
    /// Spawns `n` nodes (ids 1..=n) and waits until every one answers `/ready` with 200.
    pub async fn start(n: usize) -> Cluster {
        let cluster = Self::spawn(n);
        let deadline = Instant::now() + READY_TIMEOUT;
        for i in 0..n {
            cluster.wait_ready(i, deadline).await;
        }
        cluster
    }

    /// Like [`Cluster::start`], every node started with the extra environment `env`.
    pub async fn start_with_env(n: usize, env: &[(&str, &str)]) -> Cluster {
        let cluster = Self::spawn_with_env(n, env);
        let deadline = Instant::now() + READY_TIMEOUT;
        for i in 0..n {
            cluster.wait_ready(i, deadline).await;
        }
        cluster
    }

    /// Spawns `n` nodes without waiting for them.
    pub fn spawn(n: usize) -> Cluster {
        Self::spawn_with_env(n, &[])
    }

    /// Spawns `n` nodes with the extra environment `env`, without waiting for them.
    pub fn spawn_with_env(n: usize, env: &[(&str, &str)]) -> Cluster {
        let mut cluster = Self::prepare(n, env);
        for i in 0..n {
            cluster.spawn_node(i);
        }
        cluster
    }

    /// A new cluster of `n` members seeded from `backup` with `idnode restore` (the old
    /// cluster's secret opens the file; every member gets a fresh KEK and data dir), then
    /// started and waited for, as an operator recovers from losing a whole cluster.
    pub async fn restore(n: usize, backup: &Path, secret: &str, admin_password: &str) -> Cluster {
        let mut cluster = Self::prepare(n, &[]);
        cluster.secret = secret.to_string();
        cluster.admin_password = admin_password.to_string();
        for i in 0..n {
            let out = cluster.restore_cli(i, backup);
            assert!(
                out.status.success(),
                "idnode restore for node {} failed: {}",
                cluster.nodes[i].id,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        for i in 0..n {
            cluster.spawn_node(i);
        }
        let deadline = Instant::now() + READY_TIMEOUT;
        for i in 0..n {
            cluster.wait_ready(i, deadline).await;
        }
        cluster
    }

    /// `idnode restore --from BACKUP` into node `i`'s data dir, with its KEK and the secret.
    pub fn restore_cli(&self, i: usize, backup: &Path) -> Output {
        let node = &self.nodes[i];
        let mut cmd = self.cli();
        cmd.arg("restore")
            .arg("--from")
            .arg(backup)
            .arg("--node-id")
            .arg(node.id.to_string())
            .arg("--initial-cluster")
            .arg(&self.initial_cluster)
            .arg("--data-dir")
            .arg(&node.data_dir)
            .env("IDNODE_CLUSTER_SECRET", &self.secret)
            .env("IDNODE_KEK", &node.kek_b64);
        output_within(&mut cmd, CLI_TIMEOUT)
    }

    /// `idnode backup --endpoint <ops listener of node i> --out FILE` with the cluster secret.
    pub async fn backup_cli(&self, i: usize, out: &Path) -> Output {
        self.backup_cli_as(i, out, &self.secret).await
    }

    /// [`Cluster::backup_cli`] proving `secret` instead of the cluster's.
    pub async fn backup_cli_as(&self, i: usize, out: &Path, secret: &str) -> Output {
        let mut cmd = tokio::process::Command::from(self.cli());
        cmd.arg("backup").arg("--endpoint").arg(self.ops(i)).arg("--out").arg(out).env("IDNODE_CLUSTER_SECRET", secret);
        output_within_async(&mut cmd, CLI_TIMEOUT).await
    }

    /// `idnode keys ARGS --endpoint <ops listeners of nodes>` with the cluster secret.
    pub async fn keys_cli(&self, nodes: &[usize], args: &[&str]) -> Output {
        let endpoints: Vec<String> = nodes.iter().map(|i| self.ops(*i)).collect();
        let mut cmd = tokio::process::Command::from(self.cli());
        cmd.arg("keys")
            .args(args)
            .arg("--endpoint")
            .arg(endpoints.join(","))
            .env("IDNODE_CLUSTER_SECRET", &self.secret);
        output_within_async(&mut cmd, CLI_TIMEOUT).await
    }

    /// Sets (or replaces) an environment variable for every later (re)spawn of every node.
    pub fn set_env(&mut self, key: &str, value: &str) {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_string(), value.to_string()));
    }

    /// `idnode import ARGS --endpoint <ops listener of node i>` with the cluster secret.
    pub async fn import_cli(&self, i: usize, args: &[&str]) -> Output {
        let mut cmd = tokio::process::Command::from(self.cli());
        cmd.arg("import").args(args).arg("--endpoint").arg(self.ops(i)).env("IDNODE_CLUSTER_SECRET", &self.secret);
        output_within_async(&mut cmd, Duration::from_secs(300)).await
    }

    /// The idnode binary with none of the caller's `IDNODE_*` variables (they would be read
    /// as configuration).
    fn cli(&self) -> Command {
        without_idnode_env(Command::new(&self.bin))
    }

    /// [`Cluster::cli`] run inside the network namespace `ns` (`ip netns exec` execs the
    /// binary, so the child's pid is idnode's own and signals reach it).
    fn cli_in(&self, ns: &str) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns]).arg(&self.bin);
        without_idnode_env(cmd)
    }

    /// Gives every prepared member a fault-injection clock (`IDNODE_FAULT_CLOCK_SKEW_FILE`):
    /// one file each in `dir`, holding the seconds its wall clock runs ahead (0 for now).
    pub fn skewable_clocks(&mut self, dir: &Path) -> Vec<PathBuf> {
        let mut files = Vec::new();
        for (i, node) in self.nodes.iter_mut().enumerate() {
            let path = dir.join(format!("skew-{i}"));
            std::fs::write(&path, "0").expect("write a skew file");
            node.env.push(("IDNODE_FAULT_CLOCK_SKEW_FILE".into(), path.display().to_string()));
            files.push(path);
        }
        files
    }

    /// `n` members' directories, ports and keys, nothing started.
    pub fn prepare(n: usize, env: &[(&str, &str)]) -> Cluster {
        Self::prepare_on(&vec![("127.0.0.1".to_string(), None); n], env)
    }

    /// One member per `(address, network namespace)` of `hosts`, prepared (directories, keys,
    /// ports) but not started (the Jepsen-style campaign gives each member a network of its own).
    pub fn prepare_on(hosts: &[(String, Option<String>)], env: &[(&str, &str)]) -> Cluster {
        let n = hosts.len();
        assert!(n >= 1, "a cluster has at least one node");
        let dir = tempfile::Builder::new().prefix("idnode-it-").tempdir().expect("create temp dir");
        let root = dir.path().to_path_buf();
        let ports = free_ports(3 * n);
        let mut nodes = Vec::with_capacity(n);
        for i in 0..n {
            let id = (i + 1) as u64;
            let data_dir = root.join(format!("node-{id}"));
            std::fs::create_dir_all(&data_dir).expect("create data dir");
            let kek = random_bytes(32);
            nodes.push(Node {
                id,
                api_port: ports[3 * i],
                ops_port: ports[3 * i + 1],
                peer_port: ports[3 * i + 2],
                data_dir,
                log_path: root.join(format!("node-{id}.log")),
                kek_b64: b64(&kek),
                kek,
                child: None,
                spawned_at: None,
                starts: 0,
                joins: false,
                paused: false,
                host: hosts[i].0.clone(),
                netns: hosts[i].1.clone(),
                env: Vec::new(),
            });
        }
        let initial_cluster =
            nodes.iter().map(|nd| format!("{}={}:{}", nd.id, nd.host, nd.peer_port)).collect::<Vec<_>>().join(",");
        Cluster {
            dir: Some(dir),
            root,
            nodes,
            secret: format!("it-cluster-secret-{}", random_hex(16)),
            admin_password: format!("it-admin-pw-{}", random_hex(12)),
            initial_cluster,
            http: Http::default(),
            bin: node_binary(),
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            issued: Default::default(),
        }
    }

    /// Spawns one more node that joins the running cluster (it waits to be added with
    /// `idnode cluster add-learner`). Returns its index.
    pub fn spawn_joining_node(&mut self) -> usize {
        let i = self.nodes.len();
        let id = (i + 1) as u64;
        let ports = free_ports(3);
        let data_dir = self.root.join(format!("node-{id}"));
        std::fs::create_dir_all(&data_dir).expect("create data dir");
        let kek = random_bytes(32);
        self.nodes.push(Node {
            id,
            api_port: ports[0],
            ops_port: ports[1],
            peer_port: ports[2],
            data_dir,
            log_path: self.root.join(format!("node-{id}.log")),
            kek_b64: b64(&kek),
            kek,
            child: None,
            spawned_at: None,
            starts: 0,
            joins: true,
            paused: false,
            host: "127.0.0.1".to_string(),
            netns: None,
            env: Vec::new(),
        });
        self.spawn_node(i);
        i
    }

    /// Runs `idnode cluster ARGS --endpoint <peer address of node i>` with the cluster secret
    /// (killed after [`CLI_TIMEOUT`]).
    pub fn cluster_cli(&self, i: usize, args: &[&str]) -> Output {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("cluster")
            .args(args)
            .arg("--endpoint")
            .arg(self.peer_addr(i))
            .env("IDNODE_CLUSTER_SECRET", &self.secret);
        output_within(&mut cmd, CLI_TIMEOUT)
    }

    /// [`Cluster::cluster_cli`] for async code (does not block a runtime thread while it runs).
    pub async fn cluster_cli_async(&self, i: usize, args: &[&str]) -> Output {
        let mut cmd = tokio::process::Command::new(&self.bin);
        cmd.arg("cluster")
            .args(args)
            .arg("--endpoint")
            .arg(self.peer_addr(i))
            .env("IDNODE_CLUSTER_SECRET", &self.secret);
        output_within_async(&mut cmd, CLI_TIMEOUT).await
    }

    /// Peer (raft and admin) address of node `i`, as `--endpoint` takes it.
    pub fn peer_addr(&self, i: usize) -> String {
        format!("{}:{}", self.nodes[i].host, self.nodes[i].peer_port)
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn api(&self, i: usize) -> String {
        self.nodes[i].api()
    }

    pub fn ops(&self, i: usize) -> String {
        self.nodes[i].ops()
    }

    /// (Re)starts node `i` with the same arguments on its data dir. Does not wait.
    pub fn spawn_node(&mut self, i: usize) {
        let bin = self.bin.clone();
        let secret = self.secret.clone();
        let admin_password = self.admin_password.clone();
        let initial_cluster = self.initial_cluster.clone();
        let extra_env = self.env.clone();
        let mut cmd = match &self.nodes[i].netns {
            Some(ns) => self.cli_in(ns),
            None => self.cli(),
        };
        let node = &mut self.nodes[i];
        let (cluster_flag, cluster_value) = if node.joins {
            ("--initial-cluster-state", "existing".to_string())
        } else {
            ("--initial-cluster", initial_cluster)
        };
        assert!(!node.is_running(), "node {} is already running (pid {:?})", node.id, node.pid());
        node.starts += 1;
        let mut log = OpenOptions::new().create(true).append(true).open(&node.log_path).expect("open node log");
        writeln!(log, "===== harness: start #{} of node {} =====", node.starts, node.id).expect("write node log");
        let log_err = log.try_clone().expect("clone log handle");
        cmd.arg("serve")
            .arg("--node-id")
            .arg(node.id.to_string())
            .arg(cluster_flag)
            .arg(&cluster_value)
            .arg("--data-dir")
            .arg(&node.data_dir)
            .arg("--listen")
            .arg(format!("{}:{}", node.host, node.api_port))
            .arg("--ops-listen")
            .arg(format!("{}:{}", node.host, node.ops_port))
            .arg("--peer-listen")
            .arg(format!("{}:{}", node.host, node.peer_port))
            .arg("--public-url")
            .arg(node.api())
            .env("IDNODE_CLUSTER_SECRET", &secret)
            .env("IDNODE_ADMIN_PASSWORD", &admin_password)
            .env("IDNODE_KEK", &node.kek_b64)
            .env("IDNODE_LOG", std::env::var("IDNODE_TEST_LOG").unwrap_or_else(|_| "info,openraft=warn".into()))
            .envs(extra_env)
            .envs(node.env.clone())
            .env_remove("HTTP_PROXY")
            .env_remove("http_proxy")
            .env_remove("HTTPS_PROXY")
            .env_remove("https_proxy")
            .env_remove("ALL_PROXY")
            .env_remove("all_proxy")
            // a relative path in the server must not land in the source tree
            .current_dir(self.dir_path())
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err));
        let child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {}: {e}", bin.display()));
        let node = &mut self.nodes[i];
        node.child = Some(child);
        node.spawned_at = Some(Instant::now());
    }

    fn dir_path(&self) -> PathBuf {
        self.root.clone()
    }

    /// Restarts node `i` on its data dir and waits until it is ready.
    pub async fn restart(&mut self, i: usize) {
        self.spawn_node(i);
        self.wait_ready(i, Instant::now() + READY_TIMEOUT).await;
    }

    /// Polls node `i`'s `/ready` until 200. Panics (with logs) at the deadline or when the
    /// process exits.
    pub async fn wait_ready(&self, i: usize, deadline: Instant) {
        let url = format!("{}/ready", self.ops(i));
        let http = Http::new(Duration::from_secs(2));
        let mut last = String::from("no answer yet");
        loop {
            // Child::try_wait needs &mut; check liveness via /proc instead
            if let Some(pid) = self.nodes[i].pid() {
                if !pid_alive(pid) {
                    panic!(
                        "node {} (pid {pid}) exited before it was ready; last /ready: {last}; its log ends:\n{}",
                        self.nodes[i].id,
                        tail(&self.nodes[i].log_path, 2048)
                    );
                }
            }
            match http.get(&url, None).await {
                Ok(r) if r.status == StatusCode::OK => return,
                Ok(r) => last = format!("{} {}", r.status, r.text.trim()),
                Err(e) => last = format!("error: {e}"),
            }
            if Instant::now() >= deadline {
                panic!("node {} not ready by the deadline; last /ready: {last}", self.nodes[i].id);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// SIGKILL (std's `Child::kill`) and reap node `i` (a paused node dies as well).
    pub fn kill(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        if let Some(mut c) = node.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        node.paused = false;
    }

    /// SIGSTOP node `i`: it stays alive but does nothing (what a partition looks like from
    /// inside). While paused, [`Cluster::metrics`] skips it instead of waiting for an answer.
    pub fn pause(&mut self, i: usize) {
        self.signal(i, libc::SIGSTOP);
        self.nodes[i].paused = true;
    }

    /// SIGCONT node `i` after [`Cluster::pause`].
    pub fn resume(&mut self, i: usize) {
        self.signal(i, libc::SIGCONT);
        self.nodes[i].paused = false;
    }

    fn signal(&self, i: usize, sig: libc::c_int) {
        let pid = self.nodes[i].pid().unwrap_or_else(|| panic!("node {} is not running", self.nodes[i].id));
        // SAFETY: plain kill(2) on a pid of a child we spawned and have not reaped yet.
        let rc = unsafe { libc::kill(pid as libc::pid_t, sig) };
        assert_eq!(rc, 0, "kill({sig}) on node {} failed", self.nodes[i].id);
    }

    /// Brings every node back: resumes the paused ones, respawns the ones that are not running,
    /// then waits until all are ready. Returns the indexes it resumed or respawned.
    pub async fn heal(&mut self) -> Vec<usize> {
        let mut healed = Vec::new();
        for i in 0..self.len() {
            if self.nodes[i].paused {
                self.resume(i);
                healed.push(i);
            } else if !self.nodes[i].is_running() {
                self.spawn_node(i);
                healed.push(i);
            }
        }
        let deadline = Instant::now() + READY_TIMEOUT;
        for i in 0..self.len() {
            self.wait_ready(i, deadline).await;
        }
        healed
    }

    /// Stops every node (SIGTERM, SIGKILL after `grace`), starts them all again on their data
    /// dirs and waits until every one is ready.
    pub async fn restart_all(&mut self, grace: Duration) {
        for i in 0..self.len() {
            self.terminate(i, grace).await;
        }
        for i in 0..self.len() {
            self.spawn_node(i);
        }
        let deadline = Instant::now() + READY_TIMEOUT;
        for i in 0..self.len() {
            self.wait_ready(i, deadline).await;
        }
    }

    /// `idnode cluster check` through node `i`: (exit code, the JSON report it printed on
    /// stdout; `Value::Null` when it printed none, with its stderr shown).
    pub async fn cluster_check(&self, i: usize) -> (i32, Value) {
        let out = self.cluster_cli_async(i, &["check"]).await;
        let report = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        if report.is_null() || !out.status.success() {
            eprintln!(
                "idnode cluster check through node {} exited with {}: {}",
                self.nodes[i].id,
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        (out.status.code().unwrap_or(-1), report)
    }

    /// `idnode cluster status` through node `i` (that node's own view), as JSON. Panics when
    /// the command fails.
    pub async fn status_cli(&self, i: usize) -> Value {
        self.try_status_cli(i).await.unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Cluster::status_cli`] that reports a failure (e.g. the node is down) as an error.
    pub async fn try_status_cli(&self, i: usize) -> Result<Value, String> {
        let out = self.cluster_cli_async(i, &["status"]).await;
        if !out.status.success() {
            return Err(format!(
                "idnode cluster status through node {}: {} {}",
                self.nodes[i].id,
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        serde_json::from_slice(&out.stdout).map_err(|e| format!("cluster status JSON: {e}"))
    }

    /// SIGTERM node `i` and wait up to `grace` for it to exit; SIGKILL after that.
    /// Returns the exit status when it stopped on its own, `None` when it had to be killed.
    /// A paused node is resumed first so that it can see the SIGTERM.
    pub async fn terminate(&mut self, i: usize, grace: Duration) -> Option<ExitStatus> {
        let pid = self.nodes[i].pid()?;
        // SAFETY: plain kill(2) on a pid of a child we spawned and have not reaped yet.
        let rc = unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
        assert_eq!(rc, 0, "kill(SIGTERM) on node {} failed", self.nodes[i].id);
        if self.nodes[i].paused {
            self.resume(i);
        }
        let deadline = Instant::now() + grace;
        loop {
            if let Some(status) = self.nodes[i].exited() {
                self.nodes[i].child = None;
                return Some(status);
            }
            if Instant::now() >= deadline {
                self.kill(i);
                return None;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Kills every node still running (SIGKILL).
    pub fn kill_all(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill(i);
        }
    }

    /// Text of node `i`'s `/metrics`, `None` when it does not answer or is paused.
    pub async fn metrics_text(&self, i: usize) -> Option<String> {
        if self.nodes[i].paused {
            return None;
        }
        let r = self.http.get(&format!("{}/metrics", self.ops(i)), None).await.ok()?;
        r.status.is_success().then_some(r.text)
    }

    /// One metric of node `i` (first sample), `None` when absent or the node does not answer.
    pub async fn metric(&self, i: usize, name: &str) -> Option<f64> {
        metric_value(&self.metrics_text(i).await?, name)
    }

    /// Raft gauges of node `i`, `None` when it does not answer (or is paused).
    pub async fn metrics(&self, i: usize) -> Option<RaftMetrics> {
        parse_raft_metrics(&self.metrics_text(i).await?)
    }

    /// Index of the leader: a node whose `idnode_raft_is_leader` is 1 and whose id a majority of
    /// the cluster reports as `idnode_raft_leader_id`. Polls until `deadline`.
    pub async fn wait_leader(&self, timeout: Duration) -> usize {
        let deadline = Instant::now() + timeout;
        let majority = self.len() / 2 + 1;
        let mut last;
        loop {
            let mut seen = Vec::with_capacity(self.len());
            for i in 0..self.len() {
                seen.push(self.metrics(i).await);
            }
            for (i, m) in seen.iter().enumerate() {
                if let Some(m) = m {
                    if m.is_leader {
                        let id = self.nodes[i].id;
                        let agree = seen.iter().flatten().filter(|o| o.leader_id == Some(id)).count();
                        if agree >= majority {
                            return i;
                        }
                    }
                }
            }
            last = seen;
            if Instant::now() >= deadline {
                panic!("no leader agreed on by a majority within {timeout:?}; metrics: {last:?}");
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits until every node in `which` has applied at least the highest applied index any of
    /// them reports when called. Returns that index.
    pub async fn wait_applied_converged(&self, which: &[usize], timeout: Duration) -> u64 {
        let deadline = Instant::now() + timeout;
        let mut target = 0;
        for &i in which {
            if let Some(m) = self.metrics(i).await {
                target = target.max(m.applied_index);
            }
        }
        loop {
            let mut all = Vec::new();
            for &i in which {
                all.push(self.metrics(i).await.map(|m| m.applied_index));
            }
            if all.iter().all(|a| a.is_some_and(|a| a >= target)) {
                return target;
            }
            if Instant::now() >= deadline {
                panic!("applied index did not reach {target} on nodes {which:?} within {timeout:?}: {all:?}");
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Issues a token with password auth on node `i`, retrying errors until `timeout`.
    /// Returns (token, full answer).
    pub async fn issue_token(
        &self,
        i: usize,
        user: &str,
        password: &str,
        project: &str,
        timeout: Duration,
    ) -> (String, Resp) {
        let deadline = Instant::now() + timeout;
        let url = format!("{}/v3/auth/tokens", self.api(i));
        let body = password_auth_body(user, password, project);
        let mut last;
        loop {
            match self.http.post(&url, None, &body).await {
                Ok(r) if r.status.is_success() => {
                    let tok = r.header("X-Subject-Token").unwrap_or_else(|| panic!("no X-Subject-Token in {r:?}"));
                    if let Ok(mut issued) = self.issued.lock() {
                        if issued.len() < MAX_WATCHED_TOKENS {
                            issued.push(tok.clone());
                        }
                    }
                    return (tok, r);
                }
                Ok(r) => last = format!("{} {}", r.status, r.text),
                Err(e) => last = format!("error: {e}"),
            }
            if Instant::now() >= deadline {
                panic!("token issue for {user} on node {} failed: {last}", self.nodes[i].id);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Project-scoped admin token from node `i`.
    pub async fn admin_token(&self, i: usize) -> String {
        let pw = self.admin_password.clone();
        self.issue_token(i, "admin", &pw, "admin", Duration::from_secs(30)).await.0
    }

    /// One password login on node `i` (no retry), project-scoped; the user by name in the
    /// Default domain, or by id when `by_id`.
    pub async fn login(&self, i: usize, user: &str, by_id: bool, password: &str, project: &str) -> Resp {
        let body = password_auth_body_for(user, by_id, password, project);
        let url = format!("{}/v3/auth/tokens", self.api(i));
        self.http.post(&url, None, &body).await.unwrap_or_else(|e| panic!("login on node {}: {e}", self.nodes[i].id))
    }

    /// The `id`s of the objects that `GET path` on node `i` lists under `key` (e.g.
    /// `("/v3/users?name=admin", "users")`). Panics unless the answer is 200 with that list.
    pub async fn list_ids(&self, i: usize, token: &str, path: &str, key: &str) -> BTreeSet<String> {
        self.list_field(i, token, path, key, "id").await
    }

    /// Like [`Cluster::list_ids`], the `name`s.
    pub async fn list_names(&self, i: usize, token: &str, path: &str, key: &str) -> BTreeSet<String> {
        self.list_field(i, token, path, key, "name").await
    }

    async fn list_field(&self, i: usize, token: &str, path: &str, key: &str, field: &str) -> BTreeSet<String> {
        // A listing of a hundred thousand records takes seconds on a debug build: a longer
        // bound than the default request timeout.
        let r = Http::new(Duration::from_secs(120))
            .get(&format!("{}{path}", self.api(i)), Some(token))
            .await
            .unwrap_or_else(|e| panic!("GET {path} on node {}: {e}", self.nodes[i].id));
        assert_eq!(r.status, StatusCode::OK, "GET {path} on node {}: {}", self.nodes[i].id, r.text);
        let list = r.json[key].as_array().unwrap_or_else(|| panic!("no {key} list in GET {path}: {}", r.text));
        list.iter()
            .map(|e| e[field].as_str().unwrap_or_else(|| panic!("an entry without {field}: {e}")).to_string())
            .collect()
    }

    /// POSTs `body` to `path` on node `i` until a 2xx (503 and connection errors are retried;
    /// other statuses panic). Returns the answer.
    pub async fn post_retry(&self, i: usize, path: &str, token: &str, body: &Value, timeout: Duration) -> Resp {
        self.retry_until_success(Method::POST, i, path, token, Some(body), timeout).await
    }

    /// `PUT path` (no body) on node `i` until a 2xx, retried like [`Cluster::post_retry`]; for
    /// the idempotent Keystone PUTs (group membership, role grants).
    pub async fn put_retry(&self, i: usize, path: &str, token: &str, timeout: Duration) -> Resp {
        self.retry_until_success(Method::PUT, i, path, token, None, timeout).await
    }

    /// `method path` on node `i` until a 2xx: server errors and connection errors are retried
    /// until `timeout`, other statuses panic.
    async fn retry_until_success(
        &self,
        method: Method,
        i: usize,
        path: &str,
        token: &str,
        body: Option<&Value>,
        timeout: Duration,
    ) -> Resp {
        let deadline = Instant::now() + timeout;
        let url = format!("{}{path}", self.api(i));
        let mut last;
        loop {
            match self.http.request(method.clone(), &url, Some(token), &[], body).await {
                Ok(r) if r.status.is_success() => return r,
                Ok(r) if r.status.is_server_error() => last = format!("{} {}", r.status, r.text),
                Ok(r) => panic!("{method} {path} on node {}: {} {}", self.nodes[i].id, r.status, r.text),
                Err(e) => last = format!("error: {e}"),
            }
            if Instant::now() >= deadline {
                panic!("{method} {path} on node {} kept failing: {last}", self.nodes[i].id);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Polls `GET path` on node `i` until it answers `want` (e.g. 200 once replicated).
    pub async fn wait_get_status(
        &self,
        i: usize,
        path: &str,
        token: &str,
        want: StatusCode,
        timeout: Duration,
    ) -> Resp {
        let deadline = Instant::now() + timeout;
        let url = format!("{}{path}", self.api(i));
        let mut last;
        loop {
            match self.http.get(&url, Some(token)).await {
                Ok(r) if r.status == want => return r,
                Ok(r) => last = format!("{} {}", r.status, r.text),
                Err(e) => last = format!("error: {e}"),
            }
            if Instant::now() >= deadline {
                panic!("GET {path} on node {} never answered {want}; last: {last}", self.nodes[i].id);
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Prints the tail of every node's log to stderr.
    pub fn dump_logs(&self) {
        for n in &self.nodes {
            eprintln!("----- node {} log ({}), last {} KiB -----", n.id, n.log_path.display(), LOG_TAIL_BYTES / 1024);
            eprintln!("{}", tail(&n.log_path, LOG_TAIL_BYTES));
        }
    }
}

/// Issued tokens the end-of-test log check looks for, at most.
const MAX_WATCHED_TOKENS: usize = 256;

impl Cluster {
    /// Fails the test when a member's log holds the admin password, the cluster secret or a
    /// token the harness was issued: no line may carry one, whatever the test did.
    pub fn assert_no_secret_logged(&self) {
        let mut secrets = vec![self.admin_password.clone(), self.secret.clone()];
        secrets.extend(self.issued.lock().map(|t| t.clone()).unwrap_or_default());
        secrets.retain(|s| s.len() >= 8);
        let alternation = secrets.iter().map(|s| regex::escape(s)).collect::<Vec<_>>().join("|");
        let any = regex::bytes::Regex::new(&alternation).expect("a pattern of literals");
        for n in &self.nodes {
            let Ok(text) = std::fs::read(&n.log_path) else { continue };
            if let Some(m) = any.find(&text) {
                let start = text[..m.start()].iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
                let what = if m.as_bytes() == self.admin_password.as_bytes() {
                    "the admin password"
                } else if m.as_bytes() == self.secret.as_bytes() {
                    "the cluster secret"
                } else {
                    "an issued token"
                };
                panic!(
                    "node {}'s log ({}) holds {what} at byte {}, in a line starting {:?}",
                    n.id,
                    n.log_path.display(),
                    m.start(),
                    String::from_utf8_lossy(&text[start..m.start().min(start + 160)])
                );
            }
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.kill_all();
        let keep = std::env::var_os("IDNODE_TEST_KEEP").is_some();
        if std::thread::panicking() {
            self.dump_logs();
        } else {
            self.assert_no_secret_logged();
        }
        if let Some(dir) = self.dir.take() {
            if keep {
                let path = dir.keep();
                eprintln!("IDNODE_TEST_KEEP: cluster dir kept at {}", path.display());
            }
        }
    }
}

/// Whether a process with this pid exists (and is not a zombie).
pub fn pid_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // state is the first field after the parenthesised command name
            let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()).unwrap_or("?");
            state != "Z" && state != "X"
        }
        Err(_) => false,
    }
}

/// Last `max` bytes of a file, lossily decoded.
pub fn tail(path: &Path, max: u64) -> String {
    let mut f = match File::open(path) {
        Ok(f) => f,
        Err(e) => return format!("(cannot open: {e})"),
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(max);
    let _ = f.seek(SeekFrom::Start(start));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// Every regular file under `dir`, recursively (symlinks are not followed).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(e) => e,
            Err(e) => panic!("read_dir {}: {e}", d.display()),
        };
        for entry in entries {
            let entry = entry.expect("dir entry");
            let ft = entry.file_type().expect("file type");
            if ft.is_dir() {
                stack.push(entry.path());
            } else if ft.is_file() {
                out.push(entry.path());
            }
        }
    }
    out.sort();
    out
}

/// Offset of `needle` in `hay`, if present.
pub fn find_bytes(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || hay.len() < needle.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Field `key` of a JSON object as a `u64`; 0 when absent or null (e.g. `purged_index` of
/// `idnode cluster status` before the first purge).
pub fn json_u64(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or(0)
}
