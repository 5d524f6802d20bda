//! A signed OAuth1 request as the token endpoints see it: its OAuth parameters (header and
//! query) and the URLs its signature may cover.

use std::sync::Arc;

use axum::extract::{FromRef, FromRequestParts, OriginalUri, Query};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, Uri};

use super::signature::{self, base_uri, OAuthParams};
use crate::context::Core;
use crate::http::error::ApiError;

/// What the consumer-signed token endpoints take: the node, caught up with the leader first
/// (their checks read what the leader may just have written), the signed request and its
/// headers.
pub struct Signed {
    pub node: Arc<Core>,
    pub req: SignedRequest,
    pub headers: HeaderMap,
}

impl<S: Send + Sync> FromRequestParts<S> for Signed
where
    Arc<Core>: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let node = Arc::<Core>::from_ref(state);
        let Ok(OriginalUri(uri)) = OriginalUri::from_request_parts(parts, state).await;
        node.ensure_fresh().await?;
        let req = SignedRequest::of(&node, &parts.headers, &uri);
        Ok(Signed { node, req, headers: parts.headers.clone() })
    }
}

pub struct SignedRequest {
    /// The `Authorization: OAuth` parameters.
    pub oauth: OAuthParams,
    /// What the signature covers: those and the query parameters.
    params: Vec<(String, String)>,
    /// This endpoint's URL as the client may have signed it.
    uris: Vec<String>,
}

impl SignedRequest {
    /// Keystone rebuilds the URL from the request (the `Host` header and the path) with the
    /// configured scheme; behind a proxy that rewrites either, the public URL plus the path
    /// is the one the client signed, so both are accepted (both name this endpoint).
    pub fn of(node: &Core, headers: &HeaderMap, uri: &Uri) -> SignedRequest {
        let oauth = OAuthParams::parse(headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()));
        let mut params = oauth.0.clone();
        if let Ok(Query(q)) = Query::<Vec<(String, String)>>::try_from_uri(uri) {
            params.extend(q);
        }
        let public = node.cfg.public_base();
        let (scheme, public_rest) = public.split_once("://").unwrap_or(("http", public.as_str()));
        let host = headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
            .or_else(|| uri.authority().map(|a| a.to_string()));
        let mut uris = Vec::new();
        if let Some(host) = host {
            uris.push(base_uri(scheme, &host, uri.path()));
        }
        let (public_host, prefix) = match public_rest.find('/') {
            Some(i) => public_rest.split_at(i),
            None => (public_rest, ""),
        };
        let via_public = base_uri(scheme, public_host, &format!("{prefix}{}", uri.path()));
        if !uris.contains(&via_public) {
            uris.push(via_public);
        }
        SignedRequest { oauth, params, uris }
    }

    /// Whether the signature is right for these secrets.
    pub fn verify(&self, consumer_secret: &str, token_secret: &str) -> bool {
        signature::verify("POST", &self.uris, &self.params, consumer_secret, token_secret)
    }
}
