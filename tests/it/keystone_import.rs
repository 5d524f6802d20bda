//! A real Keystone 30 moves onto a 3-node idnode cluster with `idnode import keystone`.
//!
//! `keystone_import/keystone_source.py` builds the source: Keystone from the reference's venv
//! on its own SQLite database and key repositories, populated through python-openstackclient
//! with every kind the import moves, tokens of each kind issued, and what Keystone answered
//! recorded in `expected.json`. Keystone is stopped; then, all against idnode: bad inputs are
//! refused with the problem named and nothing written, the dry run writes nothing, the import
//! bootstraps the cluster (`bootstrap = import`) and moves everything with ids unchanged;
//! every user logs in (or is refused) as Keystone decided, old passwords stay old, every token
//! Keystone issued validates with Keystone's body, application credential and EC2 secrets
//! work, `openstack role assignment list --names` and `openstack catalog list` equal
//! Keystone's, a second run changes nothing, and the replicas agree.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{free_ports, output_within, Cluster, READY_TIMEOUT};

const KEYSTONE_PYTHON: &str = "/opt/anchors/keystone-venv/bin/python";
const OPENSTACK: &str = "/opt/anchors/osc-venv/bin/openstack";
/// Keystone's `[auth] methods` in the source (`keystone_source.py`): `totp` and `saml2` added.
const AUTH_METHODS: &str = "external,password,token,oauth1,mapped,application_credential,totp,saml2";

/// The populated source: Keystone's files and what it answered.
struct Source {
    dir: PathBuf,
    expected: Value,
}

impl Source {
    fn db(&self) -> String {
        self.dir.join("keystone.db").display().to_string()
    }

    fn keys(&self, which: &str) -> String {
        self.dir.join(which).display().to_string()
    }
}

/// Keystone populated in `dir`; on `database_url` (SQLAlchemy's form) instead of its SQLite file
/// when given.
fn build_source(dir: &Path, database_url: Option<&str>) -> Source {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/keystone_import/keystone_source.py");
    let port = free_ports(1)[0].to_string();
    let mut cmd = Command::new(KEYSTONE_PYTHON);
    cmd.arg(script).args(["--out", dir.to_str().unwrap(), "--port", &port]);
    if let Some(url) = database_url {
        cmd.args(["--database-url", url]);
    }
    let out = output_within(&mut cmd, Duration::from_secs(420));
    assert!(
        out.status.success(),
        "keystone_source.py failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let expected = serde_json::from_slice(&std::fs::read(dir.join("expected.json")).unwrap()).unwrap();
    Source { dir: dir.to_path_buf(), expected }
}

fn text(out: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Whether the cluster has been bootstrapped (nothing is written before the bootstrap).
async fn bootstrapped(c: &Cluster, i: usize) -> bool {
    let r = c.http.get(&format!("{}/ready", c.ops(i)), None).await.unwrap();
    !r.text.contains("not bootstrapped")
}

/// JSON with every array sorted by its elements' text, recursively: listings compared as sets.
fn canonical(v: &Value) -> Value {
    match v {
        Value::Array(items) => {
            let mut items: Vec<Value> = items.iter().map(canonical).collect();
            items.sort_by_key(|i| i.to_string());
            Value::Array(items)
        }
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), canonical(v))).collect()),
        other => other.clone(),
    }
}

/// A token body as compared: the catalog's order, the roles' order and the methods' order are
/// not part of what a token says (Keystone lists methods from its highest bit down).
fn comparable(token: &Value) -> Value {
    let mut t = token.clone();
    for key in ["catalog", "roles", "methods"] {
        if let Some(v) = t.get(key) {
            t[key] = canonical(v);
        }
    }
    t
}

