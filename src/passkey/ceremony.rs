//! The two WebAuthn ceremonies, on webauthn-rs: registration (a signed-in user adds a
//! passkey) and login (a user proves one). Each is started and finished through raft: the
//! start stores webauthn-rs's ceremony state under its challenge and answers once every
//! reachable node has it, so the finish may land on any node; the finish checks everything
//! it can before it writes, and apply checks again what could have changed meanwhile (the
//! ceremony still pending, the passkey still registered, the counter still moving forward).

use std::time::Duration;

use axum::http::StatusCode;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use sha2::{Digest, Sha256};
use webauthn_rs::prelude::{
    AttestationFormat, COSEAlgorithm, COSEEC2Key, COSEKey, COSEKeyType, CreationChallengeResponse, Credential,
    ECDSACurve, ParsedAttestation, Passkey, PasskeyAuthentication, PasskeyRegistration, PublicKeyCredential,
    RegisterPublicKeyCredential, RequestChallengeResponse, Uuid, Webauthn, WebauthnBuilder, WebauthnError,
};
use webauthn_rs_proto::{AuthenticatorTransport, RegisteredExtensions, UserVerificationPolicy};

use super::settings::PasskeySettings;
use super::wire::challenge_of;
use crate::context::Core;
use crate::http::error::{ApiError, ApiResult};
use crate::http::metrics::labels;
use crate::state::command::ApplyError;
use crate::state::model::User;
use crate::state::passkeys::{Ceremony, LoginProof, PasskeyCommand, Purpose, StoredPasskey, CLONED};
use crate::state::read::PasskeyReads;
use crate::state::{Command, Reader};

/// The relying party of this deployment, or why passkeys are off.
pub struct RelyingParty {
    webauthn: Result<Webauthn, String>,
    lifetime_s: i64,
    /// The public key of the decoy passkeys: a P-256 key whose private half was never kept.
    decoy_key: COSEKey,
}

impl RelyingParty {
    pub fn new(s: &PasskeySettings) -> anyhow::Result<Self> {
        let webauthn = match &s.party {
            Ok((rp_id, origin)) => Ok(WebauthnBuilder::new(rp_id, origin)
                .and_then(|b| {
                    b.rp_name(&s.rp_name).timeout(Duration::from_secs(s.ceremony_lifetime_s.unsigned_abs())).build()
                })
                .map_err(|e| anyhow::anyhow!("[passkey] rp_id {rp_id:?} with rp_origin {origin}: {e}"))?),
            Err(why) => Err(why.clone()),
        };
        let key = idnode_keys::generate_es256()?;
        let coordinate = |c: &str| URL_SAFE_NO_PAD.decode(c).map_err(|e| anyhow::anyhow!("decoy key: {e}"));
        let decoy_key = COSEKey {
            type_: COSEAlgorithm::ES256,
            key: COSEKeyType::EC_EC2(COSEEC2Key {
                curve: ECDSACurve::SECP256R1,
                x: coordinate(&key.x)?,
                y: coordinate(&key.y)?,
            }),
        };
        Ok(RelyingParty { webauthn, lifetime_s: s.ceremony_lifetime_s, decoy_key })
    }

    /// Why passkeys are off, if they are.
    pub fn disabled(&self) -> Option<&str> {
        self.webauthn.as_ref().err().map(String::as_str)
    }

    fn get(&self) -> ApiResult<&Webauthn> {
        self.webauthn.as_ref().map_err(|why| {
            ApiError::new(StatusCode::NOT_IMPLEMENTED, format!("Passkeys are not available on this deployment: {why}."))
        })
    }
}

/// The WebAuthn user handle of a user: its id as a UUID (ids are UUID hex), or a hash of it.
fn user_handle(user_id: &str) -> Uuid {
    Uuid::try_parse(user_id).unwrap_or_else(|_| {
        let digest = Sha256::digest(user_id.as_bytes());
        let mut b = [0u8; 16];
        b.copy_from_slice(&digest[..16]);
        Uuid::from_bytes(b)
    })
}

fn json<T: serde::Serialize>(v: &T) -> ApiResult<String> {
    serde_json::to_string(v).map_err(ApiError::internal)
}

/// The user's passkeys, in id order.
pub fn passkeys_of(node: &Core, user_id: &str) -> ApiResult<Vec<StoredPasskey>> {
    Ok(node.engine.read().passkeys_of_user(user_id)?)
}

/// Replicates a started ceremony and waits until the reachable members have it.
async fn begin(node: &Core, challenge: &[u8], ceremony: Ceremony) -> ApiResult<()> {
    let challenge = URL_SAFE_NO_PAD.encode(challenge);
    let cmd = Command::Passkeys(PasskeyCommand::Start { challenge, ceremony, at: crate::clock::now_secs() });
    let (index, _) = node.propose_at(cmd).await?;
    node.wait_cluster_applied(index).await;
    Ok(())
}

