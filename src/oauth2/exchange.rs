//! The token-exchange grant (RFC 8693): a live platform access token of the domain, exchanged
//! by a client of the domain for one narrowed to `platform-apis:<service_type>` audiences.
//! Each `audience` value is a platform service type as the spec writes it (`compute`); the
//! `platform-apis:compute` form of the token's `aud` is accepted too.
//! An exchange only narrows: the audiences stay within the subject token's, the token lives
//! no longer than it, the earlier actors stay nested under the new one (§4.1), and it names
//! the tokens it descends from, so revoking any of them (or their refresh family, `sid`,
//! which it keeps) ends it too.

use serde_json::{json, Value};

use super::error::{OAuthError, OAuthResult};
use super::form::OAuthForm;
use super::keys::DomainKeys;
use super::scopes::PLATFORM;
use super::tokens::{ancestors, EXCHANGED_FROM, PLATFORM_AUDIENCE};
use crate::clock::now_secs;
use crate::context::Core;
use crate::state::oauth2::Client;
use crate::state::read::CatalogReads;

/// How many exchanges may follow one another (each one lengthens the token).
const MAX_CHAIN: usize = 8;

/// Whether a subject token of audience `aud` may be narrowed to `requested`: a token for
/// every platform API to any of them, a narrowed one only to audiences it lists.
fn within(aud: Option<&Value>, requested: &str) -> bool {
    match aud {
        Some(Value::String(a)) => a == PLATFORM_AUDIENCE || a == requested,
        Some(Value::Array(list)) => {
            list.iter().any(|a| a.as_str().is_some_and(|a| a == PLATFORM_AUDIENCE || a == requested))
        }
        _ => false,
    }
}

/// The `aud` entry for one requested `audience`: a service type (`compute`, the spec's form)
/// or the same already prefixed (`platform-apis:compute`), when it names an enabled catalog
/// service; `None` otherwise.
fn narrowed_audience(requested: &str, types: &[String]) -> Option<String> {
    let service_type = requested.strip_prefix(PLATFORM_AUDIENCE).and_then(|t| t.strip_prefix(':')).unwrap_or(requested);
    types.iter().any(|t| t == service_type).then(|| format!("{PLATFORM_AUDIENCE}:{service_type}"))
}

pub fn exchange(node: &Core, keys: &DomainKeys, client: &Client, form: &OAuthForm) -> OAuthResult<Value> {
    let subject_token = form.require("subject_token")?;
    if let Some(t) = form.get("subject_token_type") {
        if t != "urn:ietf:params:oauth:token-type:access_token" && t != "urn:ietf:params:oauth:token-type:jwt" {
            return Err(OAuthError::invalid_request("subject_token_type must be an access token."));
        }
    }
    let claims = super::introspect::live_access_claims(node, keys, &client.domain_id, subject_token)?
        .ok_or_else(|| OAuthError::invalid_grant("The subject token is not an active access token of this domain."))?;
    if claims.get("platform_context").is_none() {
        return Err(OAuthError::invalid_grant("Only platform access tokens can be exchanged."));
    }
    let requested: Vec<&str> = form.all("audience").collect();
    if requested.is_empty() {
        return Err(OAuthError::invalid_request("The parameter audience is missing."));
    }
    let types: Vec<String> =
        node.engine.read().services()?.into_iter().filter(|s| s.enabled).map(|s| s.service_type).collect();
    let mut audiences: Vec<String> = Vec::with_capacity(requested.len());
    for r in requested {
        let Some(a) = narrowed_audience(r, &types) else {
            return Err(OAuthError::invalid_target(format!("{r} is not the service type of a catalog service.")));
        };
        if !within(claims.get("aud"), &a) {
            return Err(OAuthError::invalid_target(format!("The subject token's audience does not include {a}.")));
        }
        // `compute` and `platform-apis:compute` name one audience: it is listed once.
        if !audiences.contains(&a) {
            audiences.push(a);
        }
    }
    let Some(subject_jti) = claims.get("jti").and_then(Value::as_str).map(str::to_string) else {
        return Err(OAuthError::invalid_grant("The subject token has no id."));
    };
    let mut chain = ancestors(&claims).to_vec();
    if chain.len() >= MAX_CHAIN {
        return Err(OAuthError::invalid_grant("The subject token was exchanged too many times already."));
    }
    chain.push(json!(subject_jti));
    // The exchanged token keeps the subject, scope, context, refresh family (`sid`) and the
    // issue time its user's token cut-off is compared with; it lives no longer than the
    // subject token.
    let now = now_secs();
    let exp =
        claims.get("exp").and_then(Value::as_i64).unwrap_or(now).min(now + node.cfg.oauth2.access_token_lifetime_s);
    let mut actor = json!({"sub": client.client_id});
    if let Some(previous) = claims.get("act") {
        actor["act"] = previous.clone();
    }
    let issued_us = super::cutoff::token_issued_us(&claims);
    let mut c = claims;
    c[super::cutoff::ISSUED_US] = json!(issued_us);
    c["aud"] = json!(audiences);
    c["jti"] = json!(uuid::Uuid::new_v4().simple().to_string());
    c["iat"] = json!(now);
    c["nbf"] = json!(now);
    c["exp"] = json!(exp);
    c["client_id"] = json!(client.client_id);
    c["act"] = actor;
    c[EXCHANGED_FROM] = Value::Array(chain);
    let scope = c.get("scope").and_then(Value::as_str).unwrap_or(PLATFORM).to_string();
    let access_token = keys.sign(&c)?;
    Ok(json!({
        "access_token": access_token,
        "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
        "token_type": "Bearer",
        "expires_in": exp - now,
        "scope": scope,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audiences_only_narrow() {
        let all = json!("platform-apis");
        let one = json!(["platform-apis:compute"]);
        assert!(within(Some(&all), "platform-apis:image"));
        assert!(within(Some(&one), "platform-apis:compute"));
        assert!(!within(Some(&one), "platform-apis:image"));
        assert!(!within(Some(&json!("client-x")), "platform-apis:compute"));
        assert!(!within(None, "platform-apis:compute"));
    }

    #[test]
    fn an_audience_is_a_service_type_or_the_same_prefixed() {
        let types = vec!["compute".to_string(), "image".to_string()];
        assert_eq!(narrowed_audience("compute", &types).as_deref(), Some("platform-apis:compute"));
        assert_eq!(narrowed_audience("platform-apis:image", &types).as_deref(), Some("platform-apis:image"));
        for unknown in
            ["volumev3", "platform-apis:volumev3", "platform-apis", "platform-apis:", "", "platform-apiscompute"]
        {
            assert_eq!(narrowed_audience(unknown, &types), None, "{unknown:?}");
        }
    }
}
