//! Outgoing peer calls: one persistent HTTP client (connection reuse) that attaches the cluster
//! credential and speaks postcard.

use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::auth::{Credential, HEADER};

#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// Could not connect: the peer is down or not listening.
    #[error("unreachable: {0}")]
    Unreachable(String),
    #[error("peer call failed: {0}")]
    Failed(String),
}

#[derive(Clone)]
pub struct PeerClient {
    http: reqwest::Client,
    cred: Arc<Credential>,
}

impl PeerClient {
    pub fn new(cred: Arc<Credential>) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(1))
            .pool_idle_timeout(Duration::from_secs(60))
            .tcp_nodelay(true)
            .build()?;
        Ok(PeerClient { http, cred })
    }

    pub async fn call<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        addr: &str,
        path: &str,
        req: &Req,
        timeout: Duration,
    ) -> Result<Resp, CallError> {
        let body = postcard::to_allocvec(req).map_err(|e| CallError::Failed(e.to_string()))?;
        let resp = self
            .http
            .post(format!("http://{addr}{path}"))
            .header(HEADER, self.cred.header_value())
            .header("content-type", "application/octet-stream")
            .timeout(timeout)
            .body(body)
            .send()
            .await
            .map_err(|e| {
                if e.is_connect() {
                    CallError::Unreachable(e.to_string())
                } else {
                    CallError::Failed(e.to_string())
                }
            })?;
        let status = resp.status();
        if !status.is_success() {
            return Err(CallError::Failed(format!("{addr}{path}: HTTP {status}")));
        }
        let bytes = resp.bytes().await.map_err(|e| CallError::Failed(e.to_string()))?;
        postcard::from_bytes(&bytes).map_err(|e| CallError::Failed(format!("bad reply from {addr}: {e}")))
    }
}
