//! Client authentication at `/token`, `/revoke`, `/introspect` and `/device_authorization`:
//! HTTP Basic (preferred, RFC 6749 §2.3.1: both parts form-urlencoded) or `client_id` and
//! `client_secret` form fields. A confidential client must prove its secret; a public client
//! has none and must not send one. Every failure is the same 401 `invalid_client`, and an
//! unknown client costs the same hash as a known one.

use std::collections::HashMap;

use axum::http::{header, HeaderMap};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use super::error::{OAuthError, OAuthResult};
use super::secrets::{keyed_hash, same_hash, CLIENT_SECRET};
use crate::context::Core;
use crate::state::oauth2::Client;
use crate::state::read::OAuth2Reads;

/// The client credentials a request presents.
pub struct Presented {
    pub client_id: String,
    pub secret: Option<String>,
}

fn form_decode(s: &str) -> Option<String> {
    let plus = s.replace('+', " ");
    percent_encoding::percent_decode_str(&plus).decode_utf8().ok().map(|c| c.into_owned())
}

/// The credentials of the request: Basic first, then the form.
pub fn presented(headers: &HeaderMap, form: &HashMap<String, String>) -> OAuthResult<Presented> {
    if let Some(v) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        if let Some(b64) = v.strip_prefix("Basic ").or_else(|| v.strip_prefix("basic ")) {
            let raw =
                STANDARD.decode(b64.trim()).map_err(|_| OAuthError::invalid_client("Malformed Basic credentials."))?;
            let text =
                String::from_utf8(raw).map_err(|_| OAuthError::invalid_client("Malformed Basic credentials."))?;
            let (id, secret) =
                text.split_once(':').ok_or_else(|| OAuthError::invalid_client("Malformed Basic credentials."))?;
            let id = form_decode(id).ok_or_else(|| OAuthError::invalid_client("Malformed Basic credentials."))?;
            let secret =
                form_decode(secret).ok_or_else(|| OAuthError::invalid_client("Malformed Basic credentials."))?;
            if form.get("client_id").is_some_and(|f| *f != id) {
                return Err(OAuthError::invalid_request("client_id differs from the Basic credentials."));
            }
            return Ok(Presented { client_id: id, secret: Some(secret) });
        }
    }
    let id = form
        .get("client_id")
        .filter(|s| !s.is_empty())
        .ok_or_else(|| OAuthError::invalid_client("Client authentication is required."))?;
    Ok(Presented { client_id: id.clone(), secret: form.get("client_secret").filter(|s| !s.is_empty()).cloned() })
}

/// A client of `domain_id` by id.
pub fn load(node: &Core, domain_id: &str, client_id: &str) -> OAuthResult<Option<Client>> {
    if client_id.len() > 255 {
        return Ok(None);
    }
    Ok(node.engine.read().oauth2_client(domain_id, client_id)?)
}

/// The authenticated, enabled client of `domain_id` the request presents.
pub fn authenticate(
    node: &Core,
    domain_id: &str,
    headers: &HeaderMap,
    form: &HashMap<String, String>,
) -> OAuthResult<Client> {
    let p = presented(headers, form)?;
    let client = load(node, domain_id, &p.client_id)?;
    let hash = keyed_hash(node, CLIENT_SECRET, p.secret.as_deref().unwrap_or(""))?;
    let fail = || OAuthError::invalid_client("Client authentication failed.");
    let Some(client) = client else { return Err(fail()) };
    if !client.enabled {
        return Err(fail());
    }
    match (&client.secret_hash, &p.secret) {
        (Some(stored), Some(_)) if client.confidential && same_hash(stored, &hash) => Ok(client),
        (_, None) if !client.confidential => Ok(client),
        _ => Err(fail()),
    }
}
