//! Request and response bodies of the passkey endpoints. The finish bodies accept two
//! spellings of the same credential: upstream Keystone-NG's snake_case one (api-shapes §9:
//! `raw_id`, `type_`, `client_data_json`) and the browser's `PublicKeyCredential.toJSON()`
//! (`rawId`, `type`, `clientDataJSON`), so a page can post what the browser gives it. Binary
//! fields are base64url (padding and the standard alphabet are tolerated). Other members
//! (`extensions`, `clientExtensionResults`, `authenticatorAttachment`, the browser's copies of
//! the public key) are accepted and ignored: no extension is requested.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use webauthn_rs::prelude::{
    CreationChallengeResponse, PublicKeyCredential, RegisterPublicKeyCredential, RequestChallengeResponse,
};
use webauthn_rs_proto::{
    AuthenticatorAssertionResponseRaw, AuthenticatorAttestationResponseRaw, AuthenticatorTransport,
    UserVerificationPolicy,
};

use crate::http::body::Sent;
use crate::http::error::{ApiError, ApiResult};
use crate::state::passkeys::MAX_DESCRIPTION;

/// `POST /v4/auth/passkey/start`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct StartRequest {
    pub passkey: StartUser,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct StartUser {
    /// The user signing in.
    pub user_id: String,
}

/// `POST /v4/users/{user_id}/passkeys/register_start` (the body may be left out).
#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct RegisterStartRequest {
    #[serde(default)]
    pub passkey: Option<RegisterStartPasskey>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
pub struct RegisterStartPasskey {
    /// A note for the owner ("laptop", "phone"); at most 255 characters.
    pub description: Option<String>,
}

/// `PATCH /v4/users/{user_id}/passkeys/{passkey_id}`: `{"passkey": {"description": "…"}}`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdateRequest {
    #[serde(default)]
    #[schema(value_type = UpdatePasskey, required = true)]
    pub passkey: Sent<UpdatePasskey>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct UpdatePasskey {
    /// The new name: 1 to 255 characters once leading and trailing white space is trimmed.
    #[serde(default)]
    #[schema(value_type = String, required = true)]
    pub description: Sent<String>,
}

impl UpdateRequest {
    /// The trimmed new description, or a Keystone-style 400 naming the field.
    pub fn description(self) -> ApiResult<String> {
        let invalid = |why: &str| ApiError::bad_request(format!("Invalid input for field 'description': {why}."));
        let sent = self.passkey.envelope("passkey")?.description;
        let text = match sent {
            Sent::Is(d) => d,
            Sent::Absent => return Err(ApiError::bad_request("'description' is a required property.")),
            Sent::Null | Sent::Wrong(_) => return Err(invalid("must be a string")),
        };
        let text = text.trim();
        if text.is_empty() {
            return Err(invalid("must not be empty"));
        }
        if text.chars().count() > MAX_DESCRIPTION {
            return Err(invalid(&format!("is too long (at most {MAX_DESCRIPTION} characters)")));
        }
        Ok(text.to_string())
    }
}

