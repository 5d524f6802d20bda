//! The Debian package, installed as an operator installs it: `scripts/build-deb --bin` packs the
//! binary this test run built, `scripts/build-image --systemd` makes a Debian bookworm base with
//! systemd as PID 1, and a container of it gets the package with `dpkg -i` (no network: every
//! Depends must already be there). The package's maintainer scripts must create the user and
//! the private data dir, write the secrets file (root only) and start `idnode.service`; the
//! smoke session must pass against the service, which must come back from a restart with its
//! data; `dpkg --purge` must stop it and remove the data with its secrets.
//!
//! Skipped (with a `SKIPPED:` line) where no Docker daemon answers `docker info`, as
//! `container.rs` is; in CI (`CI` set) a missing smoke script fails it. The container
//! (`idnode-deb-it-<pid>`) is removed when the test ends, passed or not. Every command is
//! bounded in time.

use std::process::Output;
use std::time::{Duration, Instant};

use reqwest::StatusCode;

use crate::container::{ok, repo, run, run_smoke, show};
use crate::support::{free_ports, password_auth_body, Http};

/// A cold run builds cargo-deb (crates.io) and debootstraps the systemd rootfs.
const BUILD_TIMEOUT: Duration = Duration::from_secs(1800);
/// `docker exec` of one command in the container (`dpkg -i` included).
const EXEC_TIMEOUT: Duration = Duration::from_secs(180);
/// From `docker run` to systemd having started its default target.
const BOOT_TIMEOUT: Duration = Duration::from_secs(120);
/// From the service's start to a token for the bootstrapped admin.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
const IMAGE: &str = "idnode-base-systemd:bookworm";

fn preflight() -> bool {
    if !ok(&["docker", "info"], Duration::from_secs(30)) {
        eprintln!("SKIPPED: no Docker daemon answers `docker info` (the package test needs one)");
        return false;
    }
    let smoke = repo().join("../shared/tools/openstack-smoke.sh");
    if !smoke.exists() {
        assert!(std::env::var_os("CI").is_none(), "{} is missing", smoke.display());
        eprintln!("SKIPPED: {} not found", smoke.display());
        return false;
    }
    true
}

/// Runs a repository script; panics with its output unless it succeeds.
fn script(argv: &[&str]) -> Output {
    let t = Instant::now();
    let out = run(argv, Some(&repo()), BUILD_TIMEOUT).unwrap_or_else(|e| panic!("{e}"));
    assert!(out.status.success(), "{argv:?} failed: {}", show(&out));
    eprintln!("{} ({:.0?})", argv[..2].join(" "), t.elapsed());
    out
}

/// A running container of the systemd image; dropping it removes it (after printing the
/// service's journal when the test failed).
struct Host {
    name: String,
}

impl Host {
    fn start(port: u16) -> Host {
        let name = format!("idnode-deb-it-{}", std::process::id());
        let publish = format!("127.0.0.1:{port}:5000");
        // systemd as PID 1: its own cgroup tree (written, so mounted rw, in the host's cgroup
        // namespace) and CAP_SYS_ADMIN for the mount namespaces of the unit's hardening. Not
        // `--privileged`: a Docker inside a container without every capability refuses it.
        let argv = [
            "docker",
            "run",
            "-d",
            "--name",
            &name,
            "--cap-add",
            "SYS_ADMIN",
            "--cgroupns",
            "host",
            "-v",
            "/sys/fs/cgroup:/sys/fs/cgroup:rw",
            "--tmpfs",
            "/run",
            "--tmpfs",
            "/run/lock",
            "--stop-signal",
            "SIGRTMIN+3",
            "-p",
            &publish,
            IMAGE,
        ];
        let out = run(&argv, None, Duration::from_secs(120)).unwrap_or_else(|e| panic!("{e}"));
        assert!(out.status.success(), "docker run {IMAGE}: {}", show(&out));
        Host { name }
    }

