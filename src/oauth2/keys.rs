//! A domain's signing keys as the node uses them: created through raft the first time the
//! domain needs them (any node may be first; apply keeps the first set), parsed once per
//! state version, and rotated online (the staged key, published in `/jwks` since it was
//! made, starts signing; the old primary stays published until its tokens have expired).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, Header, Validation};
use serde::Serialize;
use serde_json::{json, Value};

use super::error::{OAuthError, OAuthResult};
use super::provider::Provider;
use crate::clock::now_secs;
use crate::context::Core;
use crate::state::oauth2::{OAuth2Command, SigningKey, SigningKeyState, SigningKeys};
use crate::state::read::OAuth2Reads;
use crate::state::Reader;

/// Verified tokens remembered per key set (see `DomainKeys::verify`); at this many the
/// memory is cleared and starts again. An entry (the token and its parsed claims) is about
/// 3 KiB: 4,096 of them held 13 MiB after the bench's 20,000-token introspection run, which
/// missed the memory anyway (it cycles through more tokens than any such bound).
const VERIFIED_CAPACITY: usize = 1024;

/// The primary key, ready to sign: the P-256 key parsed once per key set (parsing PKCS#8
/// derives and checks the public key, two scalar multiplications: twice the cost of the
/// signature itself when `jsonwebtoken::encode` did it per token), and the encoded JOSE header.
struct Signer {
    kid: String,
    /// None when the stored key does not parse: signing fails, as it did per token before.
    key: Option<idnode_keys::Es256Signer>,
    /// base64url of the header `jsonwebtoken` writes for ES256 and this kid.
    header_b64: String,
}

/// A domain's key set, parsed: the signer and every published verifier.
pub struct DomainKeys {
    pub set: SigningKeys,
    signer: Option<Signer>,
    verifiers: Vec<(String, DecodingKey)>,
    /// Tokens whose signature and claims `verify` accepted, with their `exp`: the signature
    /// check (an ES256 verification, most of an introspection's cost) is a pure function of the
    /// token and this key set, so a token seen again only needs its expiry checked again.
    verified: Mutex<HashMap<String, (u64, Value)>>,
}

fn internal(msg: String) -> OAuthError {
    OAuthError::from(crate::http::ApiError::internal(msg))
}

impl DomainKeys {
    fn build(set: SigningKeys) -> OAuthResult<Self> {
        let signer = match set.primary() {
            Some(k) => {
                let mut header = Header::new(Algorithm::ES256);
                header.kid = Some(k.kid.clone());
                let json = serde_json::to_vec(&header).map_err(|e| internal(format!("JOSE header: {e}")))?;
                Some(Signer {
                    kid: k.kid.clone(),
                    key: idnode_keys::Es256Signer::from_pkcs8(&k.pkcs8).ok(),
                    header_b64: URL_SAFE_NO_PAD.encode(json),
                })
            }
            None => None,
        };
        let mut verifiers = Vec::new();
        for k in &set.keys {
            let key = DecodingKey::from_ec_components(&k.x, &k.y)
                .map_err(|e| internal(format!("signing key {}: {e}", k.kid)))?;
            verifiers.push((k.kid.clone(), key));
        }
        Ok(DomainKeys { set, signer, verifiers, verified: Mutex::new(HashMap::new()) })
    }

    /// Signs `claims` as an ES256 JWT with the primary key: the same token, byte for byte, as
    /// `jsonwebtoken::encode` with this kid (deterministic RFC 6979 signatures; a test checks).
    pub fn sign<T: Serialize>(&self, claims: &T) -> OAuthResult<String> {
        let signer = self.signer.as_ref().ok_or_else(|| internal("no primary signing key".to_string()))?;
        let key = signer
            .key
            .as_ref()
            .ok_or_else(|| internal(format!("signing a token: the key {} does not parse", signer.kid)))?;
        let json = serde_json::to_vec(claims).map_err(|e| internal(format!("signing a token: {e}")))?;
        let mut token = String::with_capacity(signer.header_b64.len() + json.len() * 4 / 3 + 92);
        token.push_str(&signer.header_b64);
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(json, &mut token);
        let signature = key.sign(token.as_bytes()).map_err(|e| internal(format!("signing a token: {e}")))?;
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(signature, &mut token);
        Ok(token)
    }

