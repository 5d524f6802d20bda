//! The tokens the provider mints (ES256 JWTs under the domain's primary key) and the
//! refresh-token format. Token kinds (spec "Token kinds"):
//! - `id_token`: identity only, `aud` = the client id, never roles or platform scope;
//! - a platform access token (`platform:api` granted, every client_credentials grant):
//!   `platform_context` (scope and effective roles at issuance), `aud` = `platform-apis`, or
//!   the `platform-apis:<service_type>` list a token exchange narrowed it to;
//! - a minimal access token: `aud` = the client id, good for userinfo and revocation only.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::error::OAuthResult;
use super::keys::DomainKeys;
use super::scopes::{self, PLATFORM};
use crate::context::Core;
use crate::state::model::User;
use crate::state::oauth2::Client;

/// The audience of platform access tokens.
pub const PLATFORM_AUDIENCE: &str = "platform-apis";

/// The claim listing the ids of the tokens an exchanged token descends from, nearest last.
pub const EXCHANGED_FROM: &str = "exchanged_from";

/// The ids of the tokens `claims`' token was exchanged from (empty for a minted one).
pub fn ancestors(claims: &Value) -> &[Value] {
    claims.get(EXCHANGED_FROM).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

/// The principal a token speaks for.
pub enum Subject<'a> {
    /// A user (authorization code, device code, refresh).
    User { user: &'a User, auth_time: i64 },
    /// The client itself (client_credentials).
    Client,
}

/// What one grant mints.
pub struct Minted {
    pub access_token: String,
    pub jti: String,
    pub exp: i64,
    pub id_token: Option<String>,
}

fn new_jti() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

/// `${user.id}` and the other template variables, replaced by the user's values (missing
/// values as empty strings).
pub fn render_template(template: &str, user: &User) -> String {
    let email = user_email(user).unwrap_or_default();
    template
        .replace("${user.id}", &user.id)
        .replace("${user.name}", &user.name)
        .replace("${user.email}", &email)
        .replace("${user.domain_id}", &user.domain_id)
}

/// The user's `email` attribute (as `openstack user create --email` sets it).
pub fn user_email(user: &User) -> Option<String> {
    let extra: Value = serde_json::from_str(&user.extra).ok()?;
    extra.get("email").and_then(Value::as_str).filter(|e| !e.is_empty()).map(str::to_string)
}

/// The platform context of a client principal: its domain, with the roles that the mapping
/// ruleset of (domain_id, provider_id) grants it (none until a ruleset maps the client).
fn client_platform_context(client: &Client) -> Value {
    json!({
        "user_id": client.client_id,
        "user_name": client.name,
        "user_domain_id": client.domain_id,
        "scope_type": "domain",
        "domain_id": client.domain_id,
        "scope_roles": [],
        "roles": [],
    })
}

/// Mints an access token (and an id token when `openid` is granted to a user), signed by the
/// domain's primary key. `audience`: the narrowed platform audiences of a token exchange.
#[allow(clippy::too_many_arguments)]
pub fn mint(
    node: &Core,
    keys: &DomainKeys,
    issuer: &str,
    client: &Client,
    subject: &Subject<'_>,
    granted: &[String],
    nonce: Option<&str>,
    family_id: Option<&str>,
    audience: Option<&[String]>,
) -> OAuthResult<Minted> {
    let now_us = crate::clock::now_micros();
    let now = now_us / 1_000_000;
    let exp = now + node.cfg.oauth2.access_token_lifetime_s;
    let jti = new_jti();
    let (sub, seen_us) = match subject {
        Subject::User { user, .. } => (user.id.clone(), Some(user.tokens_valid_after)),
        Subject::Client => (client.client_id.clone(), None),
    };
    let platform = matches!(subject, Subject::Client) || scopes::has(granted, PLATFORM);
    let mut claims = Map::new();
    claims.insert("iss".into(), json!(issuer));
    claims.insert("sub".into(), json!(sub));
    claims.insert("client_id".into(), json!(client.client_id));
    claims.insert("exp".into(), json!(exp));
    claims.insert("iat".into(), json!(now));
    claims.insert("nbf".into(), json!(now));
    claims.insert("jti".into(), json!(jti));
    claims.insert(super::cutoff::ISSUED_US.into(), json!(now_us));
    if let Some(seen) = seen_us {
        claims.insert(super::cutoff::SEEN_US.into(), json!(seen));
    }
    claims.insert("scope".into(), json!(granted.join(" ")));
    claims.insert("token_use".into(), json!("access"));
    if let Some(f) = family_id {
        claims.insert("sid".into(), json!(f));
    }
    if platform {
        let aud = match audience {
            Some(list) => json!(list),
            None => json!(PLATFORM_AUDIENCE),
        };
        claims.insert("aud".into(), aud);
        claims.insert("amr".into(), json!([if matches!(subject, Subject::Client) { "client_secret" } else { "pwd" }]));
        claims.insert("delegation_context".into(), json!({"auth_method": "plain"}));
        let context = match subject {
            Subject::Client => client_platform_context(client),
            Subject::User { user, .. } => json!({
                "user_id": user.id, "user_name": user.name, "user_domain_id": user.domain_id,
                "scope_type": "unscoped", "scope_roles": [], "roles": [],
            }),
        };
        claims.insert("platform_context".into(), context);
    } else {
        claims.insert("aud".into(), json!(client.client_id));
    }
    let access_token = keys.sign(&Value::Object(claims))?;
    let id_token = match subject {
        Subject::User { user, auth_time } if scopes::has(granted, scopes::OPENID) => {
            let mut id = Map::new();
            id.insert("iss".into(), json!(issuer));
            id.insert("sub".into(), json!(user.id));
            id.insert("aud".into(), json!(client.client_id));
            id.insert("azp".into(), json!(client.client_id));
            id.insert("exp".into(), json!(exp));
            id.insert("iat".into(), json!(now));
            id.insert("nbf".into(), json!(now));
            id.insert("auth_time".into(), json!(auth_time));
            id.insert("nonce".into(), json!(nonce));
            id.insert("amr".into(), json!(["pwd"]));
            id.insert("at_hash".into(), json!(at_hash(&access_token)));
            id.insert("token_use".into(), json!("id"));
            for (claim, template) in &client.claims_template {
                id.insert(claim.clone(), json!(render_template(template, user)));
            }
            Some(keys.sign(&Value::Object(id))?)
        }
        _ => None,
    };
    Ok(Minted { access_token, jti, exp, id_token })
}

/// OIDC Core §3.1.3.6: base64url of the left half of SHA-256 of the access token.
fn at_hash(access_token: &str) -> String {
    let digest = Sha256::digest(access_token.as_bytes());
    URL_SAFE_NO_PAD.encode(&digest[..16])
}

/// A refresh token: `{family id}.{secret}`; only the secret's keyed hash is stored.
pub fn refresh_token(family_id: &str, secret: &str) -> String {
    format!("{family_id}.{secret}")
}

/// The family id and secret of a presented refresh token.
pub fn split_refresh(token: &str) -> Option<(&str, &str)> {
    let (family, secret) = token.split_once('.')?;
    let ok = !family.is_empty()
        && family.len() <= 64
        && family.bytes().all(|b| b.is_ascii_alphanumeric())
        && !secret.is_empty()
        && secret.len() <= 128;
    ok.then_some((family, secret))
}

/// The token response (RFC 6749 §5.1).
pub fn response(node: &Core, minted: &Minted, granted: &[String], refresh: Option<String>) -> Value {
    let mut out = json!({
        "access_token": minted.access_token,
        "token_type": "Bearer",
        "expires_in": node.cfg.oauth2.access_token_lifetime_s,
        "scope": granted.join(" "),
    });
    if let Some(id) = &minted.id_token {
        out["id_token"] = json!(id);
    }
    if let Some(r) = refresh {
        out["refresh_token"] = json!(r);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_tokens_split_only_when_well_formed() {
        assert_eq!(split_refresh("abc123.sec-ret_x"), Some(("abc123", "sec-ret_x")));
        assert_eq!(split_refresh("abc"), None);
        assert_eq!(split_refresh(".x"), None);
        assert_eq!(split_refresh("a-b.x"), None);
        assert_eq!(split_refresh("a."), None);
    }

    #[test]
    fn at_hash_is_the_left_half_of_sha256() {
        assert_eq!(at_hash("token").len(), 22);
    }
}
