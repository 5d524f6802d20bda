//! A signed OAuth1 request as the token endpoints see it: its OAuth parameters (header and
//! query) and the URLs its signature may cover.

use axum::extract::Query;
use axum::http::{header, HeaderMap, Uri};

use super::signature::{self, base_uri, OAuthParams};
use crate::context::Core;

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
