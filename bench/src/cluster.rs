//! idnode clusters of real processes on loopback: spawn, readiness, leader, kill.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use base64::Engine;
use reqwest::{Client, StatusCode};

use crate::api::http_client;
use crate::util::{free_ports, random_bytes, random_hex};

pub const READY_TIMEOUT: Duration = Duration::from_secs(120);
pub const POLL: Duration = Duration::from_millis(50);

pub struct IdNode {
    pub id: u32,
    pub api: String,
    pub ops: String,
    pub args: Vec<String>,
    pub kek: String,
    pub log: PathBuf,
    pub child: Option<tokio::process::Child>,
}

pub struct IdCluster {
    pub bin: PathBuf,
    pub dir: PathBuf,
    pub secret: String,
    pub admin_password: String,
    pub nodes: Vec<IdNode>,
    pub http: Client,
    /// Extra `IDNODE_*` settings of every node.
    pub env: Vec<(String, String)>,
}

impl IdCluster {
    pub fn new(bin: &Path, dir: &Path, n: u32) -> Result<Self> {
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
            env: Vec::new(),
        })
    }

    /// Adds a node that joins the running cluster (`--initial-cluster-state existing`); it
    /// is not spawned. Returns its index and its peer address.
    pub fn add_joining(&mut self) -> Result<(usize, String)> {
        let ports = free_ports(3)?;
        let id = self.nodes.len() as u32 + 1;
        let template = &self.nodes[0].args;
        let at = |flag: &str| template.iter().position(|a| a == flag).map(|i| template[i + 1].clone());
        let peer = format!("127.0.0.1:{}", ports[2]);
        let initial = format!("{},{id}={peer}", at("--initial-cluster").context("template args")?);
        let data = self.dir.join(format!("node-{id}"));
        std::fs::create_dir_all(&data).with_context(|| format!("mkdir {}", data.display()))?;
        let args = [
            "serve",
            "--node-id",
            &id.to_string(),
            "--initial-cluster",
            &initial,
            "--initial-cluster-state",
            "existing",
            "--data-dir",
            &data.display().to_string(),
            "--listen",
            &format!("127.0.0.1:{}", ports[0]),
            "--ops-listen",
            &format!("127.0.0.1:{}", ports[1]),
            "--peer-listen",
            &peer,
            "--public-url",
            &format!("http://127.0.0.1:{}", ports[0]),
        ];
        self.nodes.push(IdNode {
            id,
            api: format!("http://127.0.0.1:{}", ports[0]),
            ops: format!("http://127.0.0.1:{}", ports[1]),
            args: args.iter().map(|a| a.to_string()).collect(),
            kek: base64::engine::general_purpose::STANDARD.encode(random_bytes(32)?),
            log: self.dir.join(format!("node-{id}.log")),
            child: None,
        });
        Ok((self.nodes.len() - 1, peer))
    }

    pub fn spawn(&mut self, i: usize) -> Result<()> {
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
            // The load generator is one source address: measure capacity, not the per-source
            // token-issue rate limit (the reference Keystone has none).
            .env("IDNODE_AUTH_RATE_LIMIT_PER_SECOND", "0")
            // the same for the OAuth2 endpoints' per-source and per-client limits
            .env("IDNODE_OAUTH2_RATE_LIMIT_PER_SECOND", "0")
            .env("IDNODE_KEYSTONE_SHADOW_REGISTRY_AUTH_RATE_LIMIT", "0")
            .env("IDNODE_KEYSTONE_SHADOW_REGISTRY_CREATION_RATE_LIMIT", "0")
            .env("IDNODE_KEYSTONE_SCIM_REALM_WRITE_RATE_LIMIT", "0")
            // The mapped-login benchmark's IdP serves its keys on loopback.
            .env("IDNODE_FEDERATION_ALLOW_PRIVATE_NETWORKS", "true")
            .env("IDNODE_FEDERATION_OUTBOUND_RATE_LIMIT", "0")
            .env("IDNODE_LOG", std::env::var("IDNODE_BENCH_LOG").unwrap_or_else(|_| "warn".to_owned()))
            // Extra node settings for an experiment: `IDNODE_BENCH_NODE_ENV="K=V,K=V"`.
            .envs(
                std::env::var("IDNODE_BENCH_NODE_ENV")
                    .unwrap_or_default()
                    .split(',')
                    .filter_map(|kv| kv.split_once('='))
                    .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned())),
            )
            .envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
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

    pub fn pids(&self) -> Vec<u32> {
        self.nodes.iter().filter_map(|n| n.child.as_ref().and_then(|c| c.id())).collect()
    }

    pub async fn wait_ready(&mut self, i: usize, deadline: Instant) -> Result<()> {
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
    pub async fn start_all(&mut self) -> Result<f64> {
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

    pub async fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.nodes[i].child.take() {
            let _ = c.kill().await;
        }
    }

    pub async fn kill_all(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill(i).await;
        }
    }

    /// Index of the node reporting `idnode_raft_is_leader 1` (polled, 60 s).
    pub async fn leader(&self) -> Result<usize> {
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
