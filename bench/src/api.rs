//! A minimal Keystone API client for the fixtures: JSON calls with retries.

use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
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
    send(req, &method, url).await
}

/// `GET /v3/auth/tokens`-style validation: `X-Auth-Token` and `X-Subject-Token`.
pub async fn validate(http: &Client, url: &str, auth: &str, subject: &str) -> Result<Resp> {
    let req = http.get(url).header("X-Auth-Token", auth).header("X-Subject-Token", subject);
    send(req, &Method::GET, url).await
}

async fn send(req: reqwest::RequestBuilder, method: &Method, url: &str) -> Result<Resp> {
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

/// The id of the `kind` named `name` (`GET /v3/{kind}s?name=`), created with `fields` (its
/// name added) if absent.
pub async fn ensure(
    http: &Client,
    base: &str,
    tok: Option<&str>,
    kind: &str,
    name: &str,
    fields: Value,
) -> Result<String> {
    let r = call_retry(http, Method::GET, &format!("{base}/v3/{kind}s?name={name}"), tok, None).await?;
    if let Some(id) = r.json[format!("{kind}s")][0]["id"].as_str() {
        return Ok(id.to_owned());
    }
    let mut entity = fields;
    entity["name"] = json!(name);
    let body = json!({ kind: entity });
    let r = call_retry(http, Method::POST, &format!("{base}/v3/{kind}s"), tok, Some(&body)).await?;
    if !r.status.is_success() {
        bail!("create {kind} {name}: {} {}", r.status, r.text);
    }
    r.json[kind]["id"].as_str().map(str::to_owned).ok_or_else(|| anyhow!("create {kind} {name}: no id in {}", r.text))
}

/// A PUT that creates a relation (grant, membership, implication); 409 means it already exists.
pub async fn put_relation(http: &Client, url: &str, tok: Option<&str>) -> Result<()> {
    let r = call_retry(http, Method::PUT, url, tok, None).await?;
    if !r.status.is_success() && r.status != StatusCode::CONFLICT {
        bail!("PUT {url}: {} {}", r.status, r.text);
    }
    Ok(())
}