/// The pending ceremony `client_data_json` answers, if it is `purpose` and still on time.
fn pending(node: &Core, client_data_json: &[u8], purpose: Purpose) -> ApiResult<Option<(String, Ceremony)>> {
    let Some(challenge) = challenge_of(client_data_json) else { return Ok(None) };
    let ceremony: Option<Ceremony> = node.engine.read().passkey_ceremony(&challenge)?;
    Ok(ceremony.filter(|c| c.purpose == purpose && crate::clock::now_secs() < c.expires_at).map(|c| (challenge, c)))
}

pub async fn register_start(
    node: &Core,
    rp: &RelyingParty,
    user: &User,
    description: Option<String>,
) -> ApiResult<CreationChallengeResponse> {
    let webauthn = rp.get()?;
    let exclude = passkeys_of(node, &user.id)?
        .iter()
        .filter_map(|p| serde_json::from_str::<Passkey>(&p.credential).ok())
        .map(|p| p.cred_id().clone())
        .collect();
    let (ccr, state) = webauthn
        .start_passkey_registration(user_handle(&user.id), &user.name, &user.name, Some(exclude))
        .map_err(ApiError::internal)?;
    let ceremony = Ceremony {
        user_id: user.id.clone(),
        purpose: Purpose::Register,
        state: json(&state)?,
        decoy: false,
        description,
        expires_at: crate::clock::now_secs() + rp.lifetime_s,
    };
    begin(node, &ccr.public_key.challenge, ceremony).await?;
    Ok(ccr)
}

pub async fn register_finish(
    node: &Core,
    rp: &RelyingParty,
    user_id: &str,
    reg: &RegisterPublicKeyCredential,
) -> ApiResult<StoredPasskey> {
    let webauthn = rp.get()?;
    let expired = || ApiError::bad_request("The registration challenge is unknown, used or expired; start again.");
    let (challenge, ceremony) = pending(node, &reg.response.client_data_json, Purpose::Register)?
        .filter(|(_, c)| c.user_id == user_id)
        .ok_or_else(expired)?;
    let state: PasskeyRegistration = serde_json::from_str(&ceremony.state).map_err(ApiError::internal)?;
    let passkey = webauthn.finish_passkey_registration(reg, &state).map_err(|e| {
        tracing::info!(user_id, error = %e, "passkey registration refused");
        ApiError::bad_request(format!("The passkey could not be registered: {e}."))
    })?;
    // Registration asks for no attestation, so whatever certificate chain an authenticator
    // sends anyway was never verified: it is not kept (and every login's ceremony state, a
    // decoy's included, has the same shape).
    let mut cred = Credential::from(passkey);
    cred.attestation = ParsedAttestation::default();
    cred.attestation_format = AttestationFormat::None;
    let passkey = Passkey::from(cred.clone());
    let stored = StoredPasskey {
        id: Uuid::new_v4().simple().to_string(),
        user_id: user_id.to_string(),
        description: ceremony.description,
        credential_id: URL_SAFE_NO_PAD.encode(passkey.cred_id()),
        credential: json(&passkey)?,
        counter: cred.counter,
        backup_eligible: cred.backup_eligible,
        backup_state: cred.backup_state,
        created_at: crate::clock::now_secs(),
        last_used_at: None,
    };
    let cmd = PasskeyCommand::Register { challenge, passkey: Box::new(stored), at: crate::clock::now_secs() };
    node.propose_as(cmd).await
}

/// A challenge for `user_id`'s passkeys. An unknown or disabled user, or one without
/// passkeys, gets a decoy: a challenge for a passkey nobody holds, made the same way (a stored
/// passkey read, webauthn-rs's start, a replicated ceremony of the same size), so neither the
/// answer nor its timing tells who has passkeys. No answer finishes a decoy.
pub async fn login_start(node: &Core, rp: &RelyingParty, user_id: &str) -> ApiResult<RequestChallengeResponse> {
    let webauthn = rp.get()?;
    let enabled = node.engine.read().user(user_id)?.is_some_and(|u| u.enabled);
    // Read for every id, known or not, so each path does the same reads.
    let stored = passkeys_of(node, user_id)?;
    let passkeys: Vec<Passkey> = match enabled {
        true => stored.iter().filter_map(|p| serde_json::from_str(&p.credential).ok()).collect(),
        false => Vec::new(),
    };
    let decoy = passkeys.is_empty();
    let passkeys = if decoy { vec![decoy_passkey(node, rp, user_id)?] } else { passkeys };
    let (rcr, state) = webauthn.start_passkey_authentication(&passkeys).map_err(ApiError::internal)?;
    let ceremony = Ceremony {
        user_id: user_id.to_string(),
        purpose: Purpose::Login,
        state: json(&state)?,
        decoy,
        description: None,
        expires_at: crate::clock::now_secs() + rp.lifetime_s,
    };
    begin(node, &rcr.public_key.challenge, ceremony).await?;
    Ok(rcr)
}

