//! Process and host probes from /proc: RSS, CPU time, children, host load, draining.

use std::time::{Duration, Instant};

/// VmRSS of a process in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse().ok())
}

/// utime + stime of a process in clock ticks.
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = s.rsplit_once(')')?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state); utime is field 14, stime 15
    let ut: u64 = f.get(11)?.parse().ok()?;
    let st: u64 = f.get(12)?.parse().ok()?;
    Some(ut + st)
}

pub fn children_of(ppid: u32) -> Vec<u32> {
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
pub async fn host_busy_pct(secs: u64) -> Option<f64> {
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
/// RSS of `pids` once the load's leftovers are gone: the processes drained, then one more
/// period of the node's heap trimming (5 s) and a second.
pub async fn settled_rss_kib(pids: &[u32]) -> u64 {
    drain(pids).await;
    tokio::time::sleep(Duration::from_secs(6)).await;
    pids.iter().filter_map(|p| rss_kib(*p)).sum()
}

pub async fn drain(pids: &[u32]) {
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
