//! The reference Python Keystone (memcached variant), run by the shared scripts.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use crate::api::http_client;
use crate::args::Args;
use crate::fixture::{describe, fixture};
use crate::probe::{children_of, drain, host_busy_pct, rss_kib};
use crate::report::SystemResult;
use crate::util::progress;
use crate::workloads;
use crate::wrk::Wrk;

pub const KEYSTONE_BASE: &str = "http://127.0.0.1:35357";
pub const ANCHORS: &str = "/opt/anchors";

pub async fn run_script(script: &Path, envs: &[(&str, &str)], log: &Path, timeout: Duration) -> Result<String> {
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

pub fn keystone_pids() -> Vec<u32> {
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

pub async fn bench_reference(
    args: &Args,
    refdir: &Path,
    wrk: &Wrk,
    out: &Path,
    force_admin: bool,
) -> Result<SystemResult> {
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
        res.notes.extend(fx.notes.iter().cloned());
        res.as_admin = fx.as_admin;
        res.notes.extend(describe(&http, KEYSTONE_BASE, &fx).await?);
        let pids = keystone_pids();
        drain(&pids).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        res.idle_rss_kib = Some(keystone_pids().iter().filter_map(|p| rss_kib(*p)).sum());
        res.cases = workloads::run(&wrk.in_dir(&dir), KEYSTONE_BASE, None, &[], &fx, &pids).await?;
        res.load_rss_kib = Some(keystone_pids().iter().filter_map(|p| rss_kib(*p)).sum());
        res.settled_rss_kib = Some(crate::probe::settled_rss_kib(&keystone_pids()).await);
        Ok::<(), anyhow::Error>(())
    }
    .await;
    let _ = run_script(&stop, &env, &dir.join("stop.log"), Duration::from_secs(60)).await;
    result.map(|_| res)
}
