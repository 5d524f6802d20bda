//! Results of one system and the Markdown report.

use std::collections::BTreeMap;
use std::path::Path;

use crate::args::Args;
use crate::targets;
use crate::wrk::WrkResult;

#[derive(Debug, Default, Clone)]
pub struct SystemResult {
    pub label: String,
    pub cases: BTreeMap<&'static str, WrkResult>,
    pub idle_rss_kib: Option<u64>,
    pub load_rss_kib: Option<u64>,
    /// RSS after load once drained and settled (`probe::settled_rss_kib`), KiB.
    pub settled_rss_kib: Option<u64>,
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

    for row in rows() {
        let values: Vec<Option<String>> = cols.iter().map(|c| row.cell(c)).collect();
        if values.iter().all(Option::is_none) {
            continue;
        }
        s.push_str(&format!("| {} |", row.name));
        for v in values {
            s.push_str(&format!(" {} |", v.unwrap_or_else(|| "—".to_owned())));
        }
        if let Some(r) = reference {
            for c in systems {
                s.push_str(&format!(" {} |", row.ratio(c, r)));
            }
        }
        s.push('\n');
    }
    let mut text_row = |name: &str, cell: &dyn Fn(&SystemResult) -> String| {
        let cells: Vec<String> = cols.iter().map(|c| cell(c)).collect();
        if cells.iter().all(|c| c.split(" / ").all(|v| v == "—")) {
            return;
        }
        s.push_str(&format!("| {name} |"));
        for c in cells {
            s.push_str(&format!(" {c} |"));
        }
        if reference.is_some() {
            for _ in systems {
                s.push_str(" |");
            }
        }
        s.push('\n');
    };
    text_row("non-2xx + socket errors (all cases)", &|c| {
        c.cases.values().map(|w| w.non2xx + w.sock_err).sum::<u64>().to_string()
    });
    for keys in CPU_ROWS {
        let name =
            format!("server CPU ms per request: {}", keys.iter().map(|k| short(k)).collect::<Vec<_>>().join(" / "));
        text_row(&name, &|c| {
            keys.iter()
                .map(|k| {
                    c.cases.get(k).and_then(|w| w.cpu_ms_per_req).map_or_else(|| "—".to_owned(), |v| format!("{v:.2}"))
                })
                .collect::<Vec<_>>()
                .join(" / ")
        });
    }
    let oauth2 = CPU_ROWS[2];
    let name = format!(
        "server CPU cores used during the run: {}",
        oauth2.iter().map(|k| short(k)).collect::<Vec<_>>().join(" / ")
    );
    text_row(&name, &|c| {
        oauth2
            .iter()
            .map(|k| c.cases.get(k).and_then(|w| w.cores_used).map_or_else(|| "—".to_owned(), |v| format!("{v:.2}")))
            .collect::<Vec<_>>()
            .join(" / ")
    });
    let mut notes: Vec<String> =
        cols.iter().flat_map(|c| c.notes.iter().map(move |n| format!("- {}: {n}", c.label))).collect();
    for c in &cols {
        for (k, w) in &c.cases {
            if w.non2xx + w.sock_err > 0 {
                notes.push(format!("- {}: {k}: {} non-2xx, {} socket errors", c.label, w.non2xx, w.sock_err));
            }
        }
    }
    if !notes.is_empty() {
        s.push('\n');
        s.push_str(&notes.join("\n"));
        s.push('\n');
    }
    if let Some(r) = reference {
        s.push('\n');
        s.push_str(&targets::section(systems, r));
    }
    s
}

/// Cases whose server CPU time per request is reported, one table row per group.
const CPU_ROWS: [&[&str]; 3] = [
    &["validate", "issue", "issue_appcred", "create"],
    &["validate_admin", "validate_rbac", "validate_rbac_nocat", "validate_trust", "role_assignments"],
    &[
        "oauth2_client_credentials",
        "oauth2_client_credentials_follower",
        "oauth2_introspect",
        "oauth2_introspect_follower",
        "oauth2_introspect_unseen",
        "mapped_jwt",
        "scim_create",
        "scim_filter",
    ],
];

fn short(case: &str) -> &str {
    match case {
        "validate_admin" => "validate admin",
        "validate_rbac" => "validate rbac",
        "validate_rbac_nocat" => "validate rbac ?nocatalog",
        "validate_trust" => "validate trust",
        "issue_appcred" => "issue app cred",
        "role_assignments" => "role assignments",
        "oauth2_client_credentials" => "OAuth2 client_credentials",
        "oauth2_client_credentials_follower" => "client_credentials on a follower",
        "oauth2_introspect" => "introspect",
        "oauth2_introspect_follower" => "introspect on a follower",
        "oauth2_introspect_unseen" => "introspect, tokens never seen",
        "mapped_jwt" => "mapped JWT login",
        "scim_create" => "SCIM user create",
        "scim_filter" => "SCIM filtered list",
        other => other,
    }
}

type Get = Box<dyn Fn(&SystemResult) -> Option<f64>>;

