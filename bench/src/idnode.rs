//! The idnode runs: a fresh n-node cluster, the fixture, the workloads, a restart.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::args::Args;
use crate::cluster::{IdCluster, READY_TIMEOUT};
use crate::fixture::{describe, fixture};
use crate::oauth2;
use crate::probe::{drain, host_busy_pct, rss_kib, settled_rss_kib};
use crate::report::SystemResult;
use crate::util::progress;
use crate::workloads;
use crate::wrk::Wrk;

pub async fn bench_idnode(args: &Args, bin: &Path, wrk: &Wrk, n: u32, out: &Path) -> Result<SystemResult> {
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
        res.notes.extend(fx.notes.iter().cloned());
        res.as_admin = fx.as_admin;
        res.notes.extend(describe(&c.http, &c.nodes[leader].api, &fx).await?);
        // idle: let replication and background work settle, then read RSS
        drain(&c.pids()).await;
        tokio::time::sleep(Duration::from_secs(2)).await;
        res.idle_rss_kib = Some(c.pids().iter().filter_map(|p| rss_kib(*p)).sum());

        let pids = c.pids();
        let follower = (n > 1).then(|| c.nodes[follower].api.as_str());
        let w = wrk.in_dir(&dir);
        // `--members all`: every member's `host:port`, for the load a balancer would spread.
        let members: Vec<String> = match (n > 1, args.members) {
            (true, crate::args::Members::All) => {
                c.nodes.iter().map(|m| m.api.trim_start_matches("http://").trim_end_matches('/').to_string()).collect()
            }
            _ => Vec::new(),
        };
        res.cases = workloads::run(&w, &c.nodes[leader].api, follower, &members, &fx, &pids).await?;
        for (label, r) in res.cases.iter().filter(|(_, r)| !r.member_answers.is_empty()) {
            res.notes.push(format!(
                "{label}: members' shares of the answers {} (leader: member {})",
                r.member_shares_text(),
                leader + 1
            ));
        }
        let oauth2 = oauth2::run(&w, &c.http, &c.nodes[leader].api, follower, &fx.admin, &pids, &mut res.notes).await?;
        res.cases.extend(oauth2);
        let mapped = crate::mapped::run(&w, &c.http, &c.nodes[leader].api, &fx.admin, &pids, &mut res.notes).await?;
        res.cases.extend(mapped);
        let scim = crate::scim::run(&w, &c.http, &c.nodes[leader].api, &fx.admin, &pids, &mut res.notes).await?;
        res.cases.extend(scim);
        res.load_rss_kib = Some(c.pids().iter().filter_map(|p| rss_kib(*p)).sum());
        res.settled_rss_kib = Some(settled_rss_kib(&c.pids()).await);
        res.notes.push(freshness_note(&c).await);

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

/// The read barriers each node's freshness gate ran during the workloads (see docs/raft.md):
/// each one is a validation that waited for a round trip to the leader because the node had
/// not heard from it within the minimum election timeout.
async fn freshness_note(c: &IdCluster) -> String {
    let mut parts = Vec::new();
    for n in &c.nodes {
        let text = match c.http.get(format!("{}/metrics", n.ops)).send().await {
            Ok(r) => r.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        let count = text
            .lines()
            .find(|l| l.starts_with("idnode_raft_freshness_barriers_total"))
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap_or("?")
            .to_owned();
        parts.push(format!("node {} {count}", n.id));
    }
    format!("freshness read barriers during the workloads: {}", parts.join(", "))
}
