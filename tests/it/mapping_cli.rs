//! `idnode mapping test` as an operator runs it: the real binary, files in a temp dir, no node.
//! A matching ruleset prints the mapped user and exits 0; no matching rule and an invalid
//! ruleset exit non-zero with the reason on stderr.

use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};

use crate::support::{output_within, CLI_TIMEOUT};

fn mapping_test(ruleset: &Path, claims: &Path) -> Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_idnode"));
    for (k, _) in std::env::vars_os().filter(|(k, _)| k.to_string_lossy().starts_with("IDNODE_")) {
        cmd.env_remove(k);
    }
    cmd.args(["mapping", "test", "--ruleset"]).arg(ruleset).arg("--claims").arg(claims);
    output_within(&mut cmd, CLI_TIMEOUT)
}

#[test]
fn mapping_test_evaluates_a_ruleset_offline_and_exits_by_the_outcome() {
    let dir = tempfile::tempdir().unwrap();
    let ruleset = dir.path().join("ruleset.json");
    let mut rs = json!({"mapping": {"domain_id": "default", "provider_id": "prod-k8s",
        "source": {"type": "k8s", "cluster_id": "5f0c"},
        "rules": [{"name": "shop_web",
          "match": {"all_of": [{"type": "equals", "claim": "namespace", "value": "shop"},
                               {"type": "equals", "claim": "service_account", "value": "web"}]},
          "identity": {"user_name": "${claims.namespace}-${claims.service_account}"},
          "groups": [{"group_name": "k8s-${claims.namespace}"}],
          "authorizations": [{"type": "project", "project_id": "p-shop", "project_domain_id": "default",
                              "roles": [{"id": "r-member"}]}]}]}});
    std::fs::write(&ruleset, serde_json::to_vec_pretty(&rs).unwrap()).unwrap();
    let claims = dir.path().join("claims.json");
    std::fs::write(&claims, json!({"namespace": "shop", "service_account": "web"}).to_string()).unwrap();

    let out = mapping_test(&ruleset, &claims);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).expect("the report is JSON");
    assert_eq!(report["matched"], json!(true));
    assert_eq!(report["rule"], json!({"index": 0, "name": "shop_web"}));
    assert_eq!(report["user"]["name"], json!("shop-web"));
    assert_eq!(report["user"]["domain_id"], json!("default"));
    assert_eq!(report["user"]["virtual"], json!(true), "a Kubernetes workload is virtual by default");
    assert_eq!(report["groups"][0]["name"], json!("k8s-shop"));
    assert_eq!(report["authorizations"][0]["roles"], json!([{"id": "r-member"}]));

    std::fs::write(&claims, json!({"namespace": "shop", "service_account": "batch"}).to_string()).unwrap();
    let out = mapping_test(&ruleset, &claims);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no rule matched"));
    assert_eq!(serde_json::from_slice::<Value>(&out.stdout).unwrap()["matched"], json!(false));

    rs["mapping"]["rules"][0]["match"]["all_of"][1] = json!({"type": "equals", "claim": "service_account"});
    std::fs::write(&ruleset, rs.to_string()).unwrap();
    let out = mapping_test(&ruleset, &claims);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("mapping.rules[0].match") && stderr.contains("value"), "{stderr}");
    assert!(out.stdout.is_empty() && !stderr.contains("panicked"), "{stderr}");

    let out = mapping_test(&dir.path().join("absent.json"), &claims);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("absent.json"));
}
