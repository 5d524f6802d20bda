//! Keystone's own authorization suite (keystone-tempest-plugin's `tests.rbac`: every v3
//! operation for eleven personas) against one node in each `[policy] admin_scope` mode, judged
//! against the reference Keystone: every test it passed (`rbac_reference_passed.txt`, a copy of
//! `../shared/tools/tempest/rbac-reference-passed.txt`; refresh both by re-running the
//! reference when the plugin's version changes) must pass here, unless
//! `rbac_expected_failures.txt` lists it for that mode:
//! - `departure`: idnode refuses on purpose what Keystone allows (the strict mode keeping an
//!   admin of a domain or project inside it), each class listed with its reason in
//!   docs/policy.md. One that passes is reported, not failed: a few of them fail only as the
//!   knock-on of an earlier refusal in their class (a fixture left behind), which depends on
//!   the order the class runs in.
//! - `gap`: not built yet. Listed so what passes stays passing; remove lines as features land.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::{run_against_node, runner, test_name};

/// What the expectations file says of one test in one mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expected {
    Departure,
    Gap,
}

/// The expected failures of `mode` (`any` or `system`): lines `MODE KIND TEST  # reason`,
/// where MODE is `any`, `system` or `both`.
fn expected_failures(mode: &str) -> BTreeMap<String, Expected> {
    include_str!("rbac_expected_failures.txt")
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (m, kind, name) = (f.next()?, f.next()?, f.next()?);
            let kind = match kind {
                "departure" => Expected::Departure,
                "gap" => Expected::Gap,
                other => panic!("rbac_expected_failures.txt: unknown kind {other:?}"),
            };
            (m == mode || m == "both").then(|| (name.to_string(), kind))
        })
        .collect()
}

async fn compare(mode: &str) {
    let Some(script) = runner() else { return };
    let reference: BTreeSet<&str> =
        include_str!("rbac_reference_passed.txt").lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let (last, summary) = run_against_node(
        &script,
        &[("IDNODE_POLICY_ADMIN_SCOPE", mode)],
        &[("SUITES", "rbac"), ("CONCURRENCY", "2")],
        Duration::from_secs(1500),
    )
    .await;
    let mut outcome: BTreeMap<String, (String, String)> = BTreeMap::new();
    for t in summary["rbac"]["tests"].as_array().into_iter().flatten() {
        let name = test_name(t["id"].as_str().unwrap_or_default()).to_string();
        outcome.insert(name, (t["status"].as_str().unwrap_or_default().to_string(), t["reason"].to_string()));
    }
    let expected = expected_failures(mode);
    let (mut passed, mut unexpected, mut fixed) = (0usize, Vec::new(), Vec::new());
    for name in &reference {
        let (status, reason) = outcome.get(*name).cloned().unwrap_or_else(|| ("absent".into(), "not run".into()));
        match (status.as_str(), expected.get(*name)) {
            ("pass", None) => passed += 1,
            ("pass", Some(_)) => fixed.push(name.to_string()),
            (_, Some(_)) => {}
            (_, None) => unexpected.push(format!("{name}: {status} {reason}")),
        }
    }
    eprintln!("rbac ({mode}): {last}; {passed} of the reference's {} pass unlisted", reference.len());
    if !fixed.is_empty() {
        eprintln!(
            "now passing, remove the gap lines from tempest/rbac_expected_failures.txt:\n  {}",
            fixed.join("\n  ")
        );
    }
    assert!(
        unexpected.is_empty(),
        "rbac ({mode}): {last}\nfailures the reference passes, not in tests/it/tempest/rbac_expected_failures.txt:\n  {}",
        unexpected.join("\n  ")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keystone_rbac_suite_matches_the_reference_in_keystones_mode() {
    compare("any").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keystone_rbac_suite_matches_the_reference_in_the_strict_mode() {
    compare("system").await;
}
