//! The OAuth2 workloads (idnode only: the reference Keystone has no OAuth2 provider), on the
//! default domain's authorization server, with the form-post mode of `lua/form.lua`:
//!   oauth2_client_credentials  POST /v4/oauth2/default/token, grant_type=client_credentials,
//!                              scope=platform:api, HTTP Basic client authentication
//!   oauth2_introspect          POST /v4/oauth2/default/introspect, token=<an access token
//!                              minted just before>, HTTP Basic of the same confidential client
//!   oauth2_introspect_unseen   the same, each request with another token of a pool of
//!                              UNSEEN_POOL tokens minted before the run: more than the node
//!                              remembers verified (4,096), so each costs an ES256 verification
//! The first two also run against a follower of the 3-node cluster.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Context, Result};
use base64::Engine;
use reqwest::{Client, Method};
use serde_json::{json, Value};

use crate::api::call_retry;
use crate::wrk::{Wrk, WrkResult};

pub const DOMAIN: &str = "default";
/// Tokens in the unseen-introspection pool: five times what a node remembers, so a token
/// comes round again only long after the node forgot it.
pub const UNSEEN_POOL: usize = 20_000;
pub const CLIENT_CREDENTIALS_FORM: &str = "grant_type=client_credentials&scope=platform:api";

pub fn token_path() -> String {
    format!("/v4/oauth2/{DOMAIN}/token")
}

pub fn introspect_path() -> String {
    format!("/v4/oauth2/{DOMAIN}/introspect")
}

/// A confidential client registered for client_credentials with `platform:api`.
pub struct OAuth2Client {
    pub client_id: String,
    /// `Basic base64(client_id:secret)` (both URL-safe already: no form encoding needed)
    pub basic: String,
}

/// Registers the bench client through the admin API.
pub async fn register(http: &Client, base: &str, admin: &str) -> Result<OAuth2Client> {
    let body = json!({"oauth2_client": {"name": "bench", "confidential": true,
        "grant_types": ["client_credentials"], "allowed_scopes": ["platform:api"]}});
    let url = format!("{base}/v4/oauth2/{DOMAIN}/clients");
    let r = call_retry(http, Method::POST, &url, Some(admin), Some(&body)).await?;
    if !r.status.is_success() {
        bail!("register the OAuth2 client: {} {}", r.status, r.text);
    }
    let id = r.json["oauth2_client"]["client_id"].as_str().ok_or_else(|| anyhow!("no client_id in {}", r.text))?;
    let secret = r.json["client_secret"].as_str().ok_or_else(|| anyhow!("no client_secret in {}", r.text))?;
    let basic = base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"));
    Ok(OAuth2Client { client_id: id.to_owned(), basic: format!("Basic {basic}") })
}

