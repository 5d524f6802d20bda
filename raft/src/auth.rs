//! The cluster credential every peer request carries. It is derived from the shared secret (so
//! the secret itself never travels) and checked in constant time. Without a secret a random
//! per-process one is used: nobody else can call the peer routes, which suits a single node.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::sync::Arc;

pub const HEADER: &str = "x-idnode-cluster-auth";

pub struct Credential {
    token: String,
}

impl Credential {
    pub fn from_secret(secret: Option<&str>) -> Self {
        let secret: Vec<u8> = match secret {
            Some(s) => s.as_bytes().to_vec(),
            None => idnode_keys::random_bytes::<32>().to_vec(),
        };
        let mut h = Sha256::new();
        h.update(b"idnode-raft-peer-credential-v1\0");
        h.update(&secret);
        let token = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        Credential { token }
    }

    pub fn header_value(&self) -> &str {
        &self.token
    }

    pub fn verify(&self, presented: &[u8]) -> bool {
        idnode_keys::constant_time_eq(presented, self.token.as_bytes())
    }
}

/// The header a peer request must carry for a cluster with `secret` (for tools that call
/// the peer routes).
pub fn peer_auth_header(secret: &str) -> (&'static str, String) {
    (HEADER, Credential::from_secret(Some(secret)).token)
}

/// Refuses (401) any request that does not carry the credential.
pub async fn require(State(cred): State<Arc<Credential>>, req: Request, next: Next) -> Response {
    let ok = req.headers().get(HEADER).is_some_and(|v| cred.verify(v.as_bytes()));
    if !ok {
        return (StatusCode::UNAUTHORIZED, "cluster credential required").into_response();
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_is_derived_and_checked() {
        let a = Credential::from_secret(Some("s3cret"));
        assert_eq!(a.header_value(), peer_auth_header("s3cret").1);
        assert!(a.verify(a.header_value().as_bytes()));
        assert!(!a.verify(peer_auth_header("other").1.as_bytes()));
        assert!(!a.verify(b""));
        assert!(!a.header_value().contains("s3cret"));
    }

    #[test]
    fn no_secret_means_nobody_gets_in() {
        let a = Credential::from_secret(None);
        let b = Credential::from_secret(None);
        assert_ne!(a.header_value(), b.header_value());
        assert!(!a.verify(peer_auth_header("").1.as_bytes()));
    }
}
