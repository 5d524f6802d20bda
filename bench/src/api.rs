//! A minimal Keystone API client for the fixtures: JSON calls with retries.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use reqwest::{Client, Method, StatusCode};
use serde_json::{json, Value};

pub fn http_client(timeout: Duration) -> Result<Client> {
    Client::builder()
        .no_proxy()
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(2))
        .build()
        .context("build HTTP client")
}

pub struct Resp {
    pub status: StatusCode,
    pub subject_token: Option<String>,
    pub json: Value,
    pub text: String,
}

pub async fn call(http: &Client, method: Method, url: &str, token: Option<&str>, body: Option<&Value>) -> Result<Resp> {
    let mut req = http.request(method.clone(), url);
    if let Some(t) = token {
        req = req.header("X-Auth-Token", t);
    }
    if let Some(b) = body {
        req = req.json(b);
    }
    let r = req.send().await.with_context(|| format!("{method} {url}"))?;
    let status = r.status();
    let subject_token = r.headers().get("X-Subject-Token").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let text = r.text().await.with_context(|| format!("{method} {url}: body"))?;
    let json = serde_json::from_str(&text).unwrap_or(Value::Null);
    Ok(Resp { status, subject_token, json, text })
}

/// `call` retried on transport errors and 5xx (e.g. 503 while there is no leader) until 60 s.
pub async fn call_retry(
    http: &Client,
    method: Method,
    url: &str,
    token: Option<&str>,
    body: Option<&Value>,
) -> Result<Resp> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let res = call(http, method.clone(), url, token, body).await;
        let retry = match &res {
            Ok(r) => r.status.is_server_error(),
            Err(_) => true,
        };
        if !retry || Instant::now() >= deadline {
            return res;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

pub fn password_body(user: &str, password: &str, project: &str) -> Value {
    json!({"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": user, "domain": {"id": "default"}, "password": password}}},
        "scope": {"project": {"name": project, "domain": {"id": "default"}}}}})
}
