//! `idnode keys rotate-oidc --domain ID`: rotates a domain's signing keys through the public
//! API (`POST /v4/oauth2/{domain_id}/keys/rotate`) as a cloud administrator, so it works from
//! any machine that reaches a node, and every node learns the new key from the log.

use anyhow::{bail, Context};
use serde_json::{json, Value};

fn env(name: &str, default: &str) -> String {
    std::env::var(name).ok().filter(|v| !v.is_empty()).unwrap_or_else(|| default.to_string())
}

/// A token from `OS_TOKEN`, or a password login from the `OS_*` variables.
async fn token(http: &reqwest::Client, url: &str) -> anyhow::Result<String> {
    if let Ok(t) = std::env::var("OS_TOKEN") {
        if !t.is_empty() {
            return Ok(t);
        }
    }
    let password = std::env::var("OS_PASSWORD").context("set OS_TOKEN, or OS_PASSWORD (and OS_USERNAME)")?;
    let body = json!({"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": env("OS_USERNAME", "admin"),
            "domain": {"id": env("OS_USER_DOMAIN_ID", "default")},
            "password": password}}},
        "scope": {"project": {"name": env("OS_PROJECT_NAME", "admin"),
                              "domain": {"id": env("OS_PROJECT_DOMAIN_ID", "default")}}}}});
    let resp = http.post(format!("{url}/v3/auth/tokens")).json(&body).send().await?;
    if !resp.status().is_success() {
        bail!("login failed: HTTP {}", resp.status());
    }
    resp.headers()
        .get("x-subject-token")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .context("the login answer had no X-Subject-Token")
}

pub async fn run(
    domain: &str,
    url: &str,
    tls: &crate::cli::ClientTlsArgs,
    format: crate::output::Format,
) -> anyhow::Result<()> {
    let url = url.trim_end_matches('/').trim_end_matches("/v3");
    let http = tls.apply(reqwest::Client::builder())?.build()?;
    let token = token(&http, url).await?;
    let resp = http.post(format!("{url}/v4/oauth2/{domain}/keys/rotate")).header("x-auth-token", token).send().await?;
    let status = resp.status();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    if !status.is_success() {
        bail!("rotation refused: HTTP {status}: {}", body["error"]["message"].as_str().unwrap_or(""));
    }
    crate::output::print(format, &body)
}
