//! Operator benchmarks (`--ops`), on a 3-node cluster of real processes:
//! * failover: the leader is SIGKILLed while a client writes through a follower; the figure
//!   is the time from the kill to the next acknowledged write (etcd: 1-2 s);
//! * backup and restore: `idnode backup` of a state of `--ops-projects` projects from a
//!   follower, then `idnode restore` of the file into a new data directory, in MB/s;
//! * snapshot install: a fourth node joins as a learner and catches up on that state by a
//!   raft snapshot; the figures are the time and the peak RSS growth of the sender (the
//!   leader) and the receiver (`VmHWM`, reset through `/proc/PID/clear_refs`) up to the end
//!   of the install (moving the state), and up to the end of the catch-up (the entries after
//!   the snapshot applied too, which fill the receiver's RocksDB cache and memtables).

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::api::{call, http_client};
use crate::cluster::{IdCluster, READY_TIMEOUT};
use crate::fill::admin_token;
use crate::util::progress;

/// Longest one write may take to be acknowledged after a kill before the run gives up.
const FAILOVER_GIVE_UP: Duration = Duration::from_secs(30);

/// The nearest-rank percentile of sorted values.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Kills the leader `kills` times; returns the seconds from each kill to the next write
/// acknowledged through a follower.
async fn failover(c: &mut IdCluster, kills: u32) -> Result<Vec<f64>> {
    let http = http_client(Duration::from_secs(10))?;
    let mut times = Vec::new();
    for k in 0..kills {
        let leader = c.leader().await?;
        let follower = (leader + 1) % c.nodes.len();
        let token = admin_token(c, follower).await?;
        let url = format!("{}/v3/projects", c.nodes[follower].api);
        let body = |n: u32| json!({"project": {"name": format!("fo-{k}-{n}"), "domain_id": "default"}});
        // The writer is flowing before the fault.
        let r = call(&http, Method::POST, &url, Some(&token), Some(&body(0))).await?;
        if r.status != StatusCode::CREATED {
            bail!("write before kill {k}: {} {}", r.status, r.text);
        }
        c.kill(leader).await;
        let killed = Instant::now();
        let mut n = 1;
        loop {
            if let Ok(r) = call(&http, Method::POST, &url, Some(&token), Some(&body(n))).await {
                if r.status == StatusCode::CREATED {
                    break;
                }
            }
            if killed.elapsed() > FAILOVER_GIVE_UP {
                bail!("no write acknowledged within {FAILOVER_GIVE_UP:?} of kill {k}");
            }
            n += 1;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let took = killed.elapsed().as_secs_f64();
        progress(format!("  kill {}: next write acknowledged after {took:.3}s", k + 1));
        times.push(took);
        c.spawn(leader)?;
        c.wait_ready(leader, Instant::now() + READY_TIMEOUT).await?;
    }
    Ok(times)
}

/// Runs `idnode ARGS` with the cluster secret (and `env`), returning its JSON summary.
async fn cli(c: &IdCluster, args: &[&str], env: &[(&str, &str)]) -> Result<Value> {
    let mut cmd = tokio::process::Command::new(&c.bin);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("IDNODE_") {
            cmd.env_remove(&k);
        }
    }
    let out = cmd
        .args(args)
        .env("IDNODE_CLUSTER_SECRET", &c.secret)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .await
        .with_context(|| format!("run idnode {args:?}"))?;
    if !out.status.success() {
        bail!("idnode {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    serde_json::from_slice(&out.stdout).with_context(|| format!("summary of idnode {args:?}"))
}

/// (backup summary, restore summary).
async fn backup_restore(c: &IdCluster, dir: &Path, projects: u32) -> Result<(Value, Value)> {
    let leader = c.leader().await?;
    let follower = (leader + 1) % c.nodes.len();
    progress(format!("  filling the state with {projects} projects"));
    crate::fill::fill(c, leader, (0, projects), 10_000).await?;
    let file = dir.join("state.backup");
    let _ = std::fs::remove_file(&file);
    let file_s = file.display().to_string();
    let backup = cli(c, &["backup", "--endpoint", &c.nodes[follower].ops, "--out", &file_s], &[]).await?;
    progress(format!("  backup: {backup}"));
    let target = dir.join("restored");
    let _ = std::fs::remove_dir_all(&target);
    let target_s = target.display().to_string();
    let kek = &c.nodes[0].kek;
    let restore = cli(
        c,
        &[
            "restore",
            "--from",
            &file_s,
            "--node-id",
            "1",
            "--initial-cluster",
            "1=127.0.0.1:1",
            "--data-dir",
            &target_s,
        ],
        &[("IDNODE_KEK", kek)],
    )
    .await?;
    progress(format!("  restore: {restore}"));
    Ok((backup, restore))
}

fn proc_kib(pid: u32, field: &str) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status.lines().find(|l| l.starts_with(field)).with_context(|| format!("{field} of {pid}"))?;
    line.split_whitespace().nth(1).context("value")?.parse().context("kB")
}

/// Resets the peak RSS of `pid` to its current RSS; returns that RSS (KiB).
fn reset_peak(pid: u32) -> Result<u64> {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").with_context(|| format!("clear_refs of {pid}"))?;
    proc_kib(pid, "VmRSS:")
}

/// Time and peak RSS growth (KiB) of the sender and the receiver, from `add-learner` on.
#[derive(Clone, Copy)]
struct Leg {
    seconds: f64,
    sender: u64,
    receiver: u64,
}

/// The learner's catch-up by snapshot: up to the end of the snapshot's install (the move
/// itself), up to the leader's commit index as of the start (with the entries after the
/// snapshot applied), and the snapshot's bytes.
async fn snapshot_install(c: &mut IdCluster) -> Result<(Leg, Leg, u64)> {
    let leader = c.leader().await?;
    let peer_of = |c: &IdCluster, i: usize| {
        let a = &c.nodes[i].args;
        a.iter().position(|x| x == "--peer-listen").map(|p| a[p + 1].clone()).context("peer address")
    };
    let status = cli(c, &["cluster", "status", "--endpoint", &peer_of(c, leader)?], &[]).await?;
    let target = status["committed"].as_u64().context("committed")?;
    let pid_of = |c: &IdCluster, i: usize| c.nodes[i].child.as_ref().and_then(|ch| ch.id()).context("pid");
    let (learner, peer) = c.add_joining()?;
    c.spawn(learner)?;
    // Started, not ready: it has no state yet. Let it settle before the baseline.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (sender_base, receiver_base) = (reset_peak(pid_of(c, leader)?)?, reset_peak(pid_of(c, learner)?)?);
    let split = |pid: u32| -> Result<(u64, u64)> { Ok((proc_kib(pid, "RssAnon:")?, proc_kib(pid, "RssFile:")?)) };
    let receiver_split = split(pid_of(c, learner)?)?;
    let started = Instant::now();
    let id = c.nodes[learner].id.to_string();
    let leg = |c: &IdCluster| -> Result<Leg> {
        Ok(Leg {
            seconds: started.elapsed().as_secs_f64(),
            sender: proc_kib(pid_of(c, leader)?, "VmHWM:")?.saturating_sub(sender_base),
            receiver: proc_kib(pid_of(c, learner)?, "VmHWM:")?.saturating_sub(receiver_base),
        })
    };
    cli(c, &["cluster", "add-learner", &id, &peer, "--endpoint", &peer_of(c, leader)?], &[]).await?;
    // The install's end is read off the learner's metrics every 20 ms, so the first figure
    // includes at most that long of the entries applied after the snapshot.
    let mut moved = None;
    for round in 0u64.. {
        if moved.is_none() && status_metric(c, learner, "idnode_raft_snapshot_installs_total").await.unwrap_or(0) >= 1 {
            moved = Some(leg(c)?);
        }
        if moved.is_some() && round % 5 == 0 {
            let s = cli(c, &["cluster", "status", "--endpoint", &peer], &[]).await;
            if s.as_ref().ok().and_then(|s| s["applied"].as_u64()).is_some_and(|a| a >= target) {
                break;
            }
        }
        if started.elapsed() > Duration::from_secs(1800) {
            bail!("the learner did not catch up in 30 min; log: {}", c.nodes[learner].log.display());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let caught_up = leg(c)?;
    let moved = moved.context("the install's end was not seen")?;
    let bytes = status_metric(c, learner, "idnode_raft_snapshot_size_bytes").await?;
    // Where the receiver's memory is now: its heap (anonymous) or mapped files.
    let now = split(pid_of(c, learner)?)?;
    progress(format!(
        "  receiver after the install: anonymous {:+} KiB, file-backed {:+} KiB",
        now.0 as i64 - receiver_split.0 as i64,
        now.1 as i64 - receiver_split.1 as i64
    ));
    let mut rocks = Vec::new();
    for name in
        ["idnode_storage_block_cache_bytes", "idnode_storage_memtable_bytes", "idnode_storage_table_readers_bytes"]
    {
        rocks.push(format!("{name} {} KiB", status_metric(c, learner, name).await? / 1024));
    }
    progress(format!("  receiver's RocksDB: {}", rocks.join(", ")));
    for (what, l) in [("installed", moved), ("caught up", caught_up)] {
        progress(format!(
            "  snapshot {what}: {:.2}s, sender +{} KiB, receiver +{} KiB, {bytes} bytes",
            l.seconds, l.sender, l.receiver
        ));
    }
    Ok((moved, caught_up, bytes))
}

/// One unlabelled gauge from a node's `/metrics`.
async fn status_metric(c: &IdCluster, i: usize, name: &str) -> Result<u64> {
    let text = c.http.get(format!("{}/metrics", c.nodes[i].ops)).send().await?.text().await?;
    let line =
        text.lines().find(|l| l.starts_with(name) && l[name.len()..].starts_with(' ')).context(name.to_owned())?;
    line.split_whitespace().nth(1).context("value")?.parse::<f64>().map(|v| v as u64).context("number")
}

/// The `--ops` run: a Markdown section with the figures.
pub async fn bench_ops(bin: &Path, out: &Path, kills: u32, projects: u32) -> Result<String> {
    let dir = out.join("ops");
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("rm -r {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir)?;
    let mut c = IdCluster::new(bin, &dir, 3)?;
    let cold = c.start_all().await?;
    progress(format!("== operations (3 nodes; cold start {cold:.2}s)"));
    let result = async {
        let mut times = failover(&mut c, kills).await?;
        times.sort_by(f64::total_cmp);
        let (backup, restore) = backup_restore(&c, &dir, projects).await?;
        let install = snapshot_install(&mut c).await?;
        Ok::<_, anyhow::Error>((times, backup, restore, install))
    }
    .await;
    c.kill_all().await;
    let (times, backup, restore, (moved, caught_up, bytes)) = result?;
    let mb = |v: &Value| v["mb_per_s"].as_f64().unwrap_or(f64::NAN);
    let mib = |v: &Value| v["bytes"].as_f64().unwrap_or(f64::NAN) / f64::from(1 << 20);
    Ok(format!(
        "## Operations (3 nodes)\n\n| figure | value |\n|---|---|\n\
         | failover: leader SIGKILL → next write acknowledged through a follower, {} kills | p50 {:.2} s, p99 {:.2} s, max {:.2} s |\n\
         | backup of {projects} projects from a follower ({:.1} MiB) | {:.1} MB/s ({:.2} s) |\n\
         | restore of that file into a new data dir | {:.1} MB/s ({:.2} s) |\n\
         | snapshot install of that state to a new learner ({:.1} MiB snapshot) | {:.2} s; peak RSS growth: sender {:.1} MiB, receiver {:.1} MiB |\n\
         | the learner's catch-up, with the entries after the snapshot applied | {:.2} s; peak RSS growth: sender {:.1} MiB, receiver {:.1} MiB |\n",
        times.len(),
        percentile(&times, 50.0),
        percentile(&times, 99.0),
        times.last().copied().unwrap_or(f64::NAN),
        mib(&backup),
        mb(&backup),
        backup["seconds"].as_f64().unwrap_or(f64::NAN),
        mb(&restore),
        restore["seconds"].as_f64().unwrap_or(f64::NAN),
        bytes as f64 / f64::from(1 << 20),
        moved.seconds,
        moved.sender as f64 / 1024.0,
        moved.receiver as f64 / 1024.0,
        caught_up.seconds,
        caught_up.sender as f64 / 1024.0,
        caught_up.receiver as f64 / 1024.0,
    ))
}