    /// `sh -c CMD` in the container: its output, or why it failed.
    fn sh(&self, cmd: &str) -> Result<String, String> {
        let out = run(&["docker", "exec", &self.name, "sh", "-c", cmd], None, EXEC_TIMEOUT)?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        } else {
            Err(format!("`{cmd}` in {}: {}", self.name, show(&out)))
        }
    }

    fn sh_ok(&self, cmd: &str) -> String {
        self.sh(cmd).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Polls `systemctl is-system-running` until systemd has finished starting up.
    fn wait_booted(&self) {
        let deadline = Instant::now() + BOOT_TIMEOUT;
        loop {
            // `degraded`: some unit that makes no sense in a container failed; not ours.
            let state = self.sh("systemctl is-system-running || true").unwrap_or_default();
            if state == "running" || state == "degraded" {
                return;
            }
            assert!(Instant::now() < deadline, "systemd in {} is still {state:?} after {BOOT_TIMEOUT:?}", self.name);
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if std::thread::panicking() {
            if let Ok(j) = self.sh("journalctl -u idnode --no-pager -n 60 -o cat") {
                eprintln!("----- journalctl -u idnode (last 60 lines) -----\n{j}");
            }
        }
        let _ = run(&["docker", "rm", "-f", "-v", &self.name], None, Duration::from_secs(60));
    }
}

/// A project-scoped admin token, retrying until `timeout` (the service may still be starting).
async fn admin_token(http: &Http, api: &str, password: &str, timeout: Duration) -> String {
    let deadline = Instant::now() + timeout;
    let body = password_auth_body("admin", password, "admin");
    loop {
        let last = match http.post(&format!("{api}/v3/auth/tokens"), None, &body).await {
            Ok(r) if r.status == StatusCode::OK || r.status == StatusCode::CREATED => {
                return r.header("X-Subject-Token").expect("X-Subject-Token")
            }
            Ok(r) => format!("{} {}", r.status, r.text),
            Err(e) => format!("error: {e}"),
        };
        assert!(Instant::now() < deadline, "no admin token from the packaged service within {timeout:?}: {last}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debian_package_installs_a_hardened_service_that_passes_the_smoke_session() {
    if !preflight() {
        return;
    }
    let started = Instant::now();
    let out_dir = tempfile::Builder::new().prefix("idnode-deb-").tempdir().expect("tempdir");
    let out_path = out_dir.path().to_str().expect("utf-8 path");
    let built =
        script(&["bash", "scripts/build-deb", "--fast", "--bin", env!("CARGO_BIN_EXE_idnode"), "--out", out_path]);
    let deb = String::from_utf8_lossy(&built.stdout).lines().last().unwrap_or_default().to_string();
    let deb_name = deb.rsplit('/').next().expect("file name").to_string();
    assert!(deb_name.starts_with(&format!("idnode_{}", env!("CARGO_PKG_VERSION"))), "package {deb}");
    script(&["bash", "scripts/build-image", "--systemd"]);

    let port = free_ports(1)[0];
    let api = format!("http://127.0.0.1:{port}");
    let host = Host::start(port);
    host.wait_booted();
    let copied = run(&["docker", "cp", &deb, &format!("{}:/root/", host.name)], None, Duration::from_secs(120))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(copied.status.success(), "docker cp: {}", show(&copied));
    // The catalog's identity endpoint is written at the first start: the URL this test reaches
    // the container by, given as an operator overrides a unit (a drop-in), before installing.
    host.sh_ok(&format!(
        "mkdir -p /etc/systemd/system/idnode.service.d && printf '[Service]\\nEnvironment=IDNODE_PUBLIC_URL={api}\\n' \
         > /etc/systemd/system/idnode.service.d/public-url.conf"
    ));

    let t = Instant::now();
    host.sh_ok(&format!("DEBIAN_FRONTEND=noninteractive dpkg -i /root/{deb_name}"));
    eprintln!("dpkg -i {deb_name} in {:.1?}", t.elapsed());

    // What the maintainer scripts and the unit must have set up.
    assert_eq!(host.sh_ok("systemctl is-enabled idnode"), "enabled");
    assert_eq!(host.sh_ok("systemctl is-active idnode || true"), "active");
    assert_eq!(host.sh_ok("stat -c '%U:%G %a' /var/lib/idnode"), "idnode:idnode 700");
    assert_eq!(host.sh_ok("stat -c '%U:%G %a' /etc/idnode/idnode.env"), "root:root 600");
    assert_eq!(host.sh_ok("getent passwd idnode | cut -d: -f6,7"), "/var/lib/idnode:/usr/sbin/nologin");
    assert!(host.sh_ok("dpkg-query -W -f='${Conffiles}' idnode").contains("/etc/idnode/idnode.conf"));
    assert!(host.sh_ok("idnode --version").starts_with(&format!("idnode {}", env!("CARGO_PKG_VERSION"))));
    let props = host.sh_ok("systemctl show -p NoNewPrivileges -p ProtectSystem -p PrivateTmp idnode");
    for p in ["NoNewPrivileges=yes", "ProtectSystem=strict", "PrivateTmp=yes"] {
        assert!(props.lines().any(|l| l == p), "{p} not in {props}");
    }
    // Read, never printed.
    let password = host.sh_ok("sed -n 's/^IDNODE_ADMIN_PASSWORD=//p' /etc/idnode/idnode.env");
    assert!(password.len() >= 16, "the postinst wrote no admin password");

    let http = Http::new(Duration::from_secs(10));
    admin_token(&http, &api, &password, READY_TIMEOUT).await;
    eprintln!("the packaged service issued a token {:.1?} after dpkg -i", t.elapsed());
    let pid = host.sh_ok("systemctl show -p MainPID --value idnode");
    assert_eq!(host.sh_ok(&format!("ps -o user= -p {pid}")), "idnode", "the service should run as idnode");

    let t = Instant::now();
    let summary = run_smoke(&format!("{api}/v3"), &password);
    eprintln!("smoke session against the packaged service: {summary} ({:.0?})", t.elapsed());

    // Its state lives in /var/lib/idnode, the one place the unit lets it write.
    host.sh_ok("systemctl restart idnode");
    admin_token(&http, &api, &password, READY_TIMEOUT).await;
    let journal = host.sh_ok("journalctl -u idnode --no-pager -o cat");
    assert!(
        journal.contains("idnode::access") || journal.contains("/v3/auth/tokens"),
        "no access lines in the journal"
    );
    assert!(!journal.contains(&password), "the journal holds the admin password");

    host.sh_ok("DEBIAN_FRONTEND=noninteractive dpkg --purge idnode");
    assert_ne!(host.sh_ok("systemctl is-active idnode || true"), "active");
    assert_eq!(host.sh_ok("pgrep -x idnode || echo none"), "none", "idnode still runs after the purge");
    assert_eq!(
        host.sh_ok("for p in /usr/bin/idnode /var/lib/idnode /etc/idnode; do [ -e $p ] && echo $p; done; true"),
        "",
        "left behind by dpkg --purge"
    );
    assert!(http.get(&format!("{api}/v3"), None).await.is_err(), "the API still answers after the purge");
    drop(host);
    eprintln!("package test done in {:.0?}", started.elapsed());
}
