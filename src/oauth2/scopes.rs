//! Scope rules of the spec: `openid`, `profile`, `email` are identity scopes; `platform:api`
//! is explicit, never implied when `scope` is omitted, and refused on the code and device
//! grants; a scope outside the client's `allowed_scopes` is refused, never narrowed.

use super::error::{OAuthError, OAuthResult};
use crate::state::oauth2::Client;

pub const OPENID: &str = "openid";
pub const PLATFORM: &str = "platform:api";
/// Every scope a client may register.
pub const KNOWN: &[&str] = &[OPENID, "profile", "email", PLATFORM];

/// The grant types a client may register (the device grant also under its short name).
pub const AUTHORIZATION_CODE: &str = "authorization_code";
pub const CLIENT_CREDENTIALS: &str = "client_credentials";
pub const REFRESH_TOKEN: &str = "refresh_token";
pub const DEVICE_CODE: &str = "urn:ietf:params:oauth:grant-type:device_code";
pub const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
pub const GRANT_TYPES: &[&str] = &[AUTHORIZATION_CODE, CLIENT_CREDENTIALS, REFRESH_TOKEN, DEVICE_CODE, TOKEN_EXCHANGE];

/// The scopes a request is granted: the requested ones (space separated), each allowed for
/// the client, or without `scope` the client's allowed scopes minus `platform:api`.
/// `user_grant`: the code and device grants, which never carry `platform:api`.
pub fn granted(client: &Client, requested: Option<&str>, user_grant: bool) -> OAuthResult<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    match requested.map(str::trim).filter(|s| !s.is_empty()) {
        None => {
            for s in &client.allowed_scopes {
                if s != PLATFORM && !out.contains(s) {
                    out.push(s.clone());
                }
            }
        }
        Some(req) => {
            for s in req.split(' ').filter(|s| !s.is_empty()) {
                if user_grant && s == PLATFORM {
                    return Err(OAuthError::invalid_scope(
                        "platform:api cannot be requested with the authorization_code or device_code grant.",
                    ));
                }
                if !client.allowed_scopes.iter().any(|a| a == s) {
                    return Err(OAuthError::invalid_scope(format!("The scope {s} is not allowed for this client.")));
                }
                if !out.iter().any(|o| o == s) {
                    out.push(s.to_string());
                }
            }
        }
    }
    if user_grant {
        out.retain(|s| s != PLATFORM);
    }
    Ok(out)
}

pub fn has(scopes: &[String], s: &str) -> bool {
    scopes.iter().any(|x| x == s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(scopes: &[&str]) -> Client {
        Client {
            client_id: "c".into(),
            domain_id: "d".into(),
            name: "n".into(),
            description: None,
            provider_id: None,
            confidential: true,
            token_endpoint_auth_method: "client_secret_basic".into(),
            grant_types: vec![],
            redirect_uris: vec![],
            require_pkce: true,
            allowed_scopes: scopes.iter().map(|s| s.to_string()).collect(),
            claims_template: Default::default(),
            pre_authorized: false,
            enabled: true,
            secret_hash: None,
            created_at: 0,
            updated_at: 0,
        }
    }

    #[test]
    fn omitted_scope_never_implies_platform() {
        let c = client(&["openid", "platform:api", "email"]);
        assert_eq!(granted(&c, None, false).unwrap(), vec!["openid", "email"]);
        assert_eq!(granted(&c, Some("  "), true).unwrap(), vec!["openid", "email"]);
    }

    #[test]
    fn platform_refused_on_user_grants_and_unknown_scopes_refused_not_narrowed() {
        let c = client(&["openid", "platform:api"]);
        assert_eq!(granted(&c, Some("openid platform:api"), true).unwrap_err().error, "invalid_scope");
        assert_eq!(granted(&c, Some("platform:api"), false).unwrap(), vec!["platform:api"]);
        assert_eq!(granted(&c, Some("openid email"), false).unwrap_err().error, "invalid_scope");
        assert_eq!(granted(&c, Some("openid openid"), false).unwrap(), vec!["openid"]);
    }
}
