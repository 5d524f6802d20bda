//! Acceptance of the account page (issue 55) in a real browser: headless Chromium, driven by
//! selenium through Debian's `/usr/bin/chromedriver` (`account/account_session.py` next to this
//! file, one browser kept open across the steps, with a DevTools virtual authenticator), against
//! a 3-node cluster whose `[security_compliance] password_regex` refuses short passwords.
//!
//! One user signs in with a password on member 0, registers a passkey, signs out, signs in with
//! the passkey on member 1, renames and removes the passkey, changes the password (a refused one
//! first, with the compliance rule's message), revokes a consent given to an authlib client
//! (its refresh token then fails), ends another client's session (its refresh token then fails)
//! and creates an application credential that python-openstackclient then signs in with. Every
//! effect is checked through the API with the admin token, not only on the page. A screenshot of
//! every page goes to `$CARGO_TARGET_DIR/artefacts/account/` (printed), and the browser's console
//! must hold no Content Security Policy violation.
//!
//! Needs `/opt/anchors/oauth-venv`, `/opt/anchors/osc-venv`, `chromium` and `chromium-driver`
//! (`bash scripts/install-test-deps`). Run alone with
//! `cargo test --workspace --test it -- account_page`.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::support::{free_ports, output_within_async, random_hex, Cluster};

const PYTHON: &str = "/opt/anchors/oauth-venv/bin/python";
const OPENSTACK: &str = "/opt/anchors/osc-venv/bin/openstack";
const DRIVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/account/account_session.py");
const OIDC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/oauth2/oidc_client.py");
/// Bound on one browser command (the driver's own waits are 60 s each).
const STEP: Duration = Duration::from_secs(150);
/// Bound on one run of oidc_client.py or of the openstack client.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(150);
/// Bound on a write reaching every member.
const REPLICATED: Duration = Duration::from_secs(30);
const RULE: &str = "Passwords need at least 12 characters.";

fn artefacts_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map_or_else(|| PathBuf::from("artefacts"), Path::to_path_buf)
        .join("artefacts/account")
}

/// The browser driver process; on drop (also on a panic) its input is closed so that it quits
/// the browser, and after a grace period its whole process group (chromedriver, Chromium) is
/// killed and reaped.
struct Browser {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Browser {
    fn start(artefacts: &Path) -> Browser {
        let stderr = std::fs::File::create(artefacts.join("driver.stderr")).expect("driver stderr file");
        let mut child = Command::new(PYTHON)
            .arg(DRIVER)
            .arg("--artefacts")
            .arg(artefacts)
            .env("SE_OFFLINE", "true")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("start {DRIVER}: {e}"));
        let stdout = child.stdout.take().expect("driver stdout");
        let stdin = child.stdin.take();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut b = Browser { child, stdin, lines };
        let hello = b.read();
        assert_eq!(hello["ok"], true, "the browser did not start: {hello} (see {}/driver.stderr)", artefacts.display());
        b
    }