/// A login challenge: upstream's shape (`public_key`), and the same options as WebAuthn JSON
/// (`publicKey`), which a page hands to `PublicKeyCredential.parseRequestOptionsFromJSON`.
#[derive(Debug, Serialize, ToSchema)]
pub struct LoginChallenge {
    pub public_key: RequestOptions,
    #[serde(rename = "publicKey")]
    #[schema(value_type = Object)]
    pub web: Value,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RequestOptions {
    /// base64url.
    pub challenge: String,
    pub rp_id: String,
    /// Milliseconds.
    pub timeout: Option<u32>,
    /// `Required`, `Preferred` or `DiscouragedDoNotUse`.
    pub user_verification: String,
    pub allow_credentials: Vec<AllowCredential>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AllowCredential {
    /// base64url credential id.
    pub id: String,
    pub type_: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transports: Option<Vec<String>>,
}

impl LoginChallenge {
    pub fn of(rcr: &RequestChallengeResponse) -> ApiResult<Self> {
        let o = &rcr.public_key;
        let public_key = RequestOptions {
            challenge: URL_SAFE_NO_PAD.encode(&o.challenge),
            rp_id: o.rp_id.clone(),
            timeout: o.timeout,
            user_verification: match o.user_verification {
                UserVerificationPolicy::Required => "Required",
                UserVerificationPolicy::Preferred => "Preferred",
                UserVerificationPolicy::Discouraged_DO_NOT_USE => "DiscouragedDoNotUse",
            }
            .to_string(),
            allow_credentials: o
                .allow_credentials
                .iter()
                .map(|c| AllowCredential {
                    id: URL_SAFE_NO_PAD.encode(&c.id),
                    type_: c.type_.clone(),
                    // Upstream spells transports as the Rust variants (`Usb`, `Internal`).
                    transports: c.transports.as_ref().map(|t| t.iter().map(|t| format!("{t:?}")).collect()),
                })
                .collect(),
        };
        let web = serde_json::to_value(&rcr.public_key).map_err(ApiError::internal)?;
        Ok(LoginChallenge { public_key, web })
    }
}

/// A registration challenge: the WebAuthn JSON options (`publicKey`, for
/// `PublicKeyCredential.parseCreationOptionsFromJSON`) and the same with upstream's
/// snake_case keys (`public_key`).
#[derive(Debug, Serialize, ToSchema)]
pub struct RegisterChallenge {
    #[schema(value_type = Object)]
    pub public_key: Value,
    #[serde(rename = "publicKey")]
    #[schema(value_type = Object)]
    pub web: Value,
}

impl RegisterChallenge {
    pub fn of(ccr: &CreationChallengeResponse) -> ApiResult<Self> {
        let web = serde_json::to_value(&ccr.public_key).map_err(ApiError::internal)?;
        Ok(RegisterChallenge { public_key: snake_keys(&web), web })
    }
}

/// `pubKeyCredParams` -> `pub_key_cred_params`, `type` -> `type_`, all the way down.
fn snake_keys(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let key = if k == "type" {
                        "type_".to_string()
                    } else {
                        k.chars().fold(String::new(), |mut s, c| {
                            if c.is_ascii_uppercase() {
                                s.push('_');
                            }
                            s.push(c.to_ascii_lowercase());
                            s
                        })
                    };
                    (key, snake_keys(v))
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(snake_keys).collect()),
        other => other.clone(),
    }
}

/// `POST /v4/auth/passkey/finish`: the signed assertion.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AssertionBody {
    /// The user signing in (upstream's body has it); when left out, the user the challenge
    /// was issued for.
    #[serde(default)]
    pub user_id: Option<String>,
    pub id: String,
    #[serde(alias = "rawId")]
    pub raw_id: String,
    #[serde(rename = "type_", alias = "type")]
    pub type_: String,
    pub response: AssertionResponse,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct AssertionResponse {
    #[serde(alias = "authenticatorData")]
    pub authenticator_data: String,
    #[serde(alias = "clientDataJSON")]
    pub client_data_json: String,
    pub signature: String,
    #[serde(default, alias = "userHandle")]
    pub user_handle: Option<String>,
}

