//! The monitoring example (`cluster-examples/monitoring/`) judged by Prometheus's own tool:
//! `promtool check rules` on the alert rules, and `promtool test rules` on series scraped from
//! a real three-node cluster before and after one member is killed (the scrape of the dead
//! member fails, so its `up` is 0, as Prometheus records it): the member-down alert fires for
//! that member and no other alert fires on the healthy series. Every series the dashboard
//! queries is one a node exports.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{output_within_async, random_hex, Cluster};

/// Samples per scrape in the synthetic history, 15 s apart: ten minutes before the kill and ten after.
const SAMPLES: usize = 40;

fn example(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("cluster-examples/monitoring").join(file)
}

fn promtool() -> &'static str {
    let found = Command::new("promtool").arg("--version").output().is_ok_and(|o| o.status.success());
    assert!(found, "promtool is missing: run scripts/install-test-deps (Debian's prometheus package)");
    "promtool"
}

/// One scrape: series (with the labels Prometheus adds) to value, and family names to types.
struct Scrape {
    samples: BTreeMap<String, f64>,
    families: BTreeMap<String, String>,
}

async fn scrape(c: &Cluster, i: usize) -> Scrape {
    let text = c.http.get(&format!("{}/metrics", c.ops(i)), None).await.expect("scrape /metrics").text;
    let instance = format!("node-{}", c.nodes[i].id);
    let mut samples = BTreeMap::new();
    let mut families = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split_whitespace();
            if let (Some(name), Some(kind)) = (parts.next(), parts.next()) {
                families.insert(name.to_string(), kind.to_string());
            }
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("not a sample line: {line}"));
        let Ok(value) = value.parse::<f64>() else { continue };
        if !value.is_finite() {
            continue;
        }
        let ours = format!(r#"instance="{instance}",job="idnode""#);
        let series = match series.strip_suffix('}') {
            Some(open) => format!("{open},{ours}}}"),
            None => format!("{series}{{{ours}}}"),
        };
        samples.insert(series, value);
    }
    samples.insert(format!(r#"up{{instance="{instance}",job="idnode"}}"#), 1.0);
    Scrape { samples, families }
}

fn shown(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// The alert names the rules file defines.
fn alert_names(rules: &str) -> Vec<String> {
    rules.lines().filter_map(|l| l.trim().strip_prefix("- alert: ")).map(str::to_string).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alerts_fire_on_a_killed_member_and_stay_quiet_on_a_healthy_cluster() {
    let promtool = promtool();
    let rules_path = example("idnode-alerts.yml");
    let checked = output_within_async(
        tokio::process::Command::new(promtool).arg("check").arg("rules").arg(&rules_path),
        Duration::from_secs(60),
    )
    .await;
    assert!(checked.status.success(), "promtool check rules:\n{}", shown(&checked));

    let mut c = Cluster::start(3).await;
    let leader = c.wait_leader(Duration::from_secs(20)).await;
    // Some traffic, so the request, token and raft families have samples.
    let token = c.admin_token(leader).await;
    for i in 0..3 {
        let p = json!({"project": {"name": format!("mon-{}", random_hex(6)), "domain_id": "default"}});
        let r = c.http.post(&format!("{}/v3/projects", c.api(i)), Some(&token), &p).await.unwrap();
        assert_eq!(r.status, 201, "{}", r.text);
    }
    let before: Vec<Scrape> = futures::future::join_all((0..3).map(|i| scrape(&c, i))).await;
    // Which build each member runs: the metric and discovery agree with `idnode --version`.
    let version = std::process::Command::new(env!("CARGO_BIN_EXE_idnode")).arg("--version").output().unwrap();
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    let v3 = c.http.get(&format!("{}/v3", c.api(0)), None).await.unwrap().json;
    let build = &v3["version"]["build"];
    assert_eq!(
        version,
        format!("idnode {} (commit {})", build["version"].as_str().unwrap(), build["commit"].as_str().unwrap())
    );
    assert_eq!(build["version"], env!("CARGO_PKG_VERSION"));
    let info = format!(
        r#"idnode_build_info{{version="{}",commit="{}",instance="node-1",job="idnode"}}"#,
        env!("CARGO_PKG_VERSION"),
        build["commit"].as_str().unwrap()
    );
    assert_eq!(before[0].samples.get(&info), Some(&1.0), "no {info} in the scrape");
    let killed = (leader + 1) % 3;
    c.kill(killed);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut after = Vec::new();
    for i in (0..3).filter(|&i| i != killed) {
        after.push(scrape(&c, i).await);
    }
    let dead = format!("node-{}", c.nodes[killed].id);
    let mut after_samples: BTreeMap<String, f64> = after.iter().flat_map(|s| s.samples.clone()).collect();
    after_samples.insert(format!(r#"up{{instance="{dead}",job="idnode"}}"#), 0.0);

    let all: BTreeSet<&String> = before.iter().flat_map(|s| s.samples.keys()).chain(after_samples.keys()).collect();
    let before_samples: BTreeMap<&String, f64> =
        before.iter().flat_map(|s| s.samples.iter()).map(|(k, v)| (k, *v)).collect();
    let values = |v: Option<f64>| v.map_or_else(|| "_".to_string(), |v| format!("{v}"));
    let input: Vec<Value> = all
        .iter()
        .map(|series| {
            let one = values(before_samples.get(*series).copied());
            let two = values(after_samples.get(*series).copied());
            let mut vals = vec![one; SAMPLES];
            vals.extend(std::iter::repeat_n(two, SAMPLES));
            json!({"series": series, "values": vals.join(" ")})
        })
        .collect();

    // What the data says about the disk, so a nearly full host is expected to alert.
    let share_free = |s: &BTreeMap<String, f64>, inst: &str| {
        let get = |name: &str| s.get(&format!(r#"{name}{{instance="{inst}",job="idnode"}}"#)).copied();
        get("idnode_storage_filesystem_avail_bytes")
            .zip(get("idnode_storage_filesystem_size_bytes"))
            .map(|(a, b)| a / b)
    };
    let rules = std::fs::read_to_string(&rules_path).unwrap();
    let mut checks = Vec::new();
    for name in alert_names(&rules) {
        for (eval_time, samples, gone) in [("9m", &before, None), ("19m", &after, Some(&dead))] {
            let mut exp = Vec::new();
            if name == "IdnodeMemberDown" {
                if let Some(dead) = gone {
                    exp.push(json!({
                        "exp_labels": {"severity": "warning", "job": "idnode", "instance": dead},
                        "exp_annotations": {
                            "summary": format!("idnode member {dead} does not answer scrapes"),
                            "description": "The cluster keeps writing while a majority of voters is up; one more loss in a three-node cluster stops writes.",
                            "runbook_url": "docs/operations.md#idnodememberdown",
                        },
                    }));
                }
            }
            if name == "IdnodeDiskNearFull" {
                let merged: BTreeMap<String, f64> = samples.iter().flat_map(|s| s.samples.clone()).collect();
                let nearly_full = (0..3)
                    .map(|i| format!("node-{}", c.nodes[i].id))
                    .filter(|inst| Some(inst) != gone)
                    .any(|inst| share_free(&merged, &inst).is_some_and(|f| f < 0.1));
                if nearly_full {
                    continue; // this host's disk really is nearly full: not a healthy series
                }
            }
            checks.push(json!({"eval_time": eval_time, "alertname": name, "exp_alerts": exp}));
        }
    }
    assert!(checks.len() >= 2 * 15, "the rules file names too few alerts: {}", checks.len());
    let test = json!({
        "rule_files": [rules_path],
        "evaluation_interval": "15s",
        "tests": [{"interval": "15s", "input_series": input, "alert_rule_test": checks}],
    });
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("idnode-alerts-test.yml");
    std::fs::write(&file, serde_json::to_string(&test).unwrap()).unwrap();
    let out = output_within_async(
        tokio::process::Command::new(promtool).arg("test").arg("rules").arg(&file),
        Duration::from_secs(120),
    )
    .await;
    assert!(out.status.success(), "promtool test rules:\n{}", shown(&out));

    // The dashboard asks only for what a node exports.
    let dash: Value =
        serde_json::from_str(&std::fs::read_to_string(example("idnode-dashboard.json")).unwrap()).unwrap();
    let families: BTreeMap<String, String> = before.iter().flat_map(|s| s.families.clone()).collect();
    let name = regex::Regex::new(r"\bidnode_[a-z0-9_]+").unwrap();
    let mut asked = 0;
    for panel in dash["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap();
            for m in name.find_iter(expr) {
                asked += 1;
                assert!(
                    exported(&families, m.as_str()),
                    "the dashboard's {:?} asks for {}, which no node exports",
                    panel["title"],
                    m.as_str()
                );
            }
        }
    }
    assert!(asked > 30, "the dashboard asks for {asked} series");
}

/// Whether `series` is a sample name of an exported family (`_total` of a counter; `_bucket`,
/// `_sum` or `_count` of a histogram; a gauge's own name).
fn exported(families: &BTreeMap<String, String>, series: &str) -> bool {
    let is = |base: &str, kinds: &[&str]| families.get(base).is_some_and(|k| kinds.contains(&k.as_str()));
    if is(series, &["gauge", "unknown"]) {
        return true;
    }
    let suffixed = |suffix: &str, kinds: &[&str]| series.strip_suffix(suffix).is_some_and(|b| is(b, kinds));
    suffixed("_total", &["counter"]) || ["_bucket", "_sum", "_count"].iter().any(|s| suffixed(s, &["histogram"]))
}