    fn read(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(STEP)
            .unwrap_or_else(|e| panic!("no answer from the browser driver within {STEP:?}: {e}"));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("driver answered no JSON ({e}): {line}"))
    }

    /// Sends one command; panics unless it succeeded. Returns the answer.
    fn cmd(&mut self, c: Value) -> Value {
        let stdin = self.stdin.as_mut().expect("driver stdin");
        writeln!(stdin, "{c}").and_then(|()| stdin.flush()).expect("write to the driver");
        let r = self.read();
        assert_eq!(r["ok"], true, "browser command {c} failed: {r}");
        r
    }

    fn open(&mut self, url: &str) {
        self.cmd(json!({"op": "open", "url": url}));
    }

    fn fill(&mut self, fields: Value) {
        self.cmd(json!({"op": "fill", "fields": fields}));
    }

    /// Clicks `css` and waits until the browser shows the next page.
    fn click(&mut self, css: &str) {
        self.cmd(json!({"op": "click", "css": css}));
    }

    fn texts(&mut self, css: &str) -> Vec<String> {
        let r = self.cmd(json!({"op": "texts", "css": css}));
        r["texts"].as_array().expect("texts").iter().map(|t| t.as_str().unwrap_or_default().to_string()).collect()
    }

    /// The text of the one element `css`; panics when there is none.
    fn text(&mut self, css: &str) -> String {
        let t = self.texts(css);
        if t.is_empty() {
            let (url, body) = (self.url(), self.texts("body"));
            self.shot("failed");
            panic!("no {css} on the page at {url}: {body:?}");
        }
        t[0].clone()
    }

    fn url(&mut self) -> String {
        self.cmd(json!({"op": "url"}))["url"].as_str().unwrap_or_default().to_string()
    }

    fn shot(&mut self, name: &str) {
        self.cmd(json!({"op": "shot", "name": name}));
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        drop(self.stdin.take()); // end of input: the driver quits the browser
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // Whatever is left of the group (chromedriver, Chromium) goes too.
        let pgid = self.child.id() as i32;
        // SAFETY: signals only the process group this test started (pgid = the driver's pid).
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

/// The cluster, its admin token, and API calls checked for their status.
struct Api {
    cluster: Cluster,
    admin: String,
}

impl Api {
    async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> crate::support::Resp {
        let url = format!("{}{path}", self.cluster.api(0));
        self.cluster
            .http
            .request(method, &url, Some(self.admin.as_str()), &[], body)
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    async fn get(&self, path: &str) -> Value {
        let r = self.call(Method::GET, path, None).await;
        assert_eq!(r.status, StatusCode::OK, "GET {path}: {}", r.text);
        r.json
    }

    async fn create(&self, path: &str, body: Value) -> Value {
        let r = self.call(Method::POST, path, Some(&body)).await;
        assert_eq!(r.status, StatusCode::CREATED, "POST {path} {body}: {}", r.text);
        r.json
    }

    /// `POST /v3/auth/tokens` with the user's password on member `i`: its status.
    async fn password_login(&self, i: usize, user_id: &str, password: &str) -> StatusCode {
        let body = json!({"auth": {"identity": {"methods": ["password"],
            "password": {"user": {"id": user_id, "password": password}}}}});
        let url = format!("{}/v3/auth/tokens", self.cluster.api(i));
        self.cluster.http.post(&url, None, &body).await.expect("POST /v3/auth/tokens").status
    }

    async fn replicated(&self) {
        self.cluster.wait_applied_converged(&[0, 1, 2], REPLICATED).await;
    }

    /// An OAuth2 client of domain `default` for the code flow with refresh tokens.
    async fn oauth_client(&self, name: &str, port: u16) -> (String, String) {
        let spec = json!({"oauth2_client": {"name": name, "confidential": true,
            "grant_types": ["authorization_code", "refresh_token"],
            "redirect_uris": [format!("http://127.0.0.1:{port}/cb")],
            "allowed_scopes": ["openid", "profile"], "require_pkce": true}});
        let r = self.create("/v4/oauth2/default/clients", spec).await;
        let id = r["oauth2_client"]["client_id"].as_str().unwrap_or_else(|| panic!("no client_id: {r}"));
        (id.to_string(), r["client_secret"].as_str().expect("client_secret").to_string())
    }
}

/// Runs oidc_client.py (authlib, PyJWT, its own headless Chromium for the provider's pages).
async fn oidc(issuer: &str, client: &(String, String), cmd: &str, args: &[&str]) -> Value {
    let mut c = tokio::process::Command::new(PYTHON);
    c.arg(OIDC).arg(cmd).args(["--issuer", issuer, "--client-id", client.0.as_str()]);
    c.arg(format!("--client-secret={}", client.1)).args(args).env("SE_OFFLINE", "true");
    let out = output_within_async(&mut c, SCRIPT_TIMEOUT).await;
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "oidc_client.py {cmd} {args:?} failed ({}):\n{stdout}\n{stderr}", out.status);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("oidc_client.py {cmd}: no JSON ({e}):\n{stdout}"))
}

/// The refresh token of a code flow signed in as `name` (consent remembered or not).
async fn code_flow(issuer: &str, client: &(String, String), port: u16, name: &str, pw: &str, remember: bool) -> String {
    let port = port.to_string();
    let mut args = vec!["--scope", "openid profile", "--username", name, "--password", pw, "--redirect-port", &port];
    if remember {
        args.push("--remember");
    }
    let out = oidc(issuer, client, "code", &args).await;
    out["token"]["refresh_token"].as_str().unwrap_or_else(|| panic!("no refresh token: {out}")).to_string()
}

