//! The growing-state curve (`--fill`): projects created through a three-node cluster's
//! leader, `CONCURRENCY` at a time, from an empty state to `--fill-projects`, with the create
//! rate of every window of `--fill-window` creates. The figure is the last window's rate
//! against the first's: how much a large state slows writes down. Also used by the operator
//! benchmark (`ops.rs`) to fill its state.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use futures::stream::{self, StreamExt};
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::api::{call_retry, password_body};
use crate::cluster::IdCluster;
use crate::probe::rss_kib;
use crate::util::progress;

/// Creates in flight at once (as many as the create workload's wrk connections).
const CONCURRENCY: usize = 16;

/// One window of the fill.
pub struct Window {
    /// Projects in the state when the window ended.
    pub upto: u32,
    pub per_s: f64,
    /// RSS of the member the creates went through, MiB.
    pub rss_mib: f64,
}

pub async fn admin_token(c: &IdCluster, i: usize) -> Result<String> {
    let body = password_body("admin", &c.admin_password, "admin");
    let r = call_retry(&c.http, Method::POST, &format!("{}/v3/auth/tokens", c.nodes[i].api), None, Some(&body)).await?;
    r.subject_token.with_context(|| format!("admin token: {} {}", r.status, r.text))
}

/// Creates projects `from..to` through member `i`, with the rate of each `window` creates.
pub async fn fill(c: &IdCluster, i: usize, (from, to): (u32, u32), window: u32) -> Result<Vec<Window>> {
    let token = admin_token(c, i).await?;
    let url = format!("{}/v3/projects", c.nodes[i].api);
    let pid = c.pids().get(i).copied();
    let mut windows = Vec::new();
    let mut start = from;
    while start < to {
        let end = to.min(start.saturating_add(window.max(1)));
        let began = Instant::now();
        let results: Vec<Result<()>> = stream::iter(start..end)
            .map(|j| {
                let (http, url, token) = (c.http.clone(), url.clone(), token.clone());
                async move {
                    let body = json!({"project": {"name": format!("bk-{j}"), "domain_id": "default",
                        "description": "a project of the growing-state benchmark"}});
                    let r = call_retry(&http, Method::POST, &url, Some(&token), Some(&body)).await?;
                    if r.status != StatusCode::CREATED && r.status != StatusCode::CONFLICT {
                        bail!("create project {j}: {} {}", r.status, r.text);
                    }
                    Ok(())
                }
            })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        results.into_iter().collect::<Result<()>>()?;
        let per_s = f64::from(end - start) / began.elapsed().as_secs_f64();
        let rss_mib = pid.and_then(rss_kib).map_or(f64::NAN, |k| k as f64 / 1024.0);
        progress(format!("  {end} projects: {per_s:.0} creates/s in the last {} (RSS {rss_mib:.1} MiB)", end - start));
        windows.push(Window { upto: end, per_s, rss_mib });
        start = end;
    }
    Ok(windows)
}

/// The `--fill` run: a Markdown table of the curve.
pub async fn bench_fill(bin: &Path, out: &Path, projects: u32, window: u32) -> Result<String> {
    let dir = out.join("fill");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("rm -r {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir)?;
    let mut c = IdCluster::new(bin, &dir, 3)?;
    let cold = c.start_all().await?;
    progress(format!("== growing state (3 nodes; cold start {cold:.2}s): {projects} projects"));
    let result = async {
        let leader = c.leader().await?;
        fill(&c, leader, (0, projects), window).await
    }
    .await;
    c.kill_all().await;
    let windows = result?;
    let (Some(first), Some(last)) = (windows.first(), windows.last()) else { bail!("no window was measured") };
    let mut s = format!(
        "## Creates as the state grows (3 nodes, through the leader, {CONCURRENCY} at a time)\n\n\
         Last window against the first: **{:.2}** ({:.0} against {:.0} creates/s).\n\n\
         | projects in the state | creates/s in the window | leader RSS MiB |\n|---:|---:|---:|\n",
        last.per_s / first.per_s,
        last.per_s,
        first.per_s
    );
    for w in &windows {
        s.push_str(&format!("| {} | {:.0} | {:.1} |\n", w.upto, w.per_s, w.rss_mib));
    }
    Ok(s)
}
