//! Results of one system and the Markdown report.

use std::collections::BTreeMap;
use std::path::Path;

use crate::args::Args;
use crate::wrk::WrkResult;

#[derive(Debug, Default, Clone)]
pub struct SystemResult {
    pub label: String,
    pub cases: BTreeMap<&'static str, WrkResult>,
    pub idle_rss_kib: Option<u64>,
    pub load_rss_kib: Option<u64>,
    pub cold_start_s: Option<f64>,
    pub restart_s: Option<f64>,
    /// RSS right after the cold start, before the fixture was created, KiB
    pub start_rss_kib: Option<u64>,
    /// host CPU busy % over 3 s before this system was started (load from other jobs)
    pub host_busy_before: Option<f64>,
    /// issue/validate ran with admin credentials (fixture fallback)
    pub as_admin: bool,
    pub notes: Vec<String>,
}

pub fn fmt_opt(v: Option<f64>, prec: usize) -> String {
    v.map(|x| format!("{x:.prec$}")).unwrap_or_else(|| "—".to_owned())
}

pub fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
        _ => "—".to_owned(),
    }
}

pub fn report(args: &Args, systems: &[SystemResult], reference: Option<&SystemResult>, out: &Path) -> String {
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
