//! The OpenStack dashboard (Horizon 27, from PyPI, with no other OpenStack service) against a
//! 3-node cluster, in headless Chromium: a password sign-in, the project list and a switch of
//! project, the Identity panels creating and deleting a project, a user and a group, a project
//! member's role added and removed through "Manage Members", and sign-out. Every step is checked
//! through idnode's API on every member, not only on Horizon's screen.
//!
//! Horizon runs under Django's development server (`runserver --noreload`, DEBUG serving the
//! static files compressed at install time) with `tests/it/horizon/local/local_settings.py`,
//! sessions in SQLite and a file cache, its `OPENSTACK_KEYSTONE_URL` on a follower. The browser is
//! driven by `tests/it/horizon/horizon_session.py`, which reports each step as a JSON line and
//! waits for the test's "go" before the next one. Screenshots of every step are kept in
//! `$CARGO_TARGET_DIR/artefacts/horizon/` (the path is printed), with Horizon's log.
//!
//! Needs `/opt/anchors/horizon-venv` and `/opt/anchors/horizon-static` (horizon, selenium, the
//! compressed static files) and Debian's chromium and chromium-driver: `bash
//! scripts/install-test-deps` installs them. Run it alone with `cargo test --test it horizon::`.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout};

use crate::support::{free_ports, output_within_async, random_hex, tail, Cluster, Http, POLL};

const VENV: &str = "/opt/anchors/horizon-venv";
const STATIC_ROOT: &str = "/opt/anchors/horizon-static";
const HORIZON_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/horizon");
/// How long Horizon's server may take to answer its login page (the first request loads every
/// dashboard).
const HORIZON_START: Duration = Duration::from_secs(120);
/// How long one browser step may take (a page of Horizon makes several calls to a debug build).
const STEP_TIMEOUT: Duration = Duration::from_secs(240);
/// How long a write made through Horizon may take to show on every member.
const REPLICATED: Duration = Duration::from_secs(20);

/// Where this test keeps its screenshots and Horizon's log: beside cargo's target tmp dir.
fn artefacts_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map_or_else(|| PathBuf::from("artefacts"), Path::to_path_buf)
        .join("artefacts/horizon")
}

/// Horizon's development server, killed (and reaped) when dropped, also on a panic.
struct HorizonServer {
    child: Child,
    log: PathBuf,
}

impl Drop for HorizonServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            eprintln!("----- Horizon's log ({}) -----\n{}", self.log.display(), tail(&self.log, 16 * 1024));
        }
    }
}

/// The environment Horizon's server, its management commands and the browser driver share.
fn horizon_env(cmd: &mut Command, keystone: &str, run_dir: &Path, secret: &str) {
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().to_string();
        if k.to_ascii_lowercase().ends_with("_proxy") || k.starts_with("IDNODE_") || k.starts_with("DJANGO_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("PYTHONPATH", HORIZON_DIR)
        .env("DJANGO_SETTINGS_MODULE", "openstack_dashboard.settings")
        .env("PYTHONWARNINGS", "ignore::DeprecationWarning")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("IDNODE_HORIZON_KEYSTONE_URL", keystone)
        .env("IDNODE_HORIZON_RUN_DIR", run_dir)
        .env("IDNODE_HORIZON_STATIC_ROOT", STATIC_ROOT)
        .env("IDNODE_HORIZON_SECRET_KEY", secret)
        .env("SE_OFFLINE", "true");
}

/// The browser driver: its stdout lines are steps, its stdin takes "go".
struct Driver {
    child: tokio::process::Child,
    lines: Lines<BufReader<ChildStdout>>,
    stdin: ChildStdin,
    stderr_path: PathBuf,
}

impl Drop for Driver {
    /// A driver still running (the test failed) is asked to stop with SIGTERM, on which it closes
    /// the browser; whatever of its process group is left after a grace period is killed.
    fn drop(&mut self) {
        let Some(pid) = self.child.id() else { return };
        // SAFETY: kill(2) on the driver we spawned (not yet reaped: it has an id).
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline && matches!(self.child.try_wait(), Ok(None)) {
            std::thread::sleep(POLL);
        }
        // SAFETY: the driver leads its own process group (`process_group(0)`): this ends the
        // browser and chromedriver too, should they have outlived it.
        unsafe { libc::kill(-(pid as libc::pid_t), libc::SIGKILL) };
        let _ = self.child.start_kill();
    }
}

impl Driver {
    /// The next step the driver reports; panics on an error report, an early exit or a timeout.
    async fn step(&mut self, want: &str) -> Value {
        let line = match tokio::time::timeout(STEP_TIMEOUT, self.lines.next_line()).await {
            Ok(Ok(Some(line))) => line,
            Ok(Ok(None)) => {
                let status = self.child.wait().await.ok();
                panic!(
                    "the browser driver exited ({status:?}) before step {want}; its stderr:\n{}",
                    tail(&self.stderr_path, 16 * 1024)
                )
            }
            Ok(Err(e)) => panic!("reading the browser driver: {e}"),
            Err(_) => panic!(
                "the browser driver did not finish step {want} within {STEP_TIMEOUT:?}; its stderr:\n{}",
                tail(&self.stderr_path, 16 * 1024)
            ),
        };
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("driver line is not JSON ({e}): {line}"));
        assert!(
            v.get("error").is_none(),
            "step {want} failed in the browser: {v:#}\nits stderr:\n{}",
            tail(&self.stderr_path, 16 * 1024)
        );
        assert_eq!(v["step"], want, "the driver reported {v} where step {want} was due");
        eprintln!("horizon: step {want} done ({})", v["screenshot"].as_str().unwrap_or("-"));
        v
    }

    async fn go(&mut self) {
        self.stdin.write_all(b"go\n").await.expect("write to the browser driver");
        self.stdin.flush().await.expect("flush the browser driver's stdin");
    }
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

/// Checks made through idnode's API, with an admin token, on every member.
struct Api<'a> {
    cluster: &'a Cluster,
    admin: String,
}

