//! The benchmark fixture, created through the Keystone API on either system.

use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use reqwest::{Client, Method};
use serde_json::{json, Value};

use crate::api::{call_retry, password_body};

pub struct Fixture {
    /// project-scoped admin token (X-Auth-Token of validate and create)
    pub admin: String,
    /// the token validated (X-Subject-Token)
    pub subject: String,
    /// password-auth body of the issue workload
    pub issue: Value,
    /// subject and issue use the admin user (fallback) instead of bench-user
    pub as_admin: bool,
    pub notes: Vec<String>,
}

/// The fixture of the reference bench (bench_fixture.py), created through the Keystone API:
/// bench-project, bench-user (role member on it), n_extra extra projects and users.
/// Returns (admin token, subject token, issue body, notes).
pub async fn fixture(
    http: &Client,
    base: &str,
    admin_password: &str,
    n_extra: u32,
    force_admin: bool,
) -> Result<Fixture> {
    let mut notes = Vec::new();
    let url = |p: &str| format!("{base}/v3{p}");
    // `/ready` can answer 200 before the new cluster has bootstrapped its admin user: retry
    // until the admin token is issued (60 s).
    let deadline = Instant::now() + Duration::from_secs(60);
    let admin = loop {
        let r = call_retry(
            http,
            Method::POST,
            &url("/auth/tokens"),
            None,
            Some(&password_body("admin", admin_password, "admin")),
        )
        .await?;
        match r.subject_token.filter(|_| r.status.is_success()) {
            Some(t) => break t,
            None if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(100)).await,
            None => bail!("admin token: {} {}", r.status, r.text),
        }
    };
    let tok = Some(admin.as_str());

    pub async fn ensure(
        http: &Client,
        base: &str,
        tok: Option<&str>,
        kind: &str,
        name: &str,
        body: Value,
    ) -> Result<String> {
        let r = call_retry(http, Method::GET, &format!("{base}/v3/{kind}s?name={name}"), tok, None).await?;
        if let Some(id) = r.json[format!("{kind}s")][0]["id"].as_str() {
            return Ok(id.to_owned());
        }
        let r = call_retry(http, Method::POST, &format!("{base}/v3/{kind}s"), tok, Some(&body)).await?;
        if !r.status.is_success() {
            bail!("create {kind} {name}: {} {}", r.status, r.text);
        }
        r.json[kind]["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| anyhow!("create {kind} {name}: no id in {}", r.text))
    }

    let project = ensure(
        http,
        base,
        tok,
        "project",
        "bench-project",
        json!({"project": {"name": "bench-project", "domain_id": "default", "description": "bench fixture"}}),
    )
    .await?;
    let user = ensure(
        http,
        base,
        tok,
        "user",
        "bench-user",
        json!({"user": {"name": "bench-user", "domain_id": "default", "password": "bench-user-pw",
                        "default_project_id": project, "email": "bench-user@example.org"}}),
    )
    .await?;
    // the role steps are optional: a server without /v3/roles falls back to admin credentials
    let assigned: Result<()> = async {
        let member = ensure(http, base, tok, "role", "member", json!({"role": {"name": "member"}})).await?;
        let r =
            call_retry(http, Method::PUT, &url(&format!("/projects/{project}/users/{user}/roles/{member}")), tok, None)
                .await?;
        if !r.status.is_success() {
            bail!("role assignment: {} {}", r.status, r.text);
        }
        Ok(())
    }
    .await;
    if let Err(e) = &assigned {
        notes.push(format!("no role for bench-user on bench-project ({e:#})"));
    }
    for i in 0..n_extra {
        let name = format!("bench-extra-{i}");
        let p = ensure(
            http,
            base,
            tok,
            "project",
            &name,
            json!({"project": {"name": name, "domain_id": "default", "description": "bench fixture"}}),
        )
        .await?;
        ensure(
            http,
            base,
            tok,
            "user",
            &name,
            json!({"user": {"name": name, "domain_id": "default", "password": format!("bench-extra-pw-{i}"),
                            "default_project_id": p, "email": format!("{name}@example.org")}}),
        )
        .await?;
    }
    let as_admin = |admin: String, mut notes: Vec<String>, why: String| {
        notes.push(format!("admin credentials used for the issue and validate workloads: {why}"));
        let issue = password_body("admin", admin_password, "admin");
        Ok(Fixture { subject: admin.clone(), admin, issue, as_admin: true, notes })
    };
    if force_admin {
        return as_admin(admin, notes, "as in the idnode runs, for the same workload".to_owned());
    }
    if assigned.is_err() {
        return as_admin(admin, notes, "bench-user has no role to scope to".to_owned());
    }
    let issue = password_body("bench-user", "bench-user-pw", "bench-project");
    let r = call_retry(http, Method::POST, &url("/auth/tokens"), None, Some(&issue)).await?;
    match r.subject_token.filter(|_| r.status.is_success()) {
        Some(subject) => Ok(Fixture { admin, subject, issue, as_admin: false, notes }),
        None => as_admin(admin, notes, format!("bench-user project-scoped token failed ({})", r.status)),
    }
}