async fn form_post(http: &Client, url: &str, basic: &str, form: &str) -> Result<(reqwest::StatusCode, Value)> {
    let r = http
        .post(url)
        .header("Authorization", basic)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(form.to_owned())
        .send()
        .await
        .with_context(|| format!("POST {url}"))?;
    let status = r.status();
    let text = r.text().await.with_context(|| format!("POST {url}: body"))?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

/// One client_credentials grant: the access token.
pub async fn mint(http: &Client, base: &str, c: &OAuth2Client) -> Result<String> {
    let (status, v) = form_post(http, &format!("{base}{}", token_path()), &c.basic, CLIENT_CREDENTIALS_FORM).await?;
    match v["access_token"].as_str() {
        Some(t) if status.is_success() => Ok(t.to_owned()),
        _ => bail!("client_credentials grant: {status} {v}"),
    }
}

/// Whether `token` introspects as active on `base` (the workload must not measure
/// `{"active": false}` answers, which are 200s too).
pub async fn active(http: &Client, base: &str, c: &OAuth2Client, token: &str) -> Result<bool> {
    let (status, v) =
        form_post(http, &format!("{base}{}", introspect_path()), &c.basic, &format!("token={token}")).await?;
    if !status.is_success() {
        bail!("introspect: {status} {v}");
    }
    Ok(v["active"] == json!(true) && v["client_id"].as_str() == Some(c.client_id.as_str()))
}

/// Registers the client, then runs the OAuth2 workloads on `base` (and `follower`); notes
/// say what the fixture checked.
pub async fn run(
    w: &Wrk,
    http: &Client,
    base: &str,
    follower: Option<&str>,
    admin: &str,
    pids: &[u32],
    notes: &mut Vec<String>,
) -> Result<BTreeMap<&'static str, WrkResult>> {
    let mut cases = BTreeMap::new();
    let labels = [
        "oauth2_client_credentials",
        "oauth2_client_credentials_follower",
        "oauth2_introspect",
        "oauth2_introspect_follower",
        "oauth2_introspect_unseen",
    ];
    if !labels.iter().any(|l| w.wants(l)) {
        return Ok(cases);
    }
    let c = register(http, base, admin).await?;
    // A first grant creates the domain's signing keys (a replicated command), outside the
    // measured runs.
    let token = mint(http, base, &c).await?;
    let form = |body: String| vec![("MODE", "form".to_owned()), ("FORM_BODY", body), ("BASIC_AUTH", c.basic.clone())];
    let grant = form(CLIENT_CREDENTIALS_FORM.to_owned());
    w.add(&mut cases, labels[0], &format!("{base}{}", token_path()), &grant, pids).await?;
    if let Some(f) = follower {
        // the follower must have applied the client and the keys before it is measured
        mint(http, f, &c).await.context("client_credentials grant on the follower")?;
        w.add(&mut cases, labels[1], &format!("{f}{}", token_path()), &grant, pids).await?;
    }
    // A fresh token (900 s by default: longer than the introspection runs).
    let token = if w.wants(labels[2]) || w.wants(labels[3]) { mint(http, base, &c).await? } else { token };
    let intro = form(format!("token={token}"));
    let mut checked = vec![(base, "leader")];
    if !active(http, base, &c, &token).await? {
        bail!("the introspected token is not active before the run");
    }
    w.add(&mut cases, labels[2], &format!("{base}{}", introspect_path()), &intro, pids).await?;
    if let Some(f) = follower {
        if !active(http, f, &c, &token).await? {
            bail!("the introspected token is not active on the follower before the run");
        }
        w.add(&mut cases, labels[3], &format!("{f}{}", introspect_path()), &intro, pids).await?;
        checked.push((f, "follower"));
    }
    if w.wants(labels[4]) {
        let pool = mint_pool(http, base, &c, UNSEEN_POOL).await?;
        let file = w.out.join("introspect-pool.txt");
        std::fs::write(&file, pool.join("\n") + "\n").with_context(|| format!("write {}", file.display()))?;
        if !active(http, base, &c, &pool[pool.len() - 1]).await? {
            bail!("a pool token is not active before the run");
        }
        let vars = vec![
            ("MODE", "form_pool".to_owned()),
            ("FORM_POOL_FILE", file.display().to_string()),
            ("BASIC_AUTH", c.basic.clone()),
        ];
        w.add(&mut cases, labels[4], &format!("{base}{}", introspect_path()), &vars, pids).await?;
        notes.push(format!(
            "OAuth2 unseen introspection: a pool of {} distinct access tokens, each thread cycling from its own share",
            pool.len()
        ));
    }
    let mut after = Vec::new();
    for (url, who) in checked {
        let ok = active(http, url, &c, &token).await?;
        after.push(format!("{} on the {who}", if ok { "active" } else { "UNEXPECTEDLY inactive" }));
    }
    notes.push(format!(
        "OAuth2 (idnode only): a confidential client (client_credentials, platform:api, HTTP Basic); \
         the introspected access token ({} B) was active before the runs, and after them: {}",
        token.len(),
        after.join(", ")
    ));
    Ok(cases)
}

/// `n` access tokens of `c`, minted 32 at a time.
async fn mint_pool(http: &Client, base: &str, c: &OAuth2Client, n: usize) -> Result<Vec<String>> {
    use futures::stream::{self, StreamExt, TryStreamExt};
    stream::iter(0..n).map(|_| mint(http, base, c)).buffer_unordered(32).try_collect().await
}
