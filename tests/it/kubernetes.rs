//! The Kubernetes example (`cluster-examples/kubernetes/`) and the environment Kubernetes gives
//! a pod. Every manifest validates, with unknown fields refused, against the Kubernetes JSON
//! schemas that the PyPI package kubernetes-validate bundles (offline; installed by
//! `scripts/install-test-deps` into /opt/anchors/k8s-validate-venv), for the oldest and the
//! newest Kubernetes version it knows. And a node started with the variables of a Service named
//! `idnode` (`IDNODE_PORT=tcp://…`, …) and a stray `IDNODE_*` variable becomes ready, warning
//! about the stray one only.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::support::{output_within, Cluster};

/// The Kubernetes versions checked: the oldest and the newest schemas of the pinned package.
const VERSIONS: &[&str] = &["1.25.0", "1.37.0"];

/// One run over a handful of files takes well under a second; the bound is for a stuck one.
const VALIDATE_TIMEOUT: Duration = Duration::from_secs(60);

/// The validator: `IDNODE_K8S_VALIDATE`, or the venv that the install script creates.
fn validator() -> Option<String> {
    let path = std::env::var("IDNODE_K8S_VALIDATE")
        .unwrap_or_else(|_| "/opt/anchors/k8s-validate-venv/bin/kubernetes-validate".into());
    let ok = Command::new(&path).arg("--version").output().is_ok_and(|o| o.status.success());
    ok.then_some(path)
}

fn manifests() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("cluster-examples/kubernetes");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    files.sort();
    files
}

/// Runs the validator in strict mode; returns whether it passed and what it said.
fn validate(validator: &str, version: &str, files: &[PathBuf]) -> (bool, String) {
    let out = output_within(
        Command::new(validator).args(["--strict", "--kubernetes-version", version]).args(files),
        VALIDATE_TIMEOUT,
    );
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), report)
}

#[test]
fn example_manifests_validate_strictly() {
    let Some(validator) = validator() else {
        let msg = "kubernetes-validate is missing: run scripts/install-test-deps (or set IDNODE_K8S_VALIDATE)";
        assert!(std::env::var_os("CI").is_none(), "{msg}");
        eprintln!("SKIPPED example_manifests_validate_strictly: {msg}");
        return;
    };
    let files = manifests();
    assert!(files.len() >= 4, "expected the example's manifests, found {files:?}");
    for version in VERSIONS {
        let (ok, report) = validate(&validator, version, &files);
        assert!(ok, "the manifests do not validate against Kubernetes {version}:\n{report}");
        for resource in [
            "statefulset/idnode ",
            "service/idnode-peers ",
            "service/idnode ",
            "poddisruptionbudget/idnode ",
            "secret/idnode-cluster ",
            "secret/idnode-kek ",
        ] {
            assert!(report.contains(&format!("passed for resource {resource}")), "{resource}not checked:\n{report}");
        }
        assert!(!report.contains("ERROR") && !report.contains("WARN"), "{report}");
    }

    // A misspelt field fails the same check, so the passes above mean something.
    let statefulset = files.iter().find(|f| f.ends_with("statefulset.yaml")).expect("statefulset.yaml");
    let text = std::fs::read_to_string(statefulset).expect("read statefulset.yaml");
    let broken = text.replacen("readinessProbe:", "readinesProbe:", 1);
    assert_ne!(broken, text, "statefulset.yaml has no readiness probe");
    let dir = tempfile::tempdir().expect("temp dir");
    let copy = dir.path().join("statefulset.yaml");
    std::fs::write(&copy, broken).expect("write the broken copy");
    let (ok, report) = validate(&validator, VERSIONS[1], &[copy]);
    assert!(!ok && report.contains("'readinesProbe' was unexpected"), "a misspelt field passed:\n{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_ignores_service_links_and_warns_of_unknown_variables() {
    let env = [
        ("IDNODE_SERVICE_HOST", "10.96.0.12"),
        ("IDNODE_SERVICE_PORT", "5000"),
        ("IDNODE_SERVICE_PORT_API", "5000"),
        ("IDNODE_PORT", "tcp://10.96.0.12:5000"),
        ("IDNODE_PORT_5000_TCP", "tcp://10.96.0.12:5000"),
        ("IDNODE_PORT_5000_TCP_PROTO", "tcp"),
        ("IDNODE_PORT_5000_TCP_PORT", "5000"),
        ("IDNODE_PORT_5000_TCP_ADDR", "10.96.0.12"),
        ("IDNODE_NOT_A_SETTING", "1"),
    ];
    let cluster = Cluster::start_with_env(1, &env).await;
    let log = std::fs::read_to_string(&cluster.nodes[0].log_path).expect("read the node's log");
    let warning = log.lines().find(|l| l.contains("IDNODE_NOT_A_SETTING")).unwrap_or_default();
    assert!(
        warning.contains("WARN") && warning.contains("unknown configuration variable ignored: [idnode] not_a_setting"),
        "no warning naming IDNODE_NOT_A_SETTING:\n{log}"
    );
    for (name, _) in &env[..env.len() - 1] {
        assert!(!log.contains(name), "{name} is in the log:\n{log}");
    }
}
