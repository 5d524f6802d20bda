//! TOTP and multi-factor authentication judged by real clients (`totp_client.py`, next to this
//! file): keystoneauth1's `v3multifactor` plugin and its receipt flow, python-openstackclient's
//! `--os-auth-type v3multifactor`, and refused passcodes (wrong, replayed, three steps old).
//! The script computes passcodes itself with Python's standard library. Also: malformed
//! multi-factor rules are a 400; tampered, expired and other users' receipts are a 401; a
//! receipt is not a token.

use std::process::Command;
use std::time::Duration;

use crate::support::{output_within, Cluster};

const PYTHON: &str = "/opt/anchors/osc-venv/bin/python";
const OPENSTACK: &str = "/opt/anchors/osc-venv/bin/openstack";
const RECEIPT_EXPIRATION: &str = "10";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keystoneauth_and_openstackclient_complete_multi_factor_logins() {
    if !std::path::Path::new(OPENSTACK).exists() {
        assert!(std::env::var_os("CI").is_none(), "{OPENSTACK} is missing (scripts/install-test-deps)");
        eprintln!("SKIPPED: {OPENSTACK} not found");
        return;
    }
    // Receipts live 10 s here, so the script can wait for one to expire.
    let c = Cluster::start_with_env(1, &[("IDNODE_RECEIPT_EXPIRATION", RECEIPT_EXPIRATION)]).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/totp_client.py");
    let endpoint = format!("{}/v3", c.api(0));
    let out = tokio::task::block_in_place(|| {
        output_within(
            Command::new(PYTHON).args([script, &endpoint, &c.admin_password, OPENSTACK, RECEIPT_EXPIRATION]),
            Duration::from_secs(300),
        )
    });
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("all checks passed"),
        "totp_client.py failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{stdout}");
}