async fn refresh_fails(issuer: &str, client: &(String, String), token: &str, why: &str) {
    let r = oidc(issuer, client, "refresh", &["--refresh-token", token, "--expect-error"]).await;
    assert_eq!(r["error"], "invalid_grant", "{why}: {r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn account_page_in_chromium_on_three_members() {
    for (path, what) in [
        (PYTHON, "the OAuth2 client venv"),
        (OPENSTACK, "python-openstackclient"),
        ("/usr/bin/chromium", "Debian's chromium"),
        ("/usr/bin/chromedriver", "Debian's chromium-driver"),
    ] {
        assert!(Path::new(path).exists(), "{path} ({what}) is missing: run `bash scripts/install-test-deps`");
    }
    let started = Instant::now();
    let cluster = Cluster::start_with_env(
        3,
        &[
            ("IDNODE_SECURITY_COMPLIANCE_PASSWORD_REGEX", "^.{12,}$"),
            ("IDNODE_SECURITY_COMPLIANCE_PASSWORD_REGEX_DESCRIPTION", RULE),
        ],
    )
    .await;
    let admin = cluster.admin_token(0).await;
    let api = Api { cluster, admin };
    let artefacts = artefacts_dir();
    let _ = std::fs::remove_dir_all(&artefacts);
    std::fs::create_dir_all(&artefacts).expect("create the artefacts dir");
    eprintln!("account_page: screenshots go to {}", artefacts.display());

    // A user with the member role on a project (so it may make application credentials).
    let name = format!("acct-{}", random_hex(4));
    let (old_pw, new_pw) = (format!("Account-pw-{}", random_hex(6)), format!("Account-new-{}", random_hex(6)));
    let user =
        api.create("/v3/users", json!({"user": {"name": name, "password": old_pw, "domain_id": "default"}})).await;
    let user = user["user"]["id"].as_str().expect("user id").to_string();
    let project =
        api.create("/v3/projects", json!({"project": {"name": format!("p-{name}"), "domain_id": "default"}})).await;
    let project = project["project"]["id"].as_str().expect("project id").to_string();
    let roles = api.get("/v3/roles?name=member").await;
    let role = roles["roles"][0]["id"].as_str().unwrap_or_else(|| panic!("no member role: {roles}")).to_string();
    let r = api.call(Method::PUT, &format!("/v3/projects/{project}/users/{user}/roles/{role}"), None).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    api.replicated().await;

    let page =
        |i: usize| format!("{}/v4/account/default", api.cluster.api(i).replace("://127.0.0.1:", "://localhost:"));
    let mut b = Browser::start(&artefacts);

    // 1. Password sign-in on member 0.
    b.open(&page(0));
    b.shot("01-signin-member0");
    b.fill(json!({"#username": name, "#password": old_pw}));
    b.click("#signin");
    assert_eq!(b.text("#who"), name, "signed in as the user");
    b.shot("02-signed-in");

    // 2. Register a passkey in the virtual authenticator.
    b.click("#tab-passkeys");
    b.shot("03-passkeys-empty");
    assert!(!b.texts("#no-passkeys").is_empty(), "no passkey yet");
    b.fill(json!({"#passkey-description": "laptop"}));
    b.click("#passkey-register-button");
    assert!(!b.texts("#done").is_empty(), "registered: {:?}", b.texts("body"));
    b.shot("04-passkey-registered");
    let held = b.cmd(json!({"op": "authenticator"}));
    assert_eq!(held["count"], 1, "the authenticator holds one passkey: {held}");
    let passkeys = api.get(&format!("/v4/users/{user}/passkeys")).await;
    let list = passkeys["passkeys"].as_array().expect("passkeys");
    assert_eq!(list.len(), 1, "{passkeys}");
    assert_eq!(list[0]["description"], "laptop", "{passkeys}");
    let passkey = list[0]["id"].as_str().expect("passkey id").to_string();

    // 3. Sign out.
    b.click("#signout");
    assert!(b.texts("#who").is_empty() && !b.texts("#signin").is_empty(), "signed out: the sign-in form");
    b.shot("05-signed-out");
    api.replicated().await;

    // 4. Passkey sign-in on member 1.
    b.open(&page(1));
    b.fill(json!({"#username": name}));
    b.shot("06-signin-member1");
    b.click("#passkey-button");
    assert_eq!(b.text("#who"), name, "signed in with the passkey on member 1");
    assert!(b.url().contains(&api.cluster.api(1).replace("://127.0.0.1:", "://localhost:")), "still on member 1");
    b.shot("07-passkey-signed-in");
    let passkeys = api.get(&format!("/v4/users/{user}/passkeys")).await;
    assert!(passkeys["passkeys"][0]["last_used_at"].is_string(), "the passkey was used: {passkeys}");

    // 5. Rename, then remove the passkey.
    b.click("#tab-passkeys");
    let row = format!("#passkeys tr[data-id=\"{passkey}\"]");
    b.fill(json!({ format!("{row} form.rename input[name=description]"): "work laptop" }));
    b.click(&format!("{row} form.rename button"));
    assert!(!b.texts("#done").is_empty(), "renamed");
    b.shot("08-passkey-renamed");
    let passkeys = api.get(&format!("/v4/users/{user}/passkeys")).await;
    assert_eq!(passkeys["passkeys"][0]["description"], "work laptop", "the API has the new name: {passkeys}");
    b.click(&format!("{row} form.remove button"));
    assert!(!b.texts("#done").is_empty(), "removed");
    assert!(!b.texts("#no-passkeys").is_empty(), "no passkey listed any more");
    b.shot("09-passkey-removed");
    let passkeys = api.get(&format!("/v4/users/{user}/passkeys")).await;
    assert_eq!(passkeys["passkeys"], json!([]), "no passkey in the API: {passkeys}");

    // 6. Password change: a short one is refused with the rule's message, then a good one.
    b.click("#tab-password");
    b.shot("10-password");
    b.fill(json!({"#original_password": old_pw, "#new_password": "short-1", "#confirm": "short-1"}));
    b.click("#change-password");
    let error = b.text("#error");
    let message = format!("The password does not match the requirements: {RULE}");
    assert!(error.contains(&message) && !error.contains(".."), "the compliance rule's message: {error:?}");
    b.shot("11-password-refused");
    assert_eq!(api.password_login(0, &user, &old_pw).await, StatusCode::OK, "a refused change changes nothing");
    b.fill(json!({"#original_password": old_pw, "#new_password": new_pw, "#confirm": new_pw}));
    b.click("#change-password");
    assert!(b.texts("#error").is_empty(), "changed: {:?}", b.texts("#error"));
    assert_eq!(b.text("#who"), name, "still signed in after the change");
    b.shot("12-password-changed");
    api.replicated().await;
    assert_eq!(api.password_login(2, &user, &old_pw).await, StatusCode::UNAUTHORIZED, "the old password is gone");
    assert_eq!(api.password_login(2, &user, &new_pw).await, StatusCode::OK, "the new password works");

    // 7. A remembered consent of an authlib client, revoked on the page: its refresh token fails.
    let issuer = format!("{}/v4/oauth2/default", api.cluster.api(0));
    let ports = free_ports(2);
    let consented = api.oauth_client("consented-app", ports[0]).await;
    let refresh_a = code_flow(&issuer, &consented, ports[0], &name, &new_pw, true).await;
    let consents = api.get(&format!("/v4/users/{user}/oauth2/consents")).await;
    assert!(
        consents["consents"].as_array().expect("consents").iter().any(|c| c["client_id"] == json!(consented.0)),
        "the remembered consent: {consents}"
    );
    api.replicated().await;
    b.click("#tab-consents");
    b.shot("13-consents");
    b.click(&format!("#consents tr[data-id=\"{}\"] form.revoke button", consented.0));
    assert!(!b.texts("#done").is_empty(), "revoked");
    b.shot("14-consent-revoked");
    let consents = api.get(&format!("/v4/users/{user}/oauth2/consents")).await;
    assert!(
        !consents["consents"].as_array().expect("consents").iter().any(|c| c["client_id"] == json!(consented.0)),
        "the consent is gone: {consents}"
    );
    refresh_fails(&issuer, &consented, &refresh_a, "the revoked consent's refresh token").await;

    // 8. Another client's session, ended on the page: its refresh token fails.
    let other = api.oauth_client("session-app", ports[1]).await;
    let refresh_b = code_flow(&issuer, &other, ports[1], &name, &new_pw, false).await;
    let sessions = api.get(&format!("/v4/users/{user}/oauth2/sessions")).await;
    let family = sessions["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .find(|s| s["client_id"] == json!(other.0))
        .unwrap_or_else(|| panic!("no session of the second client: {sessions}"))["id"]
        .as_str()
        .expect("session id")
        .to_string();
    assert!(refresh_b.starts_with(&format!("{family}.")), "the family is the token's: {family} / {refresh_b}");
    api.replicated().await;
    b.click("#tab-sessions");
    let row = format!("#sessions tr[data-id=\"{family}\"]");
    assert!(!b.texts(&row).is_empty(), "the page lists the session");
    b.shot("15-sessions");
    b.click(&format!("{row} form.end button"));
    assert!(!b.texts("#done").is_empty(), "ended");
    assert!(b.texts(&row).is_empty(), "no longer listed");
    b.shot("16-session-ended");
    let sessions = api.get(&format!("/v4/users/{user}/oauth2/sessions")).await;
    assert!(
        !sessions["sessions"].as_array().expect("sessions").iter().any(|s| s["id"] == json!(family)),
        "the session is gone: {sessions}"
    );
    refresh_fails(&issuer, &other, &refresh_b, "the ended session's refresh token").await;

    // 9. An application credential made on the page signs python-openstackclient in.
    b.click("#tab-credentials");
    b.shot("17-credentials");
    b.fill(json!({"#credential-name": "ci", "#credential-description": "made on the account page",
                  "#credential-project": project}));
    b.click("#create-credential");
    let (cred_id, secret) = (b.text("#created-id"), b.text("#created-secret"));
    assert!(!cred_id.is_empty() && !secret.is_empty(), "the id and the secret are shown");
    assert!(!b.texts("#copy-secret").is_empty(), "a copy button");
    b.shot("18-credential-created");
    let creds = api.get(&format!("/v3/users/{user}/application_credentials")).await;
    let cred = creds["application_credentials"]
        .as_array()
        .expect("application_credentials")
        .iter()
        .find(|c| c["id"] == json!(cred_id))
        .unwrap_or_else(|| panic!("the API lacks {cred_id}: {creds}"))
        .clone();
    assert_eq!((&cred["name"], &cred["project_id"]), (&json!("ci"), &json!(project)), "{cred}");
    api.replicated().await;
    let mut osc = tokio::process::Command::new(OPENSTACK);
    osc.args(["--os-auth-type", "v3applicationcredential", "--os-identity-api-version", "3"])
        .arg(format!("--os-auth-url={}/v3", api.cluster.api(1)))
        .arg(format!("--os-application-credential-id={cred_id}"))
        .arg(format!("--os-application-credential-secret={secret}"))
        .args(["token", "issue", "-f", "json"])
        .env_remove("OS_CLOUD")
        .env_remove("http_proxy")
        .env_remove("HTTP_PROXY");
    let out = output_within_async(&mut osc, SCRIPT_TIMEOUT).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "openstack token issue: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let issued: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!((&issued["user_id"], &issued["project_id"]), (&json!(user), &json!(project)), "{issued}");

    b.click("#signout");
    b.shot("19-signed-out");

    // 10. No Content Security Policy violation on any page.
    let console = b.cmd(json!({"op": "console"}));
    let entries = console["entries"].as_array().expect("console entries");
    let csp: Vec<&Value> = entries
        .iter()
        .filter(|e| {
            let m = e["message"].as_str().unwrap_or_default();
            m.contains("Content Security Policy") || m.contains("Refused to")
        })
        .collect();
    assert!(csp.is_empty(), "CSP violations in the browser console: {csp:?}");
    std::fs::write(artefacts.join("console.json"), serde_json::to_vec_pretty(&console).expect("json"))
        .expect("write console.json");
    drop(b);
    eprintln!(
        "account_page: every step passed in {:?}; {} console entries; artefacts in {}",
        started.elapsed(),
        entries.len(),
        artefacts.display()
    );
}