/// `POST /v4/users/{user_id}/passkeys/register_finish`: the new credential.
#[derive(Debug, Deserialize, ToSchema)]
pub struct AttestationBody {
    pub id: String,
    #[serde(alias = "rawId")]
    pub raw_id: String,
    #[serde(rename = "type_", alias = "type")]
    pub type_: String,
    pub response: AttestationResponse,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct AttestationResponse {
    #[serde(alias = "attestationObject")]
    pub attestation_object: String,
    #[serde(alias = "clientDataJSON")]
    pub client_data_json: String,
    /// `usb`, `nfc`, `ble`, `internal`, `hybrid` (any case).
    #[serde(default)]
    pub transports: Option<Vec<String>>,
}

/// Decodes base64url, tolerating padding and the standard alphabet.
pub fn bytes(field: &str, v: &str) -> ApiResult<Vec<u8>> {
    let clean: String = v
        .trim_end_matches('=')
        .chars()
        .map(|c| match c {
            '+' => '-',
            '/' => '_',
            c => c,
        })
        .collect();
    URL_SAFE_NO_PAD
        .decode(clean)
        .map_err(|_| ApiError::bad_request(format!("Invalid input for field '{field}': not base64url.")))
}

fn check_type(type_: &str) -> ApiResult<()> {
    if type_ != "public-key" {
        return Err(ApiError::bad_request("Invalid input for field 'type': must be \"public-key\"."));
    }
    Ok(())
}

impl AssertionBody {
    pub fn credential(&self) -> ApiResult<PublicKeyCredential> {
        check_type(&self.type_)?;
        let r = &self.response;
        Ok(PublicKeyCredential {
            id: self.id.clone(),
            raw_id: bytes("raw_id", &self.raw_id)?,
            response: AuthenticatorAssertionResponseRaw {
                authenticator_data: bytes("response.authenticator_data", &r.authenticator_data)?,
                client_data_json: bytes("response.client_data_json", &r.client_data_json)?,
                signature: bytes("response.signature", &r.signature)?,
                user_handle: r.user_handle.as_deref().map(|h| bytes("response.user_handle", h)).transpose()?,
            },
            extensions: Default::default(),
            type_: self.type_.clone(),
        })
    }
}

impl AttestationBody {
    pub fn credential(&self) -> ApiResult<RegisterPublicKeyCredential> {
        check_type(&self.type_)?;
        let r = &self.response;
        let transports = r.transports.as_ref().map(|t| {
            t.iter()
                .map(|s| s.to_lowercase().parse::<AuthenticatorTransport>().unwrap_or(AuthenticatorTransport::Unknown))
                .collect()
        });
        Ok(RegisterPublicKeyCredential {
            id: self.id.clone(),
            raw_id: bytes("raw_id", &self.raw_id)?,
            response: AuthenticatorAttestationResponseRaw {
                attestation_object: bytes("response.attestation_object", &r.attestation_object)?,
                client_data_json: bytes("response.client_data_json", &r.client_data_json)?,
                transports,
            },
            type_: self.type_.clone(),
            extensions: Default::default(),
        })
    }
}

/// One passkey as listed (never its public key or counter internals beyond the counter).
#[derive(Debug, Serialize, ToSchema)]
pub struct PasskeyView {
    pub id: String,
    pub user_id: String,
    pub description: Option<String>,
    /// base64url.
    pub credential_id: String,
    pub sign_count: u32,
    pub backup_eligible: bool,
    pub backup_state: bool,
    pub created_at: String,
    pub last_used_at: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PasskeyOne {
    pub passkey: PasskeyView,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PasskeyList {
    pub passkeys: Vec<PasskeyView>,
}

/// The challenge a ceremony's client data carries (base64url, as the key it was stored
/// under); None when the client data is not JSON with a challenge.
pub fn challenge_of(client_data_json: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(client_data_json).ok()?;
    let c = v.get("challenge")?.as_str()?;
    let raw = bytes("challenge", c).ok()?;
    Some(URL_SAFE_NO_PAD.encode(raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_spellings_parse_to_the_same_credential() {
        let ng = serde_json::json!({"user_id": "u", "id": "AQI", "raw_id": "AQI", "type_": "public-key",
            "response": {"authenticator_data": "AAA", "client_data_json": "e30", "signature": "AQ==", "user_handle": null},
            "extensions": {}});
        let web = serde_json::json!({"id": "AQI", "rawId": "AQI", "type": "public-key", "authenticatorAttachment": "platform",
            "response": {"authenticatorData": "AAA", "clientDataJSON": "e30", "signature": "AQ", "userHandle": "AQ"},
            "clientExtensionResults": {}});
        let a: AssertionBody = serde_json::from_value(ng).unwrap();
        let b: AssertionBody = serde_json::from_value(web).unwrap();
        let (a, b) = (a.credential().unwrap(), b.credential().unwrap());
        assert_eq!(a.raw_id, vec![1, 2]);
        assert_eq!(a.response.signature, b.response.signature);
        assert_eq!(a.response.client_data_json, b"{}");
        assert_eq!(b.response.user_handle, Some(vec![1]));
    }

    #[test]
    fn challenges_and_keys_are_normalised() {
        assert_eq!(challenge_of(br#"{"challenge":"AQID","type":"webauthn.get"}"#).as_deref(), Some("AQID"));
        assert_eq!(challenge_of(br#"{"challenge":"AQI="}"#).as_deref(), Some("AQI"));
        assert_eq!(challenge_of(b"not json"), None);
        let v = snake_keys(
            &serde_json::json!({"pubKeyCredParams": [{"type": "public-key", "alg": -7}], "rp": {"id": "x"}}),
        );
        assert_eq!(
            v,
            serde_json::json!({"pub_key_cred_params": [{"type_": "public-key", "alg": -7}], "rp": {"id": "x"}})
        );
        assert!(bytes("f", "!!").is_err());
    }
}
