//! The OpenFGA assignment driver on a three-node cluster, judged by python-openstackclient:
//! a role granted through one node is in the user's project token on every node, and gone from
//! all of them once revoked; the whole OpenStack smoke session passes through a follower, with
//! the deployment's duties done around the CLI (`tests/openfga/osc-with-sync.sh`: the role the
//! session creates mapped in the role table file, group membership synced into the store). The
//! store is OpenFGA's engine behind the test server (`tests/openfga/server.py`).

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use crate::support::{output_within, password_auth_body, Cluster};

/// The test kit's launcher, shared with the in-process tests (not all of it is used here).
#[allow(dead_code)]
#[path = "../../src/testkit/openfga.rs"]
pub(crate) mod fga_server;

const OPENSTACK: &str = "/opt/anchors/osc-venv/bin/openstack";

/// Runs python-openstackclient as the admin against `endpoint` (bounded in time).
fn osc(endpoint: &str, password: &str, args: &[&str]) -> String {
    let mut cmd = Command::new(OPENSTACK);
    cmd.args(["--os-auth-url", endpoint, "--os-username", "admin", "--os-password", password])
        .args(["--os-project-name", "admin", "--os-user-domain-id", "default", "--os-project-domain-id", "default"])
        .args(["--os-interface", "public", "--os-identity-api-version", "3"])
        .args(args);
    let out = output_within(&mut cmd, Duration::from_secs(120));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "openstack {args:?}: {stdout}{}", String::from_utf8_lossy(&out.stderr));
    stdout.trim().to_string()
}