/// The decoy passkey of a user id: a 32-byte credential id that stays the same for the id (a
/// keyed hash, so asking twice does not give it away), a platform passkey's flags, and the
/// decoy key. Read back from JSON, as a stored passkey is.
fn decoy_passkey(node: &Core, rp: &RelyingParty, user_id: &str) -> ApiResult<Passkey> {
    let hasher = node.engine.read().index_hasher()?.ok_or_else(|| ApiError::unavailable("Not bootstrapped yet."))?;
    let credential = Credential {
        cred_id: hasher.hash(b"passkey-decoy-credential", user_id.as_bytes()).to_vec(),
        cred: rp.decoy_key.clone(),
        counter: 0,
        transports: Some(vec![AuthenticatorTransport::Internal]),
        user_verified: true,
        backup_eligible: false,
        backup_state: false,
        registration_policy: UserVerificationPolicy::Required,
        extensions: RegisteredExtensions::none(),
        attestation: ParsedAttestation::default(),
        attestation_format: AttestationFormat::None,
    };
    serde_json::from_str(&json(&Passkey::from(credential))?).map_err(ApiError::internal)
}

/// Why a login was refused: logged, counted, and answered with the same 401 whatever it was.
fn refused(node: &Core, user_id: &str, why: &str) -> ApiError {
    tracing::info!(user_id, reason = why, "passkey login refused");
    node.metrics.auth_attempts.get_or_create(&labels(&[("method", "passkey"), ("result", "failure")])).inc();
    ApiError::unauthenticated()
}

fn cloned(node: &Core, user_id: &str, passkey: &str) -> ApiError {
    tracing::warn!(
        user_id,
        passkey_id = passkey,
        "passkey login refused: the signature counter did not move forward, so the authenticator may have been cloned"
    );
    refused(node, user_id, CLONED)
}

/// Verifies a login's assertion and records it; the user it proves.
pub async fn login_finish(
    node: &Core,
    rp: &RelyingParty,
    user_id: Option<&str>,
    cred: &PublicKeyCredential,
) -> ApiResult<User> {
    let webauthn = rp.get()?;
    node.ensure_fresh().await?;
    let claimed = user_id.unwrap_or_default();
    let Some((challenge, ceremony)) = pending(node, &cred.response.client_data_json, Purpose::Login)? else {
        return Err(refused(node, claimed, "the challenge is unknown, used or expired"));
    };
    let user_id = user_id.unwrap_or(&ceremony.user_id).to_string();
    if ceremony.user_id != user_id {
        return Err(refused(node, &user_id, "the challenge was issued for another user"));
    }
    if ceremony.decoy {
        return Err(refused(node, &user_id, "the challenge was a decoy"));
    }
    let read = node.engine.read();
    let Some(user) = read.user(&user_id)?.filter(|u| u.enabled) else {
        return Err(refused(node, &user_id, "the user is unknown or disabled"));
    };
    if !read.domain(&user.domain_id)?.is_some_and(|d| d.enabled) {
        return Err(refused(node, &user_id, "the user's domain is disabled"));
    }
    let state: PasskeyAuthentication = serde_json::from_str(&ceremony.state).map_err(ApiError::internal)?;
    let result = webauthn.finish_passkey_authentication(cred, &state).map_err(|e| match e {
        WebauthnError::CredentialPossibleCompromise => cloned(node, &user_id, &URL_SAFE_NO_PAD.encode(&cred.raw_id)),
        e => refused(node, &user_id, &e.to_string()),
    })?;
    let credential_id = URL_SAFE_NO_PAD.encode(result.cred_id());
    let owner: Option<String> = read.passkey_owner(&credential_id)?;
    let Some((_, passkey_id)) = owner.as_deref().and_then(|o| o.split_once('/')).filter(|(u, _)| *u == user_id) else {
        return Err(refused(node, &user_id, "the passkey is not registered"));
    };
    let Some(stored) = read.passkey(&user_id, passkey_id)? else {
        return Err(refused(node, &user_id, "the passkey is not registered"));
    };
    drop(read);
    let mut passkey: Passkey = serde_json::from_str(&stored.credential).map_err(ApiError::internal)?;
    passkey.update_credential(&result);
    let proof = LoginProof {
        passkey_id: stored.id.clone(),
        counter: result.counter(),
        backup_eligible: result.backup_eligible(),
        backup_state: result.backup_state(),
        credential: json(&passkey)?,
    };
    let cmd = PasskeyCommand::Login { challenge, user_id: user_id.clone(), proof, at: crate::clock::now_secs() };
    match node.propose_outcome::<StoredPasskey>(cmd).await?.1 {
        Ok(_) => {
            node.metrics.auth_attempts.get_or_create(&labels(&[("method", "passkey"), ("result", "success")])).inc();
            Ok(user)
        }
        Err(ApplyError::Invalid(m)) if m == CLONED => Err(cloned(node, &user_id, &stored.id)),
        Err(e) => Err(refused(node, &user_id, &e.to_string())),
    }
}