impl Api<'_> {
    /// `GET path` on member `i` with the admin token.
    async fn get(&self, i: usize, path: &str) -> crate::support::Resp {
        let url = format!("{}{path}", self.cluster.api(i));
        self.cluster.http.get(&url, Some(self.admin.as_str())).await.unwrap_or_else(|e| panic!("GET {path}: {e}"))
    }

    /// Polls `GET path` on every member until `ok` holds for its answer; returns the first
    /// member's answer.
    async fn on_every_member(
        &self,
        path: &str,
        what: &str,
        ok: impl Fn(&crate::support::Resp) -> bool,
    ) -> crate::support::Resp {
        let mut first = None;
        for i in 0..self.cluster.len() {
            let deadline = Instant::now() + REPLICATED;
            loop {
                let r = self.get(i, path).await;
                if ok(&r) {
                    if first.is_none() {
                        first = Some(r);
                    }
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "member {}: {what}: GET {path} answers {} {}",
                    i + 1,
                    r.status,
                    r.text
                );
                tokio::time::sleep(POLL).await;
            }
        }
        first.expect("a cluster has members")
    }

    /// The one object named `name` that `GET /v3/{kind}?name=` lists on every member.
    async fn named(&self, kind: &str, name: &str) -> Value {
        let key = kind.to_string();
        let r = self
            .on_every_member(&format!("/v3/{kind}?name={name}"), &format!("{kind} {name} exists"), |r| {
                r.status == StatusCode::OK && r.json[&key].as_array().is_some_and(|a| a.len() == 1)
            })
            .await;
        r.json[kind][0].clone()
    }

    /// `GET /v3/{kind}/{id}` answers 404 on every member.
    async fn gone(&self, kind: &str, id: &str) {
        self.on_every_member(&format!("/v3/{kind}/{id}"), &format!("{kind} {id} is deleted"), |r| {
            r.status == StatusCode::NOT_FOUND
        })
        .await;
    }

    /// Waits until every member lists exactly the roles `want` (by name) as held by `user`
    /// directly on `project`.
    async fn roles_on(&self, user: &str, project: &str, want: &[&str]) {
        let path = format!("/v3/role_assignments?user.id={user}&scope.project.id={project}&include_names");
        let want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
        self.on_every_member(&path, &format!("user {user} holds {want:?} on {project}"), |r| {
            let mut names: Vec<String> = r.json["role_assignments"]
                .as_array()
                .map(|a| a.iter().filter_map(|x| x["role"]["name"].as_str().map(str::to_string)).collect())
                .unwrap_or_default();
            names.sort();
            r.status == StatusCode::OK && names == want
        })
        .await;
    }

    /// `GET /v3/auth/tokens` of `token` on member `i`.
    async fn validate(&self, i: usize, token: &str) -> crate::support::Resp {
        self.cluster.http.validate_token(&self.cluster.api(i), &self.admin, token).await.expect("validate a token")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn horizon_signs_in_switches_project_and_manages_identity() {
    let python = format!("{VENV}/bin/python");
    for (path, what) in [
        (python.as_str(), "the Horizon venv"),
        ("/opt/anchors/horizon-static/.idnode-stamp", "Horizon's compressed static files"),
        ("/usr/bin/chromium", "Debian's chromium"),
        ("/usr/bin/chromedriver", "Debian's chromium-driver"),
    ] {
        assert!(Path::new(path).exists(), "{path} ({what}) is missing: run `bash scripts/install-test-deps`");
    }
    let artefacts = artefacts_dir();
    let _ = std::fs::remove_dir_all(&artefacts);
    std::fs::create_dir_all(&artefacts).expect("create the artefacts dir");
    eprintln!("horizon: screenshots and Horizon's log go to {}", artefacts.display());

    let cluster = Cluster::start(3).await;
    let leader = cluster.wait_leader(Duration::from_secs(30)).await;
    let admin = cluster.admin_token(leader).await;
    let api = Api { cluster: &cluster, admin: admin.clone() };
    // Horizon talks to a follower: its writes are forwarded to the leader.
    let entry = (leader + 1) % 3;

    // A user with the admin role on two projects (the Identity panels need an administrator).
    let tag = random_hex(4);
    let (user_name, password) = (format!("hz-admin-{tag}"), format!("Hz-pw-{}", random_hex(8)));
    let (alpha, beta) = (format!("hz-alpha-{tag}"), format!("hz-beta-{tag}"));
    let long = Duration::from_secs(30);
    let mut project_ids = Vec::new();
    for name in [&alpha, &beta] {
        let body = json!({"project": {"name": name, "domain_id": "default"}});
        let r = cluster.post_retry(leader, "/v3/projects", &admin, &body, long).await;
        project_ids.push(s(&r.json["project"]["id"]).to_string());
    }
    let body = json!({"user": {"name": user_name, "password": password, "domain_id": "default"}});
    let r = cluster.post_retry(leader, "/v3/users", &admin, &body, long).await;
    let user_id = s(&r.json["user"]["id"]).to_string();
    let admin_role = s(&api.named("roles", "admin").await["id"]).to_string();
    for p in &project_ids {
        cluster.put_retry(leader, &format!("/v3/projects/{p}/users/{user_id}/roles/{admin_role}"), &admin, long).await;
    }
    for p in &project_ids {
        api.roles_on(&user_id, p, &["admin"]).await;
    }

    // Horizon: sessions database, then the server.
    let run_dir = tempfile::Builder::new().prefix("idnode-horizon-").tempdir().expect("a run dir");
    let keystone = format!("{}/v3", cluster.api(entry));
    let secret = random_hex(24);
    let django_admin = format!("{VENV}/bin/django-admin");
    let mut migrate = Command::new(&django_admin);
    migrate.args(["migrate", "--noinput", "-v0"]);
    horizon_env(&mut migrate, &keystone, run_dir.path(), &secret);
    let out = output_within_async(&mut tokio::process::Command::from(migrate), Duration::from_secs(120)).await;
    assert!(out.status.success(), "django-admin migrate: {}", String::from_utf8_lossy(&out.stderr));

    let port = free_ports(1)[0];
    let horizon = format!("http://127.0.0.1:{port}");
    let log = artefacts.join("horizon.log");
    let log_file = File::create(&log).expect("create Horizon's log");
    let mut serve = Command::new(&django_admin);
    serve.args(["runserver", "--noreload", &format!("127.0.0.1:{port}")]);
    horizon_env(&mut serve, &keystone, run_dir.path(), &secret);
    serve
        .stdin(Stdio::null())
        .stdout(Stdio::from(log_file.try_clone().expect("clone a log handle")))
        .stderr(Stdio::from(log_file));
    let server = HorizonServer { child: serve.spawn().expect("start Horizon's server"), log: log.clone() };
    let http = Http::new(Duration::from_secs(60));
    let deadline = Instant::now() + HORIZON_START;
    loop {
        let last = match http.get(&format!("{horizon}/auth/login/"), None).await {
            Ok(r) if r.status == StatusCode::OK => break,
            Ok(r) => format!("{} {}", r.status, &r.text[..r.text.len().min(400)]),
            Err(e) => format!("{e}"),
        };
        assert!(Instant::now() < deadline, "Horizon's login page never answered 200: {last}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // The browser.
    let (new_project, new_user, new_group) =
        (format!("hz-made-{tag}"), format!("hz-user-{tag}"), format!("hz-group-{tag}"));
    let new_password = format!("Hz-new-{}", random_hex(8));
    let stderr_path = artefacts.join("driver.stderr");
    let mut drive = Command::new(&python);
    drive
        .arg(format!("{HORIZON_DIR}/horizon_session.py"))
        .args(["--horizon", &horizon, "--username", &user_name, "--projects", &format!("{alpha},{beta}")])
        .arg(format!("--password={password}"))
        .args(["--new-project", &new_project, "--new-user", &new_user, "--new-group", &new_group])
        .arg(format!("--new-user-password={new_password}"))
        .arg("--artefacts")
        .arg(&artefacts);
    horizon_env(&mut drive, &keystone, run_dir.path(), &secret);
    drive
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(File::create(&stderr_path).expect("create the driver's stderr file")));
    // Its own process group, so that the browser it starts can be ended with it (Driver's Drop).
    drive.process_group(0);
    let mut child = tokio::process::Command::from(drive).kill_on_drop(true).spawn().expect("start the browser driver");
    let stdout = child.stdout.take().expect("driver stdout");
    let stdin = child.stdin.take().expect("driver stdin");
    let mut driver = Driver { child, lines: BufReader::new(stdout).lines(), stdin, stderr_path };

    // 1. Signed in: Horizon holds a token scoped to one of the two projects, and the unscoped
    //    token it was rescoped from; both valid on every member.
    let login = driver.step("login").await;
    let first_token = s(&login["token"]).to_string();
    let unscoped = s(&login["unscoped_token"]).to_string();
    let first_project = s(&login["project_id"]).to_string();
    assert!(project_ids.contains(&first_project), "signed in to {first_project}, not one of {project_ids:?}");
    assert_eq!(login["user_id"], json!(user_id), "{login}");
    assert!(s(&login["url"]).ends_with("/identity/"), "signed in, Horizon opens on Identity: {login}");
    for i in 0..cluster.len() {
        let r = api.validate(i, &first_token).await;
        assert_eq!(r.status, StatusCode::OK, "member {}: Horizon's token: {}", i + 1, r.text);
        assert_eq!(r.json["token"]["project"]["id"], json!(first_project), "{}", r.text);
        assert_eq!(r.json["token"]["user"]["id"], json!(user_id), "{}", r.text);
        let r = api.validate(i, &unscoped).await;
        assert_eq!(r.status, StatusCode::OK, "member {}: Horizon's unscoped token: {}", i + 1, r.text);
        assert!(r.json["token"].get("project").is_none(), "an unscoped token: {}", r.text);
    }
    driver.go().await;

    // 2. The project list names both projects, the current one selected.
    let listed = driver.step("projects").await;
    let entries = listed["listed"].as_array().expect("listed projects");
    let names: Vec<&str> = entries.iter().map(|p| s(&p["name"])).collect();
    assert!(names.contains(&alpha.as_str()) && names.contains(&beta.as_str()), "project list {names:?}");
    let selected: Vec<&str> = entries.iter().filter(|p| p["selected"] == json!(true)).map(|p| s(&p["name"])).collect();
    let first_name = if first_project == project_ids[0] { &alpha } else { &beta };
    assert_eq!(selected, [first_name.as_str()], "the current project is marked: {listed}");
    driver.go().await;

    // 3. The switch rescoped the unscoped token to the other project.
    let switched = driver.step("switch").await;
    let second_token = s(&switched["token"]).to_string();
    assert_ne!(second_token, first_token, "a new token for the other project");
    let other_project = project_ids.iter().find(|p| **p != first_project).expect("two projects").clone();
    assert_eq!(switched["project_id"], json!(other_project), "switched to the other project: {switched}");
    assert_eq!(switched["unscoped_token"], json!(unscoped), "rescoped from the same unscoped token");
    for i in 0..cluster.len() {
        let r = api.validate(i, &second_token).await;
        assert_eq!(r.status, StatusCode::OK, "member {}: the rescoped token: {}", i + 1, r.text);
        assert_eq!(r.json["token"]["project"]["id"], json!(other_project), "{}", r.text);
        let roles: Vec<&str> =
            r.json["token"]["roles"].as_array().map(|a| a.iter().map(|x| s(&x["name"])).collect()).unwrap_or_default();
        assert!(roles.contains(&"admin"), "the rescoped token holds admin: {roles:?}");
    }
    driver.go().await;

    // 4. Identity → Projects → Create Project.
    driver.step("project_create").await;
    let made = api.named("projects", &new_project).await;
    let made_id = s(&made["id"]).to_string();
    assert_eq!((&made["domain_id"], &made["enabled"]), (&json!("default"), &json!(true)), "{made}");
    driver.go().await;

    // 5. Identity → Users → Create User: the user exists and signs in with the password typed.
    driver.step("user_create").await;
    let user = api.named("users", &new_user).await;
    let new_user_id = s(&user["id"]).to_string();
    assert_eq!((&user["domain_id"], &user["enabled"]), (&json!("default"), &json!(true)), "{user}");
    let body = json!({"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "id": new_user_id, "password": new_password}}}}});
    for i in 0..cluster.len() {
        let r = cluster.http.post(&format!("{}/v3/auth/tokens", cluster.api(i)), None, &body).await.expect("login");
        assert!(r.status.is_success(), "member {}: the user made in Horizon signs in: {} {}", i + 1, r.status, r.text);
    }
    driver.go().await;

    // 6. Identity → Groups → Create Group.
    driver.step("group_create").await;
    let group = api.named("groups", &new_group).await;
    let group_id = s(&group["id"]).to_string();
    driver.go().await;

    // 7. Manage Members: the new user gets the default role (member) on the new project, then
    //    loses it.
    driver.step("member_add").await;
    api.roles_on(&new_user_id, &made_id, &["member"]).await;
    driver.go().await;
    driver.step("member_remove").await;
    api.roles_on(&new_user_id, &made_id, &[]).await;
    driver.go().await;

    // 8. Deleted through the panels: gone on every member.
    driver.step("group_delete").await;
    api.gone("groups", &group_id).await;
    driver.go().await;
    driver.step("user_delete").await;
    api.gone("users", &new_user_id).await;
    driver.go().await;
    driver.step("project_delete").await;
    api.gone("projects", &made_id).await;
    driver.go().await;

    // 9. Sign-out ends Horizon's session: the session is gone from its store and the old
    //    cookie, replayed, lands on the login page.
    let out = driver.step("logout").await;
    assert_eq!(out["session_left"], json!(false), "Horizon's session is deleted at sign-out: {out}");
    assert!(s(&out["replay_lands_on"]).contains("/auth/login"), "the old session cookie is dead: {out}");
    assert_eq!(out["held"]["token"], json!(second_token), "{out}");
    driver.go().await;
    driver.step("done").await;
    let status = tokio::time::timeout(Duration::from_secs(60), driver.child.wait()).await;
    assert!(matches!(status, Ok(Ok(st)) if st.success()), "the browser driver's exit: {status:?}");

    // The tokens Horizon held during the session end on every member.
    end_held_tokens(&api, entry, &[&first_token, &second_token, &unscoped]).await;

    drop(server);
    eprintln!("horizon: screenshots in {}", artefacts.display());
}

/// Horizon 27 revokes nothing at sign-out: its logout view only flushes the session
/// (openstack_auth's token deletion became a no-op in Ocata and was dropped in 2018, Horizon
/// commit 71993e3c9), so, as against Keystone, the tokens it held stay valid until they expire.
/// They are ended here as their holder ends one, `DELETE /v3/auth/tokens` with the token itself
/// on the member Horizon used; from then on every member refuses each of them.
async fn end_held_tokens(api: &Api<'_>, entry: usize, tokens: &[&str]) {
    let cluster = api.cluster;
    for (n, token) in tokens.iter().enumerate() {
        let still: Vec<usize> = {
            let mut v = Vec::new();
            for i in 0..cluster.len() {
                if api.validate(i, token).await.status == StatusCode::OK {
                    v.push(i + 1);
                }
            }
            v
        };
        eprintln!(
            "horizon: after sign-out, held token #{n} is still valid on members {still:?} (Horizon does not revoke)"
        );
        let r = cluster.http.revoke_token(&cluster.api(entry), token, token).await.expect("revoke a held token");
        assert!(
            r.status == StatusCode::NO_CONTENT || (still.is_empty() && r.status == StatusCode::UNAUTHORIZED),
            "held token #{n} revoking itself: {} {}",
            r.status,
            r.text
        );
        for i in 0..cluster.len() {
            let r = api.validate(i, token).await;
            assert_eq!(
                r.status,
                StatusCode::NOT_FOUND,
                "member {}: held token #{n} after its revocation: {}",
                i + 1,
                r.text
            );
        }
    }
}