/// The role names in the project token each node issues to `user` (None: no token).
async fn roles_everywhere(c: &Cluster, user: &str, project: &str) -> Vec<Option<Vec<String>>> {
    let mut out = Vec::new();
    for i in 0..c.nodes.len() {
        let body = password_auth_body(user, "pw-fga-1", project);
        let r = c.http.post(&format!("{}/v3/auth/tokens", c.api(i)), None, &body).await.expect("token call");
        out.push((r.status.as_u16() == 200).then(|| {
            let roles = r.json["token"]["roles"].as_array().cloned().unwrap_or_default();
            roles.iter().filter_map(|r| r["name"].as_str().map(str::to_string)).collect()
        }));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openstackclient_grants_and_revokes_in_the_store_for_every_node() {
    if !std::path::Path::new(OPENSTACK).exists() {
        assert!(std::env::var_os("CI").is_none(), "{OPENSTACK} is missing (scripts/install-test-deps)");
        eprintln!("SKIPPED: {OPENSTACK} not found");
        return;
    }
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/openfga/keystone-smoke.fga");
    let fga = fga_server::FgaServer::start(&["--model", model]);
    let dir = tempfile::tempdir().expect("tempdir");
    let map = dir.path().join("roles.map");
    std::fs::write(&map, fga_server::ROLE_TO_RELATION).expect("role table");
    let map = map.display().to_string();
    let env = [
        ("IDNODE_ASSIGNMENT_DRIVER", "openfga"),
        ("IDNODE_OPENFGA_API_URL", fga.url.as_str()),
        ("IDNODE_OPENFGA_STORE_ID", fga.store_id.as_str()),
        ("IDNODE_OPENFGA_ROLE_TO_RELATION_FILE", map.as_str()),
        ("IDNODE_OPENFGA_MAX_RETRIES", "2"),
    ];
    let c = Cluster::start_with_env(3, &env).await;
    let leader = c.wait_leader(Duration::from_secs(30)).await;
    let follower = (leader + 1) % 3;
    let endpoint = format!("{}/v3", c.api(follower));
    let pw = c.admin_password.clone();

    osc(&endpoint, &pw, &["project", "create", "--domain", "default", "fga-proj"]);
    osc(&endpoint, &pw, &["user", "create", "--domain", "default", "--password", "pw-fga-1", "fga-user"]);
    assert_eq!(roles_everywhere(&c, "fga-user", "fga-proj").await, vec![None; 3], "no role yet");
    osc(
        &endpoint,
        &pw,
        &["role", "add", "--user", "fga-user", "--user-domain", "default", "--project", "fga-proj", "member"],
    );
    let tuples = fga.tuples().await;
    assert!(
        tuples.iter().any(|(u, r, o)| u.starts_with("user:") && r == "member" && o.starts_with("project:")),
        "{tuples:?}"
    );
    let listed = osc(
        &endpoint,
        &pw,
        &["role", "assignment", "list", "--user", "fga-user", "--project", "fga-proj", "--names", "-f", "value"],
    );
    assert!(listed.contains("member") && listed.contains("fga-user@Default"), "{listed}");
    let want = Some(vec!["member".to_string()]);
    assert_eq!(roles_everywhere(&c, "fga-user", "fga-proj").await, vec![want; 3], "every node asks the store");
    osc(
        &endpoint,
        &pw,
        &["role", "remove", "--user", "fga-user", "--user-domain", "default", "--project", "fga-proj", "member"],
    );
    assert_eq!(roles_everywhere(&c, "fga-user", "fga-proj").await, vec![None; 3], "revoked on every node");

    listing_table_on_every_node(&c, &pw).await;

    // A store outage: scoped tokens get a clear 503, and /ready says why.
    fga.fault(json!({"status": 503, "count": 100000})).await;
    let body = password_auth_body("admin", &pw, "admin");
    let r = c.http.post(&format!("{}/v3/auth/tokens", c.api(0)), None, &body).await.expect("token call");
    assert_eq!(r.status.as_u16(), 503, "{}", r.text);
    let ready = c.http.get(&format!("{}/ready", c.ops(0)), None).await.expect("ready");
    assert_eq!(ready.status.as_u16(), 503, "{}", ready.text);
    assert_eq!(ready.json["components"]["assignment_store"]["status"], "warn", "{}", ready.text);
    fga.control(reqwest::Method::POST, "reset", Some(json!({"faults": true}))).await;

    smoke_with_the_deployments_duties(&c, follower, &fga, &map).await;
}

/// Every row of the spec's listing table, asked over HTTP of every node: the statuses and
/// rows agree everywhere (the store is the one source), 501 exactly where the spec says.
async fn listing_table_on_every_node(c: &Cluster, pw: &str) {
    let (url, body) = (format!("{}/v3/auth/tokens", c.api(0)), password_auth_body("admin", pw, "admin"));
    let token = c.http.post(&url, None, &body).await.expect("admin login").header("x-subject-token").expect("token");
    let get = |i: usize, path: String| {
        let (http, url, token) = (c.http.clone(), format!("{}{path}", c.api(i)), token.clone());
        async move { http.get(&url, Some(&token)).await.expect("listing call") }
    };
    let first_id = |r: &crate::support::Resp, key: &str| r.json[key][0]["id"].as_str().expect("an id").to_string();
    let user = first_id(&get(0, "/v3/users?name=fga-user".into()).await, "users");
    let project = first_id(&get(0, "/v3/projects?name=fga-proj".into()).await, "projects");
    let member = first_id(&get(0, "/v3/roles?name=member".into()).await, "roles");
    let grant = format!("{}/v3/projects/{project}/users/{user}/roles/{member}", c.api(1));
    let put = c.http.request(Method::PUT, &grant, Some(&token), &[], None).await.expect("grant");
    assert_eq!(put.status.as_u16(), 204, "{}", put.text);
    let rows = [
        (format!("user.id={user}&scope.project.id={project}&role.id={member}&effective"), 200, 1),
        (format!("user.id={user}&scope.project.id={project}&role.id={member}"), 200, 1),
        (format!("user.id={user}&scope.project.id={project}&effective"), 200, 1),
        (format!("user.id={user}&scope.project.id={project}"), 200, 1),
        (format!("user.id={user}&effective"), 200, 1),
        (format!("user.id={user}"), 501, 0),
        (format!("scope.project.id={project}"), 200, 1),
        (format!("scope.project.id={project}&role.id={member}&effective"), 200, 1),
        (format!("role.id={member}"), 501, 0),
        (format!("role.id={member}&effective"), 501, 0),
        (String::new(), 501, 0),
    ];
    for (query, status, count) in rows {
        for i in 0..c.nodes.len() {
            let r = get(i, format!("/v3/role_assignments?{query}")).await;
            assert_eq!(r.status.as_u16(), status, "node {i}, {query}: {}", r.text);
            let listed = r.json["role_assignments"].as_array().map_or(0, Vec::len);
            assert_eq!(listed, count, "node {i}, {query}: {}", r.text);
        }
    }
    let del = c.http.request(Method::DELETE, &grant, Some(&token), &[], None).await.expect("revoke");
    assert_eq!(del.status.as_u16(), 204, "{}", del.text);
}

/// The shared smoke session, every step of it, with `osc-with-sync.sh` as its CLI: the role
/// it creates is mapped (to `operator`, which the model makes imply `reader`, as the session's
/// implied role does) in the role table file all three nodes re-read, and the membership it
/// makes is synced into the store (rule 9). Without those two duties the session would stop at
/// its group-derived listing, as the spec says.
async fn smoke_with_the_deployments_duties(c: &Cluster, node: usize, fga: &fga_server::FgaServer, map: &str) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/tools/openstack-smoke.sh");
    if !script.exists() {
        assert!(std::env::var_os("CI").is_none(), "{} is missing", script.display());
        return;
    }
    let tempest_cli = "/opt/anchors/tempest-venv/bin/openstack";
    let cli = if std::path::Path::new(tempest_cli).exists() { tempest_cli } else { OPENSTACK };
    let wrapper = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/openfga/osc-with-sync.sh");
    let mut cmd = Command::new("bash");
    cmd.arg(&script)
        .arg(format!("{}/v3", c.api(node)))
        .arg(&c.admin_password)
        .env("OPENSTACK", wrapper)
        .env("OPENSTACK_CLI", cli)
        .env("FGA_URL", &fga.url)
        .env("FGA_STORE_ID", &fga.store_id)
        .env("FGA_ROLE_MAP", map);
    let out = output_within(&mut cmd, Duration::from_secs(600));
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        let table = std::fs::read_to_string(map).unwrap_or_default();
        let tuples = fga.tuples().await;
        panic!("the smoke session on the OpenFGA driver: {stdout}{stderr}\nrole table: {table}\nstore: {tuples:?}");
    }
    assert!(stdout.lines().last().is_some_and(|l| l.ends_with(" passed, 0 failed")), "{stdout}");
    for step in ["role add (group on domain)", "role assignment list --effective --names (domain role via group)"] {
        assert!(stdout.contains(&format!("ok   {step}")), "{step}: {stdout}");
    }
    // The session's revokes and deletes took their relationships with them.
    let table = std::fs::read_to_string(map).unwrap_or_default();
    assert!(table.contains(":operator"), "the wrapper mapped the session's role: {table}");
    let left = fga.tuples().await;
    assert!(!left.iter().any(|(_, rel, _)| rel == "operator"), "the session's grants are gone: {left:?}");
}
