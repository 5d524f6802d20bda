//! TLS as an operator sets it up with `openssl` (the commands of docs/operations.md, "TLS"):
//! members that talk mutual TLS form a cluster, replicate and admit a new learner, while the
//! peer listener refuses plain HTTP, a certificate from another CA, a certificate of the right
//! CA that names no member, and a caller with no certificate; the public and ops listeners
//! serve HTTPS, and the operator commands reach them with `--cacert`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{free_ports, output_within, random_hex, Cluster};

/// Runs `openssl ARGS` in `dir`; panics with its output when it fails.
fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl").args(args).current_dir(dir).output().expect("run openssl");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A CA: `NAME.crt`, `NAME.key`.
fn make_ca(dir: &Path, name: &str) {
    let (crt, key, subj) = (format!("{name}.crt"), format!("{name}.key"), format!("/CN={name}"));
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-days",
            "2",
            "-keyout",
            &key,
            "-out",
            &crt,
            "-subj",
            &subj,
        ],
    );
}

/// A certificate for `san` (e.g. `IP:127.0.0.1`) signed by the CA `ca`, usable to serve and to
/// call (`NAME.crt`, `NAME.key`), as docs/operations.md makes them.
fn make_cert(dir: &Path, ca: &str, name: &str, san: &str) {
    let (crt, key, csr) = (format!("{name}.crt"), format!("{name}.key"), format!("{name}.csr"));
    let (ca_crt, ca_key) = (format!("{ca}.crt"), format!("{ca}.key"));
    let subj = format!("/CN={name}");
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &csr,
            "-subj",
            &subj,
        ],
    );
    let ext = format!("{name}.ext");
    std::fs::write(
        dir.join(&ext),
        format!("subjectAltName={san}\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=critical,CA:FALSE\n"),
    )
    .expect("write extensions");
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca_crt,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            &ext,
            "-out",
            &crt,
        ],
    );
}

fn path(dir: &Path, file: &str) -> String {
    dir.join(file).display().to_string()
}