/// What one table row shows.
enum What {
    /// one number with `prec` decimals
    Value(Get, usize),
    /// "p50 / p99" latency of a case, ms
    Latency(&'static str),
}

struct Row {
    name: &'static str,
    what: What,
    /// no reference ratio (e.g. the host load)
    no_ratio: bool,
}

impl Row {
    fn cell(&self, c: &SystemResult) -> Option<String> {
        match &self.what {
            What::Value(get, prec) => get(c).map(|v| format!("{v:.prec$}")),
            What::Latency(k) => c.cases.get(k).map(|w| format!("{:.2} / {:.2}", w.p50_ms, w.p99_ms)),
        }
    }

    fn ratio(&self, c: &SystemResult, r: &SystemResult) -> String {
        if self.no_ratio {
            return String::new();
        }
        match &self.what {
            What::Value(get, _) => ratio(get(c), get(r)),
            What::Latency(k) => match (c.cases.get(k), r.cases.get(k)) {
                (Some(a), Some(b)) => {
                    format!("{} / {}", ratio(Some(a.p50_ms), Some(b.p50_ms)), ratio(Some(a.p99_ms), Some(b.p99_ms)))
                }
                _ => "—".to_owned(),
            },
        }
    }
}

fn rows() -> Vec<Row> {
    let case =
        |k: &'static str, f: fn(&WrkResult) -> f64| -> Get { Box::new(move |r: &SystemResult| r.cases.get(k).map(f)) };
    let rps = |name, k: &'static str, prec| Row { name, what: What::Value(case(k, |w| w.rps), prec), no_ratio: false };
    let lat = |name, k: &'static str| Row { name, what: What::Latency(k), no_ratio: false };
    let val = |name, get: Get, prec| Row { name, what: What::Value(get, prec), no_ratio: false };
    let mib = |kib: Option<u64>| kib.map(|k| k as f64 / 1024.0);
    let solo = |name, get: Get, prec| Row { name, what: What::Value(get, prec), no_ratio: true };
    let solo_lat = |name, k: &'static str| Row { name, what: What::Latency(k), no_ratio: true };
    // requests per CPU-second of the server processes (1000 / CPU ms per request)
    let per_cpu_s = |k: &'static str| -> Get {
        Box::new(move |r: &SystemResult| {
            r.cases.get(k).and_then(|w| w.cpu_ms_per_req).filter(|ms| *ms > 0.0).map(|ms| 1000.0 / ms)
        })
    };
    vec![
        rps("discovery GET /v3 req/s (the HTTP floor)", "discovery", 0),
        solo(
            "token validation / discovery (share of the node's own HTTP floor; target ≥ 0.85)",
            Box::new(|r: &SystemResult| {
                let (v, d) = (r.cases.get("validate")?.rps, r.cases.get("discovery")?.rps);
                (d > 0.0).then(|| v / d)
            }),
            2,
        ),
        rps("token validation req/s (bench-user: direct role, with catalog)", "validate", 0),
        val("token validation p50 ms", case("validate", |w| w.p50_ms), 2),
        val("token validation p99 ms", case("validate", |w| w.p99_ms), 2),
        rps("token validation on a follower req/s", "validate_follower", 0),
        lat("token validation on a follower p50 / p99 ms", "validate_follower"),
        solo("token validation spread over every member req/s (--members all)", case("validate_members", |w| w.rps), 0),
        solo_lat("token validation spread over every member p50 / p99 ms", "validate_members"),
        rps("token validation, admin token, with catalog req/s", "validate_admin", 0),
        lat("token validation, admin token p50 / p99 ms", "validate_admin"),
        rps("token validation, group + implied-role user, with catalog req/s", "validate_rbac", 0),
        lat("token validation, group + implied-role user, with catalog p50 / p99 ms", "validate_rbac"),
        rps("token validation, group + implied-role user, ?nocatalog req/s", "validate_rbac_nocat", 0),
        lat("token validation, group + implied-role user, ?nocatalog p50 / p99 ms", "validate_rbac_nocat"),
        rps("token validation, trust-scoped token, with catalog req/s", "validate_trust", 0),
        lat("token validation, trust-scoped token p50 / p99 ms", "validate_trust"),
        rps("role assignments (effective, include_names, one project) req/s", "role_assignments", 0),
        lat("role assignments (effective, include_names, one project) p50 / p99 ms", "role_assignments"),
        rps("password token issue req/s", "issue", 1),
        val("password token issue p50 ms", case("issue", |w| w.p50_ms), 1),
        val("password token issue p99 ms", case("issue", |w| w.p99_ms), 1),
        rps("password token issue on a follower req/s", "issue_follower", 1),
        lat("password token issue on a follower p50 / p99 ms", "issue_follower"),
        rps("application-credential token issue req/s", "issue_appcred", 1),
        lat("application-credential token issue p50 / p99 ms", "issue_appcred"),
        rps("application-credential token issue on a follower req/s", "issue_appcred_follower", 1),
        lat("application-credential token issue on a follower p50 / p99 ms", "issue_appcred_follower"),
        rps("project create req/s", "create", 1),
        val("project create p50 ms", case("create", |w| w.p50_ms), 2),
        val("project create p99 ms", case("create", |w| w.p99_ms), 2),
        rps("project create via a follower req/s", "create_follower", 1),
        lat("project create via a follower p50 / p99 ms", "create_follower"),
        solo("project create spread over every member req/s (--members all)", case("create_members", |w| w.rps), 1),
        solo_lat("project create spread over every member p50 / p99 ms", "create_members"),
        // idnode only: the reference Keystone has no OAuth2 provider (no ratio)
        solo("OAuth2 client_credentials grants/s (idnode only)", case("oauth2_client_credentials", |w| w.rps), 0),
        solo_lat("OAuth2 client_credentials p50 / p99 ms (idnode only)", "oauth2_client_credentials"),
        solo(
            "OAuth2 client_credentials grants per server CPU-second (per core used; idnode only)",
            per_cpu_s("oauth2_client_credentials"),
            0,
        ),
        solo(
            "OAuth2 client_credentials on a follower grants/s (idnode only)",
            case("oauth2_client_credentials_follower", |w| w.rps),
            0,
        ),
        solo_lat(
            "OAuth2 client_credentials on a follower p50 / p99 ms (idnode only)",
            "oauth2_client_credentials_follower",
        ),
        solo(
            "OAuth2 client_credentials on a follower grants per server CPU-second (idnode only)",
            per_cpu_s("oauth2_client_credentials_follower"),
            0,
        ),
        solo("mapped JWT logins/s (idnode only; target ≥ 2,000)", case("mapped_jwt", |w| w.rps), 0),
        solo_lat("mapped JWT login p50 / p99 ms (idnode only)", "mapped_jwt"),
        solo("mapped JWT logins per server CPU-second (idnode only)", per_cpu_s("mapped_jwt"), 0),
        solo("SCIM user creates/s (idnode only; target ≥ 500 on 3 nodes)", case("scim_create", |w| w.rps), 0),
        solo_lat("SCIM user create p50 / p99 ms (idnode only)", "scim_create"),
        solo("SCIM filtered lists/s, 10k-user realm (idnode only; target ≥ 5,000)", case("scim_filter", |w| w.rps), 0),
        solo_lat("SCIM filtered list p50 / p99 ms (idnode only)", "scim_filter"),
        solo("OAuth2 introspection req/s (idnode only)", case("oauth2_introspect", |w| w.rps), 0),
        solo_lat("OAuth2 introspection p50 / p99 ms (idnode only)", "oauth2_introspect"),
        solo("OAuth2 introspections per server CPU-second (idnode only)", per_cpu_s("oauth2_introspect"), 0),
        solo(
            "OAuth2 introspection of tokens never seen req/s (idnode only; target ≥ 10,000)",
            case("oauth2_introspect_unseen", |w| w.rps),
            0,
        ),
        solo_lat("OAuth2 introspection of tokens never seen p50 / p99 ms (idnode only)", "oauth2_introspect_unseen"),
        solo(
            "OAuth2 introspections of tokens never seen per server CPU-second (idnode only)",
            per_cpu_s("oauth2_introspect_unseen"),
            0,
        ),
        solo(
            "OAuth2 introspection on a follower req/s (idnode only)",
            case("oauth2_introspect_follower", |w| w.rps),
            0,
        ),
        solo_lat("OAuth2 introspection on a follower p50 / p99 ms (idnode only)", "oauth2_introspect_follower"),
        solo(
            "OAuth2 introspections on a follower per server CPU-second (idnode only)",
            per_cpu_s("oauth2_introspect_follower"),
            0,
        ),
        val("idle RSS MiB after the fixture (all processes)", Box::new(move |r: &SystemResult| mib(r.idle_rss_kib)), 1),
        val("RSS after load MiB (all processes)", Box::new(move |r: &SystemResult| mib(r.load_rss_kib)), 1),
        val(
            "RSS after load, drained and settled 6 s MiB (all processes)",
            Box::new(move |r: &SystemResult| mib(r.settled_rss_kib)),
            1,
        ),
        val(
            "RSS right after start MiB (before the fixture)",
            Box::new(move |r: &SystemResult| mib(r.start_rss_kib)),
            1,
        ),
        val("RSS after validate MiB", case("validate", |w| w.rss_after_kib.unwrap_or(0) as f64 / 1024.0), 1),
        val("RSS after issue MiB", case("issue", |w| w.rss_after_kib.unwrap_or(0) as f64 / 1024.0), 1),
        Row {
            name: "host CPU busy % before the run (other jobs)",
            what: What::Value(Box::new(|r: &SystemResult| r.host_busy_before), 0),
            no_ratio: true,
        },
        val("cold start s (fresh data dir)", Box::new(|r: &SystemResult| r.cold_start_s), 2),
        val("restart s (existing data dir)", Box::new(|r: &SystemResult| r.restart_s), 2),
    ]
}
