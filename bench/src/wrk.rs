//! The `wrk` driver: one case is a warm-up run, then a measured run, parsed from the shared
//! script's `WRKRESULT` line, with the server processes' CPU time per request.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use crate::probe::{cpu_ticks, drain, rss_kib};
use crate::util::progress;

#[derive(Debug, Clone, Default)]
pub struct WrkResult {
    pub rps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub requests: u64,
    pub non2xx: u64,
    pub sock_err: u64,
    /// CPU milliseconds of the server processes per completed request.
    pub cpu_ms_per_req: Option<f64>,
    /// Server CPU seconds per wall-clock second of the measured run (cores the server used).
    pub cores_used: Option<f64>,
    /// RSS of the server processes right after the measured run, KiB.
    pub rss_after_kib: Option<u64>,
    /// With the load spread over every member (`MEMBERS`): the answers each one gave.
    pub member_answers: Vec<u64>,
}

impl WrkResult {
    /// Each member's share of the answers, in per cent.
    pub fn member_shares(&self) -> Vec<f64> {
        let total: u64 = self.member_answers.iter().sum();
        self.member_answers.iter().map(|a| if total > 0 { 100.0 * *a as f64 / total as f64 } else { 0.0 }).collect()
    }

    /// The shares as the progress line and the report's notes print them: `48.4% / 26.1% / ...`.
    pub fn member_shares_text(&self) -> String {
        self.member_shares().iter().map(|s| format!("{s:.1}%")).collect::<Vec<_>>().join(" / ")
    }
}

pub fn parse_wrkresult(out: &str) -> Option<WrkResult> {
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
        cores_used: None,
        rss_after_kib: None,
        member_answers: out
            .lines()
            .find_map(|l| l.strip_prefix("WRKMEMBERS "))
            .map(|l| l.split(',').filter_map(|n| n.trim().parse().ok()).collect())
            .unwrap_or_default(),
    })
}

pub struct Wrk {
    /// The shared Keystone script.
    pub lua: PathBuf,
    /// The bench's form-post script (`bench/lua/form.lua`, written to the output directory):
    /// the shared script plus `MODE=form`; used for the cases whose vars say `MODE=form`.
    pub form_lua: PathBuf,
    /// The bench's spreading script (`bench/lua/members.lua`): the shared script with wrk's
    /// threads spread over the members named by `MEMBERS`; used for the cases that set it.
    pub members_lua: PathBuf,
    /// `--only`: the workloads to run (empty: all).
    pub only: Vec<String>,
    pub out: PathBuf,
    pub threads: u32,
    pub conns: u32,
    pub duration: u64,
    pub warmup: u64,
}

impl Wrk {
    /// The same settings, writing its output to `out`.
    pub fn in_dir(&self, out: &Path) -> Wrk {
        Wrk {
            lua: self.lua.clone(),
            form_lua: self.form_lua.clone(),
            members_lua: self.members_lua.clone(),
            only: self.only.clone(),
            out: out.to_path_buf(),
            ..*self
        }
    }

    /// Whether `--only` selects the workload `label`.
    pub fn wants(&self, label: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| label.starts_with(o.as_str()))
    }

    /// Runs the case `label` into `cases` when `--only` selects it.
    pub async fn add(
        &self,
        cases: &mut BTreeMap<&'static str, WrkResult>,
        label: &'static str,
        url: &str,
        vars: &[(&str, String)],
        pids: &[u32],
    ) -> Result<()> {
        if self.wants(label) {
            cases.insert(label, self.case(label, url, vars, pids).await?);
        }
        Ok(())
    }

    pub async fn run_once(
        &self,
        file: &Path,
        secs: u64,
        url: &str,
        vars: &[(&str, String)],
        tag: &str,
    ) -> Result<String> {
        let (threads, conns, script) = self.shape(vars);
        let mut cmd = tokio::process::Command::new("wrk");
        cmd.arg(format!("-t{threads}"))
            .arg(format!("-c{conns}"))
            .arg(format!("-d{secs}s"))
            .arg("--timeout")
            .arg("30s")
            .arg("--latency")
            .arg("-s")
            .arg(script)
            .arg(url)
            .env("RUN_TAG", tag)
            .env("KEYSTONE_LUA", &self.lua)
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

    /// wrk's threads, connections and script for a case: the form.lua modes (form posts,
    /// bearer posts) run through that wrapper script; spread over members (`MEMBERS`), a whole
    /// number of threads per member and as many connections to each.
    fn shape(&self, vars: &[(&str, String)]) -> (u32, u32, &Path) {
        let form = vars.iter().any(|(k, v)| {
            *k == "MODE" && matches!(v.as_str(), "form" | "form_pool" | "bearer" | "bearer_get" | "scim_user")
        });
        let members = vars.iter().find(|(k, _)| *k == "MEMBERS").map_or(0, |(_, v)| v.split(',').count() as u32);
        match members {
            0 => (self.threads, self.conns, if form { &self.form_lua } else { &self.lua }),
            n => {
                let threads = self.threads.div_ceil(n) * n;
                (threads, self.conns.div_ceil(threads).max(1) * threads, &self.members_lua)
            }
        }
    }

    /// Warm-up, drain, measured run, drain. `pids` are the server processes (for CPU/request
    /// and draining).
    pub async fn case(&self, label: &str, url: &str, vars: &[(&str, String)], pids: &[u32]) -> Result<WrkResult> {
        let stamp = chrono::Utc::now().format("%H%M%S%3f").to_string();
        let (threads, conns, _) = self.shape(vars);
        let spread = if threads != self.threads || conns != self.conns { " (spread over the members)" } else { "" };
        progress(format!("  {label}: wrk -t{threads} -c{conns} -d{}s {url}{spread}", self.duration));
        if self.warmup > 0 {
            self.run_once(&self.out.join(format!("{label}.warmup.txt")), self.warmup, url, vars, &format!("w{stamp}"))
                .await?;
            drain(pids).await;
        }
        let t0: u64 = pids.iter().filter_map(|p| cpu_ticks(*p)).sum();
        let started = std::time::Instant::now();
        let text = self
            .run_once(&self.out.join(format!("{label}.txt")), self.duration, url, vars, &format!("r{stamp}"))
            .await?;
        let t1: u64 = pids.iter().filter_map(|p| cpu_ticks(*p)).sum();
        let wall = started.elapsed().as_secs_f64();
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
            let cpu_s = t1.saturating_sub(t0) as f64 / tck;
            r.cpu_ms_per_req = Some(1000.0 * cpu_s / r.requests as f64);
            if wall > 0.0 {
                r.cores_used = Some(cpu_s / wall);
            }
        }
        progress(format!(
            "    {:.1} req/s, p50 {:.2} ms, p99 {:.2} ms, non-2xx {}, socket errors {}",
            r.rps, r.p50_ms, r.p99_ms, r.non2xx, r.sock_err
        ));
        if !r.member_answers.is_empty() {
            progress(format!("    members' shares of the answers: {}", r.member_shares_text()));
        }
        Ok(r)
    }
}

pub fn ensure_wrk() -> Result<()> {
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