/// `idnode cluster status` against node `i` with these extra arguments.
fn status_with(cluster: &Cluster, i: usize, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["status"];
    args.extend_from_slice(extra);
    cluster.cluster_cli(i, &args)
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn ids(status: &Value, key: &str) -> Vec<u64> {
    status[key].as_array().map(|a| a.iter().filter_map(|m| m["id"].as_u64()).collect()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_talk_mutual_tls_and_the_peer_listener_admits_only_members() {
    let pki = tempfile::tempdir().expect("temp dir");
    let d = pki.path();
    make_ca(d, "ca");
    make_cert(d, "ca", "member", "IP:127.0.0.1");
    make_cert(d, "ca", "intruder", "DNS:intruder.example");
    make_ca(d, "rogue-ca");
    make_cert(d, "rogue-ca", "rogue", "IP:127.0.0.1");
    let (ca, cert, key) = (path(d, "ca.crt"), path(d, "member.crt"), path(d, "member.key"));
    let env = [
        ("IDNODE_CLUSTER_PEER_TLS_CERT", cert.as_str()),
        ("IDNODE_CLUSTER_PEER_TLS_KEY", key.as_str()),
        ("IDNODE_CLUSTER_PEER_TLS_CA", ca.as_str()),
    ];
    let mut cluster = Cluster::start_with_env(3, &env).await;
    cluster.wait_leader(Duration::from_secs(30)).await;

    // Writes replicate over TLS (plain HTTP between members would be refused, see below).
    let token = cluster.admin_token(1).await;
    let created = cluster
        .post_retry(
            2,
            "/v3/projects",
            &token,
            &json!({"project": {"name": "over-tls", "domain_id": "default"}}),
            Duration::from_secs(30),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    let id = created.json["project"]["id"].as_str().expect("project id").to_string();
    for i in 0..3 {
        cluster
            .wait_get_status(i, &format!("/v3/projects/{id}"), &token, StatusCode::OK, Duration::from_secs(30))
            .await;
    }

    // The operator's command with a member's certificate, as etcdctl takes them.
    let tls = ["--cacert", ca.as_str(), "--cert", cert.as_str(), "--key", key.as_str()];
    let out = status_with(&cluster, 0, &tls);
    assert!(out.status.success(), "cluster status over TLS: {}", stderr(&out));
    let status: Value = serde_json::from_slice(&out.stdout).expect("status JSON");
    assert_eq!(ids(&status, "voters"), vec![1, 2, 3]);

    // Refused: plain HTTP, no certificate, another CA's certificate, a certificate naming no
    // member, and a client that does not trust the member's CA.
    let plain = status_with(&cluster, 0, &[]);
    assert!(!plain.status.success(), "plain HTTP to a TLS peer listener must fail");
    let no_cert_args = ["--cacert", ca.as_str()];
    let no_cert = status_with(&cluster, 0, &no_cert_args);
    assert!(!no_cert.status.success(), "a caller without a certificate must be refused");
    let (rogue, rogue_key) = (path(d, "rogue.crt"), path(d, "rogue.key"));
    let other_ca_args = ["--cacert", ca.as_str(), "--cert", &rogue, "--key", &rogue_key];
    let other_ca = status_with(&cluster, 0, &other_ca_args);
    assert!(!other_ca.status.success(), "a certificate from another CA must be refused");
    let (intruder, intruder_key) = (path(d, "intruder.crt"), path(d, "intruder.key"));
    let non_member = status_with(&cluster, 0, &["--cacert", ca.as_str(), "--cert", &intruder, "--key", &intruder_key]);
    assert!(!non_member.status.success(), "a certificate naming no member must be refused");
    let rogue_ca = path(d, "rogue-ca.crt");
    let distrust = status_with(&cluster, 0, &["--cacert", &rogue_ca, "--cert", &cert, "--key", &key]);
    assert!(!distrust.status.success(), "the client must not trust a server of another CA");
    assert!(stderr(&distrust).to_lowercase().contains("certificate"), "{}", stderr(&distrust));
    // The caller learns why from the alert (rustls' names for them). In TLS 1.3 the server
    // judges the client's certificate after the client has finished its handshake, so the
    // alert races the request: hyper may report only "connection was not ready". Every try
    // must fail; one of a few must name the alert.
    for (args, alert) in [(&no_cert_args[..], "CertificateRequired"), (&other_ca_args[..], "UnknownCA")] {
        let mut seen = Vec::new();
        for _ in 0..5 {
            let out = status_with(&cluster, 0, args);
            assert!(!out.status.success(), "a refused caller got through on a retry");
            seen.push(stderr(&out));
            if seen.last().is_some_and(|e| e.contains(alert)) {
                break;
            }
        }
        assert!(seen.last().is_some_and(|e| e.contains(alert)), "no try named {alert}: {seen:#?}");
    }
    let log = std::fs::read_to_string(&cluster.nodes[0].log_path).expect("node log");
    assert!(log.contains("names none of the members"), "the node says why it refused the intruder");
    assert!(log.contains("TLS handshake refused"), "the node logs the refused handshakes");

    // A raw HTTP request gets no HTTP answer from the peer listener.
    let raw = reqwest::Client::new().get(format!("http://{}/", cluster.peer_addr(0))).send().await;
    assert!(raw.is_err(), "plain HTTP got an answer: {:?}", raw.map(|r| r.status()));

    // A new node knows no members yet: it admits the leader's TLS connection and catches up.
    let new = cluster.spawn_joining_node();
    let peer = cluster.peer_addr(new);
    let mut add = vec!["add-learner", "4", peer.as_str()];
    add.extend_from_slice(&tls);
    let out = cluster.cluster_cli(0, &add);
    assert!(out.status.success(), "add-learner over TLS: {}", stderr(&out));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = status_with(&cluster, new, &tls);
        let applied = serde_json::from_slice::<Value>(&out.stdout).ok().and_then(|s| s["applied"].as_u64());
        let leader_applied = serde_json::from_slice::<Value>(&status_with(&cluster, 0, &tls).stdout)
            .ok()
            .and_then(|s| s["applied"].as_u64());
        if matches!((applied, leader_applied), (Some(a), Some(l)) if a >= l && l > 0) {
            break;
        }
        assert!(Instant::now() < deadline, "the learner did not catch up over TLS: {}", stderr(&out));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A single node serving its public and ops listeners over HTTPS; killed on drop.
struct HttpsNode {
    child: std::process::Child,
    _dir: tempfile::TempDir,
}

impl Drop for HttpsNode {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn public_and_ops_listeners_serve_https_and_the_cli_trusts_cacert() {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path().to_path_buf();
    make_ca(&d, "ca");
    make_cert(&d, "ca", "api", "IP:127.0.0.1");
    let ports = free_ports(3);
    let (api, ops) = (format!("127.0.0.1:{}", ports[0]), format!("127.0.0.1:{}", ports[1]));
    let secret = format!("s-{}", random_hex(16));
    let log = std::fs::File::create(d.join("node.log")).expect("log file");
    let child = Command::new(env!("CARGO_BIN_EXE_idnode"))
        .args(["serve", "--data-dir"])
        .arg(d.join("data"))
        .args(["--listen", &api, "--ops-listen", &ops, "--peer-listen", &format!("127.0.0.1:{}", ports[2])])
        .env("IDNODE_TLS_CERT", d.join("api.crt"))
        .env("IDNODE_TLS_KEY", d.join("api.key"))
        .env("IDNODE_CLUSTER_SECRET", &secret)
        .env("IDNODE_ADMIN_PASSWORD", "https-admin-pw")
        .current_dir(&d)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .expect("spawn idnode");
    let node = HttpsNode { child, _dir: dir };
    let ca = reqwest::Certificate::from_pem(&std::fs::read(d.join("ca.crt")).expect("ca")).expect("ca pem");
    let https = reqwest::Client::builder()
        .add_root_certificate(ca)
        .tls_built_in_root_certs(false)
        .timeout(Duration::from_secs(5))
        .build()
        .expect("client");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match https.get(format!("https://{ops}/ready")).send().await {
            Ok(r) if r.status() == StatusCode::OK => break,
            other => {
                let log = std::fs::read_to_string(d.join("node.log")).unwrap_or_default();
                assert!(Instant::now() < deadline, "not ready over HTTPS: {other:?}\n{log}");
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The version document links to the HTTPS base (no public_url given).
    let v3: Value = https.get(format!("https://{api}/v3")).send().await.expect("GET /v3").json().await.expect("json");
    let href = v3["version"]["links"][0]["href"].as_str().unwrap_or_default().to_string();
    assert!(href.starts_with(&format!("https://{api}")), "{v3}");
    let login = json!({"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": "admin", "domain": {"id": "default"}, "password": "https-admin-pw"}}}}});
    let issued = https.post(format!("https://{api}/v3/auth/tokens")).json(&login).send().await.expect("login");
    assert!(issued.status().is_success(), "login over HTTPS: {}", issued.status());
    assert!(issued.headers().contains_key("x-subject-token"));
    let plain = reqwest::Client::new().get(format!("http://{api}/v3")).send().await;
    assert!(plain.map(|r| !r.status().is_success()).unwrap_or(true), "plain HTTP must not be served");

    // The operator command reaches the ops listener over HTTPS with --cacert, not without.
    let keys = |extra: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_idnode"));
        cmd.args(["keys", "status", "--endpoint", &format!("https://{ops}")])
            .args(extra)
            .env("IDNODE_CLUSTER_SECRET", &secret);
        output_within(&mut cmd, Duration::from_secs(30))
    };
    let ca_file: PathBuf = d.join("ca.crt");
    let ok = keys(&["--cacert", ca_file.to_str().expect("utf-8 path")]);
    assert!(ok.status.success(), "keys status over HTTPS: {}", stderr(&ok));
    let untrusted = keys(&[]);
    assert!(!untrusted.status.success(), "the system roots do not know the cluster's CA");
    drop(node);
}
