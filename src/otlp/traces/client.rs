//! The exporter's HTTP client: our reqwest (rustls, already built) rather than a second HTTP
//! stack. The SDK exports from a thread of its own with no async runtime, so each call runs on
//! the node's tokio runtime and the exporter thread waits for its answer.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};

#[derive(Debug)]
pub struct Client {
    http: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl Client {
    pub fn new(runtime: tokio::runtime::Handle, timeout: Duration) -> anyhow::Result<Client> {
        Ok(Client { http: reqwest::Client::builder().timeout(timeout).build()?, runtime })
    }
}

#[async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let http = self.http.clone();
        let call = async move {
            let req = reqwest::Request::try_from(request)?;
            let resp = http.execute(req).await?;
            let mut out = Response::builder().status(resp.status());
            if let Some(headers) = out.headers_mut() {
                *headers = resp.headers().clone();
            }
            let body = resp.bytes().await?;
            Ok::<_, HttpError>(out.body(body)?)
        };
        self.runtime.spawn(call).await?
    }
}
