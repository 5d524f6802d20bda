//! A domain's signing keys as the node uses them: created through raft the first time the
//! domain needs them (any node may be first; apply keeps the first set), parsed once per
//! state version, and rotated online (the staged key, published in `/jwks` since it was
//! made, starts signing; the old primary stays published until its tokens have expired).

use std::sync::Arc;

use axum::http::StatusCode;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::Serialize;
use serde_json::{json, Value};

use super::error::{OAuthError, OAuthResult};
use super::now;
use crate::node::Node;
use crate::state::oauth2::{keys, OAuth2Applied, OAuth2Command, SigningKey, SigningKeyState, SigningKeys};
use crate::state::{cf, Applied, Command, Reader};

/// A domain's key set, parsed: the signer and every published verifier.
pub struct DomainKeys {
    pub set: SigningKeys,
    signer: Option<(String, EncodingKey)>,
    verifiers: Vec<(String, DecodingKey)>,
}

impl DomainKeys {
    fn build(set: SigningKeys) -> OAuthResult<Self> {
        let signer = set.primary().map(|k| (k.kid.clone(), EncodingKey::from_ec_der(&k.pkcs8)));
        let mut verifiers = Vec::new();
        for k in &set.keys {
            let key = DecodingKey::from_ec_components(&k.x, &k.y).map_err(|e| {
                OAuthError::from(crate::http::ApiError::internal(format!("signing key {}: {e}", k.kid)))
            })?;
            verifiers.push((k.kid.clone(), key));
        }
        Ok(DomainKeys { set, signer, verifiers })
    }

    /// Signs `claims` as an ES256 JWT with the primary key.
    pub fn sign<T: Serialize>(&self, claims: &T) -> OAuthResult<String> {
        let (kid, key) = self
            .signer
            .as_ref()
            .ok_or_else(|| OAuthError::from(crate::http::ApiError::internal("no primary signing key")))?;
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(kid.clone());
        jsonwebtoken::encode(&header, claims, key)
            .map_err(|e| OAuthError::from(crate::http::ApiError::internal(format!("signing a token: {e}"))))
    }

    /// The claims of a JWT signed by one of this domain's published keys and not expired;
    /// None for anything else (callers answer without saying why).
    pub fn verify(&self, token: &str) -> Option<Value> {
        if token.len() > 8192 {
            return None;
        }
        let header = jsonwebtoken::decode_header(token).ok()?;
        if header.alg != Algorithm::ES256 {
            return None;
        }
        let kid = header.kid?;
        let (_, key) = self.verifiers.iter().find(|(k, _)| *k == kid)?;
        let mut v = Validation::new(Algorithm::ES256);
        v.leeway = 0;
        v.validate_aud = false;
        v.set_required_spec_claims(&["exp", "iat", "iss", "sub"]);
        jsonwebtoken::decode::<Value>(token, key, &v).ok().map(|d| d.claims)
    }

    /// The JWK Set of every published key (staged, primary and retired).
    pub fn jwks(&self) -> Value {
        let keys: Vec<Value> = self
            .set
            .keys
            .iter()
            .map(|k| json!({"kty": "EC", "crv": "P-256", "kid": k.kid, "use": "sig", "alg": "ES256", "x": k.x, "y": k.y}))
            .collect();
        json!({ "keys": keys })
    }
}

fn new_key(state: SigningKeyState, at: i64) -> OAuthResult<SigningKey> {
    let k = idnode_keys::generate_es256()
        .map_err(|e| OAuthError::from(crate::http::ApiError::internal(format!("generating a signing key: {e}"))))?;
    Ok(SigningKey {
        kid: idnode_keys::random_token(12),
        state,
        pkcs8: k.pkcs8.to_vec(),
        x: k.x,
        y: k.y,
        created_at: at,
        retire_at: None,
    })
}

/// Publishes the domain's key epoch (`idnode_oauth2_key_epoch`).
fn note_epoch(node: &Node, set: &SigningKeys) {
    node.oauth2
        .metrics
        .key_epoch
        .get_or_create(&crate::http::metrics::labels(&[("domain_id", &set.domain_id)]))
        .set(set.epoch as i64);
}

/// The stored key set of a domain, parsed (cached per state version).
pub fn stored(node: &Node, domain_id: &str) -> OAuthResult<Option<Arc<DomainKeys>>> {
    let version = node.app.state_version();
    if let Some(k) = node.oauth2.keys.get(&domain_id.to_string(), version) {
        return Ok(Some(k));
    }
    let Some(set) = Reader::get::<SigningKeys>(&node.engine.read(), cf::OAUTH2, &keys::signing_keys(domain_id))? else {
        return Ok(None);
    };
    note_epoch(node, &set);
    let parsed = Arc::new(DomainKeys::build(set)?);
    node.oauth2.keys.insert(domain_id.to_string(), parsed.clone(), version);
    Ok(Some(parsed))
}

/// The domain's keys, created through raft when it has none yet. 404 for an unknown or
/// disabled domain: it has no authorization server.
pub async fn for_domain(node: &Node, domain_id: &str) -> OAuthResult<Arc<DomainKeys>> {
    if !node.engine.read().domain(domain_id)?.is_some_and(|d| d.enabled) {
        return Err(OAuthError::not_found(format!("Could not find domain: {domain_id}.")));
    }
    if let Some(k) = stored(node, domain_id)? {
        return Ok(k);
    }
    let at = now();
    let cmd = OAuth2Command::InstallKeys {
        domain_id: domain_id.to_string(),
        primary: new_key(SigningKeyState::Primary, at)?,
        staged: new_key(SigningKeyState::Staged, at)?,
    };
    match node.propose(Command::OAuth2(cmd)).await? {
        Applied::OAuth2(OAuth2Applied::Keys(set)) => {
            note_epoch(node, &set);
            Ok(Arc::new(DomainKeys::build(set)?))
        }
        _ => Err(crate::http::ApiError::internal("unexpected outcome of a key install").into()),
    }
}

/// Promotes the staged key and stages a new one, answering once every reachable node signs
/// with the new primary. Refused (409) while the staged key is
/// younger than `[oauth2] key_publish_delay`: relying parties that cached `/jwks` before it
/// appeared would reject what it signs.
pub async fn rotate(node: &Node, domain_id: &str) -> OAuthResult<SigningKeys> {
    let current = for_domain(node, domain_id).await?;
    let at = now();
    let Some(staged) = current.set.staged() else {
        return Err(crate::http::ApiError::internal("the key set has no staged key").into());
    };
    let wait = staged.created_at + node.cfg.oauth2.key_publish_delay_s - at;
    if wait > 0 {
        return Err(OAuthError::new(
            StatusCode::CONFLICT,
            "invalid_request",
            format!("The staged key has been published for less than key_publish_delay; retry in {wait} s."),
        ));
    }
    let cmd = OAuth2Command::RotateKeys {
        domain_id: domain_id.to_string(),
        expected_staged: staged.kid.clone(),
        staged: new_key(SigningKeyState::Staged, at)?,
        // Every token the old primary signed has expired by then (a minute of clock skew).
        retire_at: at + node.cfg.oauth2.access_token_lifetime_s + 60,
        at,
    };
    match super::propose_everywhere(node, cmd).await? {
        Applied::OAuth2(OAuth2Applied::Keys(set)) => {
            note_epoch(node, &set);
            Ok(set)
        }
        _ => Err(crate::http::ApiError::internal("unexpected outcome of a key rotation").into()),
    }
}