    /// The claims of a JWT signed by one of this domain's published keys and not expired;
    /// None for anything else (callers answer without saying why). A token verified before by
    /// this key set is answered from memory, its expiry checked again as `jsonwebtoken` does.
    pub fn verify(&self, token: &str) -> Option<Value> {
        if token.len() > 8192 {
            return None;
        }
        if let Some((exp, claims)) = self.verified.lock().unwrap_or_else(|e| e.into_inner()).get(token) {
            // jsonwebtoken (leeway 0): expired when exp < now
            return (*exp >= jsonwebtoken::get_current_timestamp()).then(|| claims.clone());
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
        let claims = jsonwebtoken::decode::<Value>(token, key, &v).ok().map(|d| d.claims)?;
        // Only an integral exp is remembered (anything else is verified every time).
        if let Some(exp) = claims.get("exp").and_then(Value::as_u64) {
            let mut verified = self.verified.lock().unwrap_or_else(|e| e.into_inner());
            if verified.len() >= VERIFIED_CAPACITY {
                verified.clear();
            }
            verified.insert(token.to_string(), (exp, claims.clone()));
        }
        Some(claims)
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
fn note_epoch(provider: &Provider, set: &SigningKeys) {
    provider
        .metrics
        .key_epoch
        .get_or_create(&crate::http::metrics::labels(&[("domain_id", &set.domain_id)]))
        .set(set.epoch as i64);
}

/// The stored key set of a domain, parsed (cached per state version).
pub fn stored(node: &Core, provider: &Provider, domain_id: &str) -> OAuthResult<Option<Arc<DomainKeys>>> {
    let version = node.app.state_version();
    if let Some(k) = provider.keys.get(&domain_id.to_string(), version) {
        return Ok(Some(k));
    }
    let Some(set) = node.engine.read().oauth2_signing_keys(domain_id)? else {
        return Ok(None);
    };
    // The parsed set (and the tokens it verified) outlives writes that leave it unchanged:
    // only a different stored set is parsed again.
    let mut by_domain = provider.parsed_keys.lock().unwrap_or_else(|e| e.into_inner());
    let parsed = match by_domain.get(domain_id) {
        Some(p) if p.set == set => p.clone(),
        _ => {
            note_epoch(provider, &set);
            let p = Arc::new(DomainKeys::build(set)?);
            if by_domain.len() >= 1024 {
                by_domain.clear();
            }
            by_domain.insert(domain_id.to_string(), p.clone());
            p
        }
    };
    drop(by_domain);
    provider.keys.insert(domain_id.to_string(), parsed.clone(), version);
    Ok(Some(parsed))
}

/// The domain's keys, created through raft when it has none yet. 404 for an unknown or
/// disabled domain: it has no authorization server.
pub async fn for_domain(node: &Core, provider: &Provider, domain_id: &str) -> OAuthResult<Arc<DomainKeys>> {
    if !node.engine.read().domain(domain_id)?.is_some_and(|d| d.enabled) {
        return Err(OAuthError::not_found(format!("Could not find domain: {domain_id}.")));
    }
    if let Some(k) = stored(node, provider, domain_id)? {
        return Ok(k);
    }
    let at = now_secs();
    let cmd = OAuth2Command::InstallKeys {
        domain_id: domain_id.to_string(),
        primary: new_key(SigningKeyState::Primary, at)?,
        staged: new_key(SigningKeyState::Staged, at)?,
    };
    let set: SigningKeys = node.propose_as(cmd).await?;
    note_epoch(provider, &set);
    Ok(Arc::new(DomainKeys::build(set)?))
}

/// Promotes the staged key and stages a new one, answering once every reachable node signs
/// with the new primary. Refused (409) while the staged key is
/// younger than `[oauth2] key_publish_delay`: relying parties that cached `/jwks` before it
/// appeared would reject what it signs.
pub async fn rotate(node: &Core, provider: &Provider, domain_id: &str) -> OAuthResult<SigningKeys> {
    let current = for_domain(node, provider, domain_id).await?;
    let at = now_secs();
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
    let set: SigningKeys = super::propose::propose_everywhere(node, cmd).await?;
    note_epoch(provider, &set);
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_set() -> SigningKeys {
        let at = now_secs();
        SigningKeys {
            domain_id: "d".to_string(),
            epoch: 1,
            keys: vec![new_key(SigningKeyState::Primary, at).unwrap(), new_key(SigningKeyState::Staged, at).unwrap()],
        }
    }

    #[test]
    fn tokens_are_those_jsonwebtoken_signs_and_verify_the_same_from_memory() {
        let set = key_set();
        let primary = set.primary().unwrap().clone();
        let keys = DomainKeys::build(set).unwrap();
        let claims =
            json!({"iss": "https://x/v4/oauth2/d", "sub": "s", "iat": now_secs(), "exp": now_secs() + 60, "n": "é\"/"});
        let token = keys.sign(&claims).unwrap();
        // byte for byte what jsonwebtoken::encode makes (RFC 6979: deterministic)
        let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(primary.kid.clone());
        let reference =
            jsonwebtoken::encode(&header, &claims, &jsonwebtoken::EncodingKey::from_ec_der(&primary.pkcs8)).unwrap();
        assert_eq!(token, reference);
        assert_eq!(keys.verify(&token), Some(claims.clone()));
        assert_eq!(keys.verified.lock().unwrap().len(), 1);
        assert_eq!(keys.verify(&token), Some(claims), "answered from memory");
        // a changed signature is refused (and not remembered)
        let mut forged = token.clone();
        let last = forged.pop().unwrap();
        forged.push(if last == 'A' { 'B' } else { 'A' });
        assert_eq!(keys.verify(&forged), None);
        assert_eq!(keys.verified.lock().unwrap().len(), 1);
    }

    #[test]
    fn a_remembered_token_expires_as_jsonwebtoken_says() {
        let keys = DomainKeys::build(key_set()).unwrap();
        let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
        let now = jsonwebtoken::get_current_timestamp() as i64;
        let claims = json!({"iss": "i", "sub": "s", "iat": now, "exp": now});
        let token = keys.sign(&claims).unwrap();
        assert!(keys.verify(&token).is_some(), "exp == now is still valid");
        // pretend it was remembered long ago with an exp now past
        keys.verified.lock().unwrap().get_mut(&token).unwrap().0 = (now - 1) as u64;
        assert_eq!(keys.verify(&token), None);
        let expired = keys.sign(&json!({"iss": "i", "sub": "s", "iat": now, "exp": now - 1})).unwrap();
        assert_eq!(keys.verify(&expired), None);
    }
}
