//! The Keystone import (`--keystone-import`): a generated Keystone database of USERS users,
//! PROJECTS projects and ASSIGNMENTS role assignments (Keystone 30's own schema, made by
//! `keystone_import_fixture.py` with the reference's Python) moved into a three-node cluster
//! started with `bootstrap = import` by `idnode import keystone`. The figure is the import's
//! wall time (reading the database included) and its records per second; the peak RSS of
//! the members and of the command, and a check that every record arrived.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::cluster::IdCluster;
use crate::util::progress;

const KEYSTONE_PYTHON: &str = "/opt/anchors/keystone-venv/bin/python";

fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

pub async fn bench_keystone_import(
    bin: &Path,
    out: &Path,
    (users, projects, assignments): (u32, u32, u32),
) -> Result<String> {
    let dir = out.join("keystone-import");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("rm -r {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir)?;
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/keystone_import_fixture.py");
    progress(format!("== Keystone import: generating {users} users, {projects} projects, {assignments} assignments"));
    let source = dir.join("keystone");
    let generated = Instant::now();
    let status = std::process::Command::new(KEYSTONE_PYTHON)
        .arg(fixture)
        .arg(&source)
        .args([users.to_string(), projects.to_string(), assignments.to_string()])
        .status()
        .with_context(|| format!("{KEYSTONE_PYTHON} {fixture} (run scripts/install-test-deps)"))?;
    if !status.success() {
        bail!("the fixture generator failed: {status}");
    }
    progress(format!("fixture ready in {:.1}s", generated.elapsed().as_secs_f64()));

    let mut c = IdCluster::new(bin, &dir.join("cluster"), 3)?;
    c.env.push(("IDNODE_BOOTSTRAP".into(), "import".into()));
    for i in 0..c.nodes.len() {
        c.spawn(i)?;
    }
    let result = async {
        let leader_ops = c.nodes[0].ops.clone();
        let report = dir.join("report.json");
        let started = Instant::now();
        let mut cmd = tokio::process::Command::new(bin);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("IDNODE_") {
                cmd.env_remove(&k);
            }
        }
        let child = cmd
            .args(["import", "keystone", "--batch", "5000", "--endpoint", &leader_ops, "--database"])
            .arg(source.join("keystone.db"))
            .arg("--credential-keys")
            .arg(source.join("credential-keys"))
            .arg("--report")
            .arg(&report)
            .env("IDNODE_CLUSTER_SECRET", &c.secret)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .context("spawn idnode import")?;
        let cli_pid = child.id();
        let watch = tokio::spawn(async move {
            let mut peak = 0;
            while let Some(kib) = cli_pid.and_then(peak_kib) {
                peak = peak.max(kib);
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            peak
        });
        let output = tokio::time::timeout(Duration::from_secs(1800), child.wait_with_output())
            .await
            .context("the import took over 30 minutes")??;
        let seconds = started.elapsed().as_secs_f64();
        let cli_peak = watch.await.unwrap_or(0);
        if !output.status.success() {
            bail!("idnode import failed: {}", String::from_utf8_lossy(&output.stderr));
        }
        let r: serde_json::Value = serde_json::from_slice(&std::fs::read(&report)?)?;
        let imported = |kind: &str| r["kinds"][kind]["imported"].as_u64().unwrap_or(0);
        let conflicts = r["conflicts"].as_array().map_or(0, Vec::len);
        // bootstrap's own records (the admin user, project and grants) are present, not imported
        if imported("users") + 1 < users as u64
            || imported("projects") + 1 < projects as u64
            || imported("role assignments") < assignments as u64
            || conflicts > 0
        {
            bail!("not every record arrived: {}", String::from_utf8_lossy(&output.stdout));
        }
        let total: u64 = r["kinds"]
            .as_object()
            .map(|k| k.values().map(|t| t["imported"].as_u64().unwrap_or(0) + t["present"].as_u64().unwrap_or(0)).sum())
            .unwrap_or(0);
        let members: Vec<u64> = c.pids().into_iter().filter_map(peak_kib).collect();
        Ok::<_, anyhow::Error>((seconds, total, members, cli_peak, String::from_utf8_lossy(&output.stdout).to_string()))
    }
    .await;
    c.kill_all().await;
    let (seconds, total, members, cli_peak, printed) = result?;
    progress(printed);
    let mib = |k: u64| k as f64 / 1024.0;
    let mut s = format!(
        "## Keystone import (3 nodes, `idnode import keystone --batch 5000`)\n\n\
         {users} users, {projects} projects, {assignments} role assignments ({total} records): \
         **{seconds:.1} s**, {:.0} records/s, reading the SQLite database included.\n\n\
         | process | peak RSS MiB |\n|---|---:|\n",
        total as f64 / seconds.max(1e-6)
    );
    for (i, k) in members.iter().enumerate() {
        s.push_str(&format!("| member {} | {:.0} |\n", i + 1, mib(*k)));
    }
    s.push_str(&format!("| `idnode import` | {:.0} |\n", mib(cli_peak)));
    Ok(s)
}