/// An OAuth 1.0a `Authorization` header for `POST url`, signed by oauthlib (the library
/// Keystone and its clients use) with the consumer's and the access token's secrets.
fn oauth1_header(url: &str, consumer: (&str, &str), access: (&str, &str)) -> String {
    let script = "import sys; from oauthlib import oauth1; \
                  c = oauth1.Client(sys.argv[2], client_secret=sys.argv[3], resource_owner_key=sys.argv[4], \
                  resource_owner_secret=sys.argv[5], signature_method=oauth1.SIGNATURE_HMAC); \
                  print(c.sign(sys.argv[1], http_method='POST')[1]['Authorization'])";
    let out = output_within(
        Command::new(KEYSTONE_PYTHON).args(["-c", script, url, consumer.0, consumer.1, access.0, access.1]),
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "oauthlib: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// The cut-over, as a load balancer does it: Keystone's address (its catalog's identity
/// endpoints) now forwards to an idnode member. Runs until the test's runtime ends.
async fn cut_over(keystone_url: &str, member_api: &str) {
    let addr = |u: &str| u.trim_start_matches("http://").split('/').next().unwrap().to_string();
    let (from, to) = (addr(keystone_url), addr(member_api));
    let listener = tokio::net::TcpListener::bind(&from).await.unwrap();
    tokio::spawn(async move {
        while let Ok((mut inbound, _)) = listener.accept().await {
            let to = to.clone();
            tokio::spawn(async move {
                if let Ok(mut outbound) = tokio::net::TcpStream::connect(&to).await {
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                }
            });
        }
    });
}

fn osc(c: &Cluster, admin_password: &str, args: &[&str]) -> Value {
    let mut cmd = Command::new(OPENSTACK);
    cmd.args(args)
        .args(["-f", "json"])
        .env("OS_AUTH_URL", format!("{}/v3", c.api(0)))
        .env("OS_IDENTITY_API_VERSION", "3")
        .env("OS_USERNAME", "admin")
        .env("OS_PASSWORD", admin_password)
        .env("OS_PROJECT_NAME", "admin")
        .env("OS_USER_DOMAIN_ID", "default")
        .env("OS_PROJECT_DOMAIN_ID", "default")
        .env("OS_INTERFACE", "public");
    let out = output_within(&mut cmd, Duration::from_secs(120));
    assert!(out.status.success(), "openstack {args:?}: {}", text(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// `idnode import keystone ARGS` on node 0, Keystone's `[auth] methods` given.
async fn import(c: &Cluster, extra: &[String]) -> std::process::Output {
    let mut a: Vec<&str> = vec!["keystone", "--auth-methods", AUTH_METHODS];
    a.extend(extra.iter().map(String::as_str));
    c.import_cli(0, &a).await
}

/// A real import with `args` that must succeed without a conflict; its `--report`.
async fn import_without_conflicts(c: &Cluster, args: &[String], report: &Path) -> Value {
    let mut a = args.to_vec();
    a.extend(["--report".to_string(), report.display().to_string()]);
    let out = import(c, &a).await;
    assert!(out.status.success(), "import: {}", text(&out));
    let r: Value = serde_json::from_slice(&std::fs::read(report).unwrap()).unwrap();
    assert_eq!(r["conflicts"], json!([]), "{}", text(&out));
    r
}

/// A 3-node cluster waiting for the import, with the source's `[security_compliance]`.
/// Keystone's address forwards to its second member from now on ([`cut_over`]), so no other
/// program takes the port Keystone just freed.
async fn cluster_for(src: &Source) -> Cluster {
    let env = [
        ("IDNODE_BOOTSTRAP", "import"),
        ("IDNODE_SECURITY_COMPLIANCE_LOCKOUT_FAILURE_ATTEMPTS", "3"),
        ("IDNODE_SECURITY_COMPLIANCE_LOCKOUT_DURATION", "1800"),
        ("IDNODE_SECURITY_COMPLIANCE_UNIQUE_LAST_PASSWORD_COUNT", "3"),
    ];
    let mut c = Cluster::spawn_with_env(3, &env);
    c.admin_password = src.expected["admin_password"].as_str().unwrap().to_string();
    cut_over(src.expected["keystone_url"].as_str().unwrap(), &c.api(1)).await;
    c
}

/// The move from `database` (the source's, as the import reads it), checked against what
/// Keystone answered: dry run, import, ids, logins, tokens, secrets, openstackclient's views,
/// a second run, the replicas.
async fn moves_and_matches(c: &Cluster, src: &Source, database: &str, tmp: &Path) {
    let e = &src.expected;
    let admin_password = c.admin_password.clone();
    let (creds, fernet) = (src.keys("credential-keys"), src.keys("fernet-keys"));
    let full: Vec<String> = ["--database", database, "--credential-keys", &creds, "--fernet-keys", &fernet]
        .iter()
        .map(|s| s.to_string())
        .collect();

    // The dry run shows what would move and writes nothing.
    let mut dry = full.clone();
    dry.push("--dry-run".into());
    let out = import(c, &dry).await;
    assert!(out.status.success(), "dry run: {}", text(&out));
    let printed = text(&out);
    assert!(printed.contains("would import") && printed.contains("users"), "{printed}");
    assert!(!bootstrapped(c, 0).await, "a dry run writes nothing");

    // The import: bootstraps from Keystone's admin, moves everything, conflicts with nothing.
    let r = import_without_conflicts(c, &full, &tmp.join("report.json")).await;
    assert!(r["kinds"]["users"]["imported"].as_u64().unwrap() >= 13, "{r}");
    let deadline = Instant::now() + READY_TIMEOUT;
    for i in 0..3 {
        c.wait_ready(i, deadline).await;
    }
    let admin = c.admin_token(2).await;

    // Ids unchanged, kind by kind (read on different members).
    let lists = [
        ("domains", "/v3/domains", "domains"),
        ("projects", "/v3/projects", "projects"),
        ("users", "/v3/users", "users"),
        ("groups", "/v3/groups", "groups"),
        ("regions", "/v3/regions", "regions"),
        ("services", "/v3/services", "services"),
        ("endpoints", "/v3/endpoints", "endpoints"),
        ("policies", "/v3/policies", "policies"),
        ("credentials", "/v3/credentials", "credentials"),
        ("endpoint_groups", "/v3/OS-EP-FILTER/endpoint_groups", "endpoint_groups"),
        ("identity_providers", "/v3/OS-FEDERATION/identity_providers", "identity_providers"),
        ("mappings", "/v3/OS-FEDERATION/mappings", "mappings"),
        ("service_providers", "/v3/OS-FEDERATION/service_providers", "service_providers"),
        ("trusts", "/v3/OS-TRUST/trusts", "trusts"),
        ("registered_limits", "/v3/registered_limits", "registered_limits"),
        ("limits", "/v3/limits", "limits"),
        ("consumers", "/v3/OS-OAUTH1/consumers", "consumers"),
    ];
    let ids = |kind: &str| -> BTreeSet<String> {
        e["ids"][kind].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
    };
    for (n, (kind, path, key)) in lists.iter().enumerate() {
        assert_eq!(c.list_ids(n % 3, &admin, path, key).await, ids(kind), "{kind}");
    }
    let mut roles = c.list_ids(0, &admin, "/v3/roles", "roles").await;
    for d in ids("domains") {
        roles.extend(c.list_ids(1, &admin, &format!("/v3/roles?domain_id={d}"), "roles").await);
    }
    assert_eq!(roles, ids("roles"));

    // acme's domain configuration as Keystone stored it; its LDAP password never shown.
    let dc = &e["domain_config"];
    let path = format!("/v3/domains/{}/config", dc["domain_id"].as_str().unwrap());
    let r = c.http.get(&format!("{}{path}", c.api(0)), Some(&admin)).await.unwrap();
    assert_eq!((r.status, &r.json["config"]), (StatusCode::OK, &dc["config"]), "{}", r.text);
    assert!(!r.text.contains(dc["sensitive"].as_str().unwrap()), "{}", r.text);

    // Group members as Keystone listed them (expiring memberships are not listed there).
    for (n, (group, members)) in e["api"]["group_members"].as_object().unwrap().iter().enumerate() {
        let want: BTreeSet<String> = members.as_array().unwrap().iter().map(|m| m.as_str().unwrap().into()).collect();
        assert_eq!(c.list_ids(n % 3, &admin, &format!("/v3/groups/{group}/users"), "users").await, want, "{group}");
    }

    // Every user logs in, or is refused, as Keystone decided; old passwords stay old.
    let login = |id: &str, password: &str| {
        json!({"auth": {"identity": {"methods": ["password"],
        "password": {"user": {"id": id, "password": password}}}}})
    };
    for (n, u) in e["users"].as_array().unwrap().iter().enumerate() {
        let (Some(id), Some(password)) = (u["id"].as_str(), u["password"].as_str()) else { continue };
        let url = format!("{}/v3/auth/tokens", c.api(n % 3));
        let r = c.http.post(&url, None, &login(id, password)).await.unwrap();
        // Keystone answers 201 to a login, idnode 200 (`[api] keystone_compat_status` off).
        let want = u["login_status"].as_u64().unwrap();
        let got = if r.status.is_success() { 201 } else { r.status.as_u16() as u64 };
        assert_eq!(got, want, "{} ({}): {}", u["name"], u["state"], r.text);
        if u["state"] == "mfa" {
            assert!(r.header("Openstack-Auth-Receipt").is_some(), "an MFA user gets a receipt: {}", r.text);
            // Keystone keeps each rule as a set: its order is not part of the answer.
            let required = canonical(&r.json["required_auth_methods"]);
            assert_eq!(required, canonical(&u["login_error"]["required_auth_methods"]));
        }
        if u["state"] == "expired" {
            assert!(r.text.contains("The password is expired"), "{}", r.text);
        }
        for old in u["old_passwords"].as_array().into_iter().flatten() {
            let r = c.http.post(&url, None, &login(id, old.as_str().unwrap())).await.unwrap();
            assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}'s old password {old}", u["name"]);
        }
        if want == 201 {
            // The first login replaced the kept hash; the password still works.
            let r = c.http.post(&url, None, &login(id, password)).await.unwrap();
            assert!(r.status.is_success(), "{} again: {}", u["name"], r.text);
        }
    }

    // Every token Keystone issued validates with the body Keystone answered.
    for (n, t) in e["tokens"].as_array().unwrap().iter().enumerate() {
        let kind = t["kind"].as_str().unwrap();
        let token = t["token"].as_str().unwrap();
        let url = format!("{}/v3/auth/tokens", c.api(n % 3));
        let r = c
            .http
            .request(
                reqwest::Method::GET,
                &url,
                Some(&admin),
                &[("X-Subject-Token", token), ("OpenStack-Identity-Access-Rules", "1")],
                None,
            )
            .await
            .unwrap();
        assert_eq!(r.status, StatusCode::OK, "{kind}: {}", r.text);
        let (got, want) = (comparable(&r.json["token"]), comparable(&t["validation"]["token"]));
        for key in want.as_object().unwrap().keys().chain(got.as_object().unwrap().keys()) {
            assert_eq!(got.get(key), want.get(key), "{kind}: token field {key}");
        }
    }
    for t in e["revoked_tokens"].as_array().unwrap() {
        let r = c.http.validate_token(&c.api(1), &admin, t.as_str().unwrap()).await.unwrap();
        assert_eq!(r.status, StatusCode::NOT_FOUND, "a token revoked in Keystone stays revoked: {}", r.text);
    }

    // The federated login's unscoped token re-scopes on idnode as on Keystone (Horizon's
    // single sign-on does this), keeping its groups.
    let federated = |kind: &str| e["tokens"].as_array().unwrap().iter().find(|t| t["kind"] == kind).unwrap().clone();
    let (unscoped, project) = (federated("federated_unscoped"), federated("federated_project"));
    let body = json!({"auth": {"identity": {"methods": ["token"], "token": {"id": unscoped["token"]}},
        "scope": {"project": {"id": project["validation"]["token"]["project"]["id"]}}}});
    let r = c.http.post(&format!("{}/v3/auth/tokens", c.api(1)), None, &body).await.unwrap();
    assert!(r.status.is_success(), "re-scoping a Keystone federated token: {}", r.text);
    let want = &project["validation"]["token"];
    for key in ["roles", "methods"] {
        assert_eq!(canonical(&r.json["token"][key]), canonical(&want[key]), "re-scoped federated token's {key}");
    }
    assert_eq!(r.json["token"]["user"]["OS-FEDERATION"], want["user"]["OS-FEDERATION"]);

    // The OAuth1 consumer gets a new token for its imported access token, signed by oauthlib.
    let o = &e["oauth1"];
    let url = format!("{}/v3/auth/tokens", c.api(2));
    let header = oauth1_header(
        &url,
        (o["consumer_id"].as_str().unwrap(), o["consumer_secret"].as_str().unwrap()),
        (o["access_token"]["oauth_token"].as_str().unwrap(), o["access_token"]["oauth_token_secret"].as_str().unwrap()),
    );
    let body = json!({"auth": {"identity": {"methods": ["oauth1"], "oauth1": {}}}});
    let r =
        c.http.request(reqwest::Method::POST, &url, None, &[("Authorization", &header)], Some(&body)).await.unwrap();
    assert!(r.status.is_success(), "oauth1 login with an imported access token: {}", r.text);
    let want = &federated("oauth1")["validation"]["token"];
    for key in ["roles", "methods", "OS-OAUTH1", "project"] {
        assert_eq!(canonical(&r.json["token"][key]), canonical(&want[key]), "oauth1 token's {key}");
    }

    // Application credential secrets and EC2 secrets keep working.
    for a in e["application_credentials"].as_array().unwrap() {
        let body = json!({"auth": {"identity": {"methods": ["application_credential"],
            "application_credential": {"id": a["id"], "secret": a["secret"]}}}});
        for round in 0..2 {
            let r = c.http.post(&format!("{}/v3/auth/tokens", c.api(round)), None, &body).await.unwrap();
            assert!(r.status.is_success(), "{} (round {round}): {}", a["name"], r.text);
        }
    }
    if let Some(python) = crate::catalog_credentials::boto_python() {
        for k in e["ec2"].as_array().unwrap() {
            let (access, secret) = (k["access"].as_str().unwrap(), k["secret"].as_str().unwrap());
            let signed = crate::catalog_credentials::sign(&python, &c.api(0), access, secret, "v4");
            let url = format!("{}/v3/ec2tokens", c.api(2));
            let r = c.http.post(&url, None, &json!({"credentials": signed})).await.unwrap();
            assert_eq!(r.status, StatusCode::OK, "EC2 {access}: {}", r.text);
            assert_eq!(r.json["token"]["user"]["id"], k["user_id"]);
            assert_eq!(r.json["token"]["project"]["id"], k["project_id"]);
        }
    } else {
        eprintln!("SKIPPED the botocore part of keystone_import: no Python with botocore");
    }

    // python-openstackclient sees what it saw on Keystone, through Keystone's address (the
    // cut-over `cluster_for` made).
    let names = osc(c, &admin_password, &["role", "assignment", "list", "--names"]);
    assert_eq!(canonical(&names), canonical(&e["role_assignments_names"]));
    let catalog = osc(c, &admin_password, &["catalog", "list"]);
    assert_eq!(canonical(&catalog), canonical(&e["catalog"]));

    // A second run of the same source changes nothing.
    let r = import_without_conflicts(c, &full, &tmp.join("again.json")).await;
    for (kind, t) in r["kinds"].as_object().unwrap() {
        assert_eq!(t["imported"], json!(0), "{kind} imported again: {r}");
    }

    // The replicas agree.
    let (code, check) = c.cluster_check(0).await;
    assert_eq!(code, 0, "{check}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keystone_moves_with_its_ids_passwords_and_tokens() {
    if !Path::new(KEYSTONE_PYTHON).exists() || !Path::new(OPENSTACK).exists() {
        eprintln!("SKIPPED keystone_import: no Keystone or openstackclient venv (run scripts/install-test-deps)");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let src = build_source(&tmp.path().join("keystone"), None);
    let mut c = cluster_for(&src).await;
    let admin_password = c.admin_password.clone();
    let (db, creds) = (src.db(), src.keys("credential-keys"));
    let args = |extra: &[&str]| -> Vec<String> { extra.iter().map(|s| s.to_string()).collect() };

    // Bad input: each refused with the problem named, before anything is written.
    let truncated = tmp.path().join("truncated.db");
    let bytes = std::fs::read(&db).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 3]).unwrap();
    let unknown_head = tmp.path().join("unknown-head.db");
    std::fs::copy(&db, &unknown_head).unwrap();
    let sql = "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); \
               c.execute(\"UPDATE alembic_version SET version_num='0123456789ab' WHERE version_num NOT IN \
               ('e25ffa003242','99de3849d860','c88cdce8f248')\"); c.commit()";
    assert!(Command::new("python3").args(["-c", sql, unknown_head.to_str().unwrap()]).status().unwrap().success());
    let wrong_keys = tmp.path().join("wrong-credential-keys");
    std::fs::create_dir(&wrong_keys).unwrap();
    std::fs::write(wrong_keys.join("0"), "qbvr1DLfvUGJHGMKN-FZ0AaL7_FahX3dyiQPKAu-FUM=\n").unwrap();
    let cases: [(Vec<String>, &str); 5] = [
        (args(&["--database", truncated.to_str().unwrap(), "--credential-keys", &creds]), "truncated.db"),
        (
            args(&["--database", &db, "--credential-keys", "/nonexistent/credential-keys"]),
            "/nonexistent/credential-keys",
        ),
        (args(&["--database", &db]), "give --credential-keys"),
        (args(&["--database", &db, "--credential-keys", wrong_keys.to_str().unwrap()]), "no key of"),
        (
            args(&["--database", unknown_head.to_str().unwrap(), "--credential-keys", &creds]),
            "schema head 0123456789ab",
        ),
    ];
    for (a, says) in cases {
        let out = import(&c, &a).await;
        assert!(!out.status.success(), "{a:?} succeeded: {}", text(&out));
        assert!(text(&out).contains(says), "{a:?} should say {says:?}: {}", text(&out));
    }
    assert!(!bootstrapped(&c, 0).await, "a refused import wrote nothing");

    moves_and_matches(&c, &src, &db, tmp.path()).await;

    // Tempest afterwards: the members restarted one at a time with the settings the runner
    // tells tempest to expect (Keystone's status codes, a short lockout).
    let Some(script) = crate::tempest::runner() else { return };
    for (k, v) in crate::tempest::NODE_ENV {
        c.set_env(k, v);
    }
    for i in 0..3 {
        c.terminate(i, Duration::from_secs(10)).await;
        c.restart(i).await;
    }
    let auth_url = format!("{}/v3", c.api(0));
    let (last, summary) =
        crate::tempest::run_against(&script, &auth_url, &admin_password, &[], Duration::from_secs(1500));
    crate::tempest::judge(&last, &summary);
}

/// A MariaDB server of Debian's `mariadb-server`, on its own data directory and port, stopped
/// when dropped.
struct MariaDb {
    child: std::process::Child,
    url: String,
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl MariaDb {
    /// A database `keystone` with a user `keystone`, reached over TCP on loopback.
    fn start(dir: &Path) -> Option<MariaDb> {
        let (install, server, client) = ("/usr/bin/mariadb-install-db", "/usr/sbin/mariadbd", "/usr/bin/mariadb");
        if !Path::new(server).exists() {
            return None;
        }
        let data = dir.join("data");
        let socket = dir.join("mysqld.sock");
        let out = output_within(
            Command::new(install)
                .args(["--user=root", "--auth-root-authentication-method=normal"])
                .arg(format!("--datadir={}", data.display())),
            Duration::from_secs(120),
        );
        assert!(out.status.success(), "{install}: {}", text(&out));
        let port = free_ports(1)[0];
        let child = Command::new(server)
            .args(["--no-defaults", "--user=root", "--bind-address=127.0.0.1"])
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--port={port}"))
            .arg(format!("--pid-file={}", dir.join("mysqld.pid").display()))
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(dir.join("mysqld.log")).unwrap())
            .spawn()
            .unwrap();
        let db = MariaDb { child, url: format!("keystone:keystone-db-pw@127.0.0.1:{port}/keystone") };
        let sql = "CREATE DATABASE keystone; CREATE USER 'keystone'@'127.0.0.1' IDENTIFIED BY 'keystone-db-pw'; \
                   GRANT ALL ON keystone.* TO 'keystone'@'127.0.0.1';";
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let mut cmd = Command::new(client);
            cmd.arg(format!("--socket={}", socket.display())).args(["-u", "root", "-e", sql]);
            let out = output_within(&mut cmd, Duration::from_secs(30));
            if out.status.success() {
                return Some(db);
            }
            assert!(Instant::now() < deadline, "MariaDB did not start: {}", text(&out));
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

/// The same move from a Keystone on MariaDB (Debian's `mariadb-server`, started here; Keystone
/// reaches it through PyMySQL). Ignored in CI (`apt-get install mariadb-server` and
/// `pip install PyMySQL` into Keystone's venv first): run with
/// `cargo test --test it -- --ignored keystone_import::a_keystone_on_mariadb`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Debian's mariadb-server and PyMySQL in Keystone's venv"]
async fn a_keystone_on_mariadb_moves_the_same() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(db) = MariaDb::start(tmp.path()) else {
        panic!("no mariadbd: apt-get install mariadb-server");
    };
    let src = build_source(&tmp.path().join("keystone"), Some(&format!("mysql+pymysql://{}", db.url)));
    let c = cluster_for(&src).await;
    moves_and_matches(&c, &src, &format!("mysql://{}", db.url), tmp.path()).await;
}
