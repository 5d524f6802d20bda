//! Outgoing peer calls: one persistent HTTP client (connection reuse) that signs every request
//! (`auth`) and speaks postcard.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::HeaderValue;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::auth::{Credential, HEADER};
use crate::member_id::PATH_MEMBER_ID;

#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// Could not connect: the peer is down or not listening.
    #[error("unreachable: {0}")]
    Unreachable(String),
    #[error("peer call failed: {0}")]
    Failed(String),
}

/// What a caller of the peer listener trusts and presents when peer traffic is TLS
/// (`[cluster] peer_tls_*`): the cluster's CA, and a certificate with its key (PEM).
#[derive(Clone)]
pub struct ClientTls {
    pub ca_pem: Vec<u8>,
    /// Certificate chain and private key in one PEM buffer; `None` presents no certificate
    /// (the peer listener refuses such a caller, which is what a test of that wants).
    pub identity_pem: Option<Vec<u8>>,
}

impl std::fmt::Debug for ClientTls {
    // The private key never reaches a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTls").field("identity", &self.identity_pem.is_some()).finish_non_exhaustive()
    }
}

impl ClientTls {
    /// Reads the CA and, when both are given, the certificate and key files.
    pub fn from_files(
        ca: &std::path::Path,
        cert_key: Option<(&std::path::Path, &std::path::Path)>,
    ) -> anyhow::Result<Self> {
        use anyhow::Context;
        let read = |p: &std::path::Path| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
        let identity_pem = match cert_key {
            Some((cert, key)) => {
                let mut pem = read(cert)?;
                pem.push(b'\n');
                pem.extend(read(key)?);
                Some(pem)
            }
            None => None,
        };
        Ok(ClientTls { ca_pem: read(ca)?, identity_pem })
    }

    /// Trust only the cluster's CA (not the public roots) and present the identity.
    pub fn apply(&self, builder: reqwest::ClientBuilder) -> anyhow::Result<reqwest::ClientBuilder> {
        let mut builder = builder.tls_built_in_root_certs(false).https_only(true);
        for cert in reqwest::Certificate::from_pem_bundle(&self.ca_pem)? {
            builder = builder.add_root_certificate(cert);
        }
        if let Some(pem) = &self.identity_pem {
            builder = builder.identity(reqwest::Identity::from_pem(pem)?);
        }
        Ok(builder)
    }
}

#[derive(Clone)]
pub struct PeerClient {
    http: reqwest::Client,
    cred: Arc<Credential>,
    /// `https` when peer traffic is TLS.
    scheme: &'static str,
}

impl PeerClient {
    pub fn new(cred: Arc<Credential>, tls: Option<&ClientTls>) -> anyhow::Result<Self> {
        let mut builder = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(1))
            .pool_idle_timeout(Duration::from_secs(60))
            .tcp_nodelay(true);
        if let Some(tls) = tls {
            builder = tls.apply(builder)?;
        }
        let scheme = if tls.is_some() { "https" } else { "http" };
        Ok(PeerClient { http: builder.build()?, cred, scheme })
    }

    /// Calls member `to` at `addr`: the request is signed for that member only.
    pub async fn call<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        to: u64,
        addr: &str,
        path: &str,
        req: &Req,
        timeout: Duration,
    ) -> Result<Resp, CallError> {
        let body = postcard::to_allocvec(req).map_err(|e| CallError::Failed(e.to_string()))?;
        let signed = self.cred.sign("POST", path, &body, to, crate::auth::now_s());
        let mut post = self.http.post(format!("{}://{addr}{path}", self.scheme));
        // The API requests this call works for, for the receiver's log (never authenticated:
        // a log field, not an input).
        if let Some(tag) = crate::request_tag::current().and_then(|t| HeaderValue::from_str(&t).ok()) {
            post = post.header(crate::request_tag::HEADER, tag);
        }
        let mut traced = reqwest::header::HeaderMap::new();
        crate::trace_context::inject(&mut traced);
        post = post.headers(traced);
        let resp = post
            .header(HEADER, signed)
            .header("content-type", "application/octet-stream")
            .timeout(timeout)
            .body(body)
            .send()
            .await
            .map_err(send_error)?;
        let status = resp.status();
        if !status.is_success() {
            return Err(CallError::Failed(format!("{addr}{path}: HTTP {status}")));
        }
        let bytes = resp.bytes().await.map_err(|e| CallError::Failed(e.to_string()))?;
        postcard::from_bytes(&bytes).map_err(|e| CallError::Failed(format!("bad reply from {addr}: {e}")))
    }
}

/// A request that got no answer: unreachable (nothing listening, refused) or failed on the way.
fn send_error(e: reqwest::Error) -> CallError {
    if e.is_connect() {
        CallError::Unreachable(with_causes(&e))
    } else {
        CallError::Failed(with_causes(&e))
    }
}

impl PeerClient {
    /// The member id of the node at `addr`, from its unauthenticated [`PATH_MEMBER_ID`] route:
    /// what a tool that knows only an address signs its requests for.
    pub async fn member_id(&self, addr: &str) -> Result<u64, CallError> {
        let resp = self
            .http
            .get(format!("{}://{addr}{PATH_MEMBER_ID}", self.scheme))
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .map_err(send_error)?;
        let status = resp.status();
        if !status.is_success() {
            return Err(CallError::Failed(format!(
                "{addr}{PATH_MEMBER_ID}: HTTP {status} (does it run an older idnode?)"
            )));
        }
        let text = resp.text().await.map_err(|e| CallError::Failed(e.to_string()))?;
        text.trim().parse().map_err(|_| CallError::Failed(format!("{addr}{PATH_MEMBER_ID}: not a member id: {text:?}")))
    }
}

/// An error with its causes (reqwest's own message hides the TLS or socket error behind it:
/// "error sending request" alone cannot tell an operator that the certificate was refused).
fn with_causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}
