//! Signed calls to nodes' ops listeners for the operator commands (`--endpoints`): each
//! request is signed with the cluster secret for the member that answers at its endpoint
//! (asked first on the open member id route); a command that needs one node tries the
//! endpoints in order until one answers.

use std::time::Duration;

use anyhow::{bail, Context};
use serde_json::Value;

use crate::cli::ClientTlsArgs;
use crate::exit;

/// The path (and query) a request to `url` carries: what its signature covers.
pub fn path_of(url: &str) -> anyhow::Result<String> {
    let u = reqwest::Url::parse(url).with_context(|| format!("{url} is not a URL"))?;
    Ok(match u.query() {
        Some(q) => format!("{}?{q}", u.path()),
        None => u.path().to_string(),
    })
}

/// The member id of the node at `endpoint` (its open member id route): a signed request is
/// valid for that member alone, so a tool asks before it signs.
pub async fn member_id(http: &reqwest::Client, endpoint: &str) -> anyhow::Result<u64> {
    let url = format!("{}{}", endpoint.trim_end_matches('/'), idnode_raft::PATH_MEMBER_ID);
    let resp = http.get(&url).send().await.with_context(|| format!("calling {url}"))?;
    let status = resp.status();
    let text = resp.text().await.unwrap_or_default();
    if !status.is_success() {
        bail!("{url} answered {status} (does the node run an older idnode?)");
    }
    text.trim().parse().with_context(|| format!("{url} answered {text:?}, not a member id"))
}

/// `e` (its causes kept: the deepest says why) as the failure to reach `at`.
fn unreachable(e: anyhow::Error, at: &str) -> anyhow::Error {
    e.context(exit::Failure::Unreachable(at.to_string()))
}

/// The cluster secret the calls are signed with (never printed).
pub fn cluster_secret() -> anyhow::Result<String> {
    std::env::var("IDNODE_CLUSTER_SECRET")
        .ok()
        .filter(|s| !s.is_empty())
        .context("set IDNODE_CLUSTER_SECRET to the cluster's secret: it proves the call")
}

/// The first of `endpoints` whose node says its member id, with that id; unreachable when
/// none does.
pub async fn first_answering(http: &reqwest::Client, endpoints: &[String]) -> anyhow::Result<(String, u64)> {
    let mut errors = Vec::new();
    for endpoint in endpoints {
        match member_id(http, endpoint).await {
            Ok(id) => return Ok((endpoint.clone(), id)),
            Err(e) => errors.push(format!("{endpoint}: {e:#}")),
        }
    }
    Err(exit::unreachable(format!("no endpoint answered: {}", errors.join("; "))))
}

pub struct OpsClient {
    http: reqwest::Client,
    secret: String,
    pub endpoints: Vec<String>,
}

impl OpsClient {
    /// Calls may take `timeout` (connecting: 5 s at most).
    pub fn new(endpoints: &[String], tls: &ClientTlsArgs, timeout: Duration) -> anyhow::Result<Self> {
        let builder = reqwest::Client::builder().connect_timeout(Duration::from_secs(5)).timeout(timeout);
        let http = tls.apply(builder)?.build()?;
        Ok(OpsClient { http, secret: cluster_secret()?, endpoints: endpoints.to_vec() })
    }

    /// One call to `endpoint` (whose member is `to`). A node that answers an error is a
    /// refusal with its message; one that does not answer is unreachable.
    async fn send(
        &self,
        endpoint: &str,
        to: u64,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> anyhow::Result<Value> {
        let url = format!("{}{path}", endpoint.trim_end_matches('/'));
        let bytes = match body {
            Some(b) => serde_json::to_vec(b)?,
            None => Vec::new(),
        };
        let (name, value) = idnode_raft::sign_request(&self.secret, to, method.as_str(), &path_of(&url)?, &bytes);
        let mut req = self.http.request(method, &url).header(name, value);
        if body.is_some() {
            req = req.header("content-type", "application/json").body(bytes);
        }
        let resp = req.send().await.map_err(|e| unreachable(e.into(), &url))?;
        let status = resp.status();
        let text = resp.text().await.map_err(|e| unreachable(e.into(), &url))?;
        let body: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        if !status.is_success() {
            let why = body.get("error").map_or_else(|| crate::output::cell(&body), crate::output::cell);
            return Err(exit::refused(format!("{url} answered {status}: {why}")));
        }
        Ok(body)
    }

    /// One call to the node at `endpoint`.
    pub async fn call_at(
        &self,
        endpoint: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> anyhow::Result<Value> {
        let to = member_id(&self.http, endpoint).await.map_err(|e| unreachable(e, endpoint))?;
        self.send(endpoint, to, method, path, body).await
    }

    /// One call to the first endpoint that answers (a refusal is an answer: not retried).
    pub async fn call_any(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> anyhow::Result<Value> {
        let (endpoint, to) = first_answering(&self.http, &self.endpoints).await?;
        self.send(&endpoint, to, method, path, body).await
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Cmd};

    fn endpoints(args: &[&str]) -> Vec<String> {
        match Cli::try_parse_from(args).expect("parses").command {
            Some(Cmd::Cluster { endpoints, .. }) | Some(Cmd::Backup { endpoints, .. }) => endpoints.list(None),
            Some(Cmd::Keys { endpoints, .. }) => endpoints.list(None),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn one_endpoints_list_everywhere_and_the_old_flag_still_works() {
        let two = "http://a:8099,http://b:8099";
        assert_eq!(endpoints(&["idnode", "cluster", "status", "--endpoints", two]), ["http://a:8099", "http://b:8099"]);
        assert_eq!(endpoints(&["idnode", "cluster", "--endpoint", "http://a:8099", "check"]), ["http://a:8099"]);
        assert_eq!(endpoints(&["idnode", "keys", "status", "--endpoint", two]).len(), 2);
        assert_eq!(endpoints(&["idnode", "backup", "--out", "f", "--endpoints", "http://c:8099"]), ["http://c:8099"]);
    }
}
