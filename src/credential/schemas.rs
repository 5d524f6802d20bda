//! OpenAPI schemas of credential, signature credential (OS-EC2) and signed-request bodies,
//! and the typed create and update bodies (with Keystone's checks).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::http::body::{Body, Sent};
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::Obj;
use crate::http::openapi::SelfLink;
use crate::http::wrappers::{envelopes, member_requests};

/// The longest blob (JSON text) a credential holds.
pub const MAX_BLOB: usize = 65535;
/// The longest access key or secret of a signature credential.
pub const MAX_KEY: usize = 255;

/// A credential. Responses carry the decrypted blob: treat them as secret.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON with the extra attributes merged in
pub struct Credential {
    /// For signature credentials the hex SHA-256 of the blob's `access`, otherwise generated.
    id: String,
    /// `ec2` for signature credentials, or any other type (`totp`, `cert`, ...).
    #[schema(rename = "type")]
    cred_type: String,
    /// JSON-encoded string, e.g. `{"access": "...", "secret": "..."}`.
    blob: String,
    user_id: String,
    project_id: Option<String>,
    links: SelfLink,
}

envelopes! { schema_only:
    CredentialEnvelope { credential: Credential }
    CredentialList { credentials: [Credential] }
}

/// A signature credential, with its plaintext secret.
#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON with the extra attributes merged in
pub struct Ec2Credential {
    access: String,
    secret: String,
    user_id: String,
    /// The project the credential's tokens are scoped to.
    tenant_id: String,
    trust_id: Option<String>,
    links: SelfLink,
}

envelopes! { schema_only:
    Ec2CredentialEnvelope { credential: Ec2Credential }
    Ec2CredentialList { credentials: [Ec2Credential] }
}

member_requests! {
    /// `POST /v3/credentials`.
    CredentialCreateRequest { credential: CredentialCreate }
}

/// What a credential's create and update bodies share.
#[derive(Deserialize, ToSchema)]
pub struct CredentialFields {
    /// Default on create: the caller.
    #[serde(default)]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 64)]
    pub user_id: Sent<String>,
    /// Required for `ec2` on create; `null` clears it on update.
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 64)]
    pub project_id: Sent<String>,
    /// Other attributes, kept and echoed back (on update, merged into the stored ones).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Deserialize, ToSchema)]
pub struct CredentialCreate {
    /// `ec2` for signature credentials, or any other type (`totp`, `cert`, ...).
    #[serde(rename = "type", default)]
    #[schema(value_type = String, required = true, min_length = 1, max_length = 255)]
    pub cred_type: Sent<String>,
    /// JSON-encoded string; for `ec2` an object with a non-empty string `access`.
    #[serde(default)]
    #[schema(value_type = String, required = true, max_length = 65535)]
    pub blob: Sent<String>,
    #[serde(flatten)]
    pub fields: CredentialFields,
}

member_requests! {
    /// `PATCH /v3/credentials/{id}`.
    CredentialUpdateRequest { credential: CredentialUpdate }
}

/// An absent field is left as it is; `null` clears `project_id`. `id`, if sent, must be the
/// credential's own.
#[derive(Deserialize, ToSchema)]
pub struct CredentialUpdate {
    #[serde(rename = "type", default)]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 255)]
    pub cred_type: Sent<String>,
    /// A signature credential's blob keeps its access key's bindings (`trust_id`, ...).
    #[serde(default)]
    #[schema(value_type = Option<String>, max_length = 65535)]
    pub blob: Sent<String>,
    #[serde(flatten)]
    pub fields: CredentialFields,
}

/// A credential's blob: a string, required (`null` included) wherever it is sent.
pub fn blob(sent: &Sent<String>) -> ApiResult<String> {
    sent.string("blob", MAX_BLOB)?.ok_or_else(|| ApiError::bad_request("'blob' is a required property."))
}

/// The access key of a signature credential's blob: a JSON object with a string `access`.
pub fn ec2_access(blob: &str) -> ApiResult<String> {
    let v: Value = serde_json::from_str(blob).map_err(|_| ApiError::bad_request("Invalid blob in credential."))?;
    match v.get("access") {
        Some(Value::String(a)) if !a.is_empty() => Ok(a.clone()),
        _ => Err(ApiError::bad_request("Expecting to find access in credential.")),
    }
}

/// `POST /v3/users/{id}/credentials/OS-EC2`; not wrapped in an envelope. `access` and
/// `secret` are generated when omitted (or null).
#[derive(Deserialize, ToSchema)]
pub struct Ec2CredentialCreate {
    /// The project (also accepted as `project_id`).
    #[serde(default)]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 255)]
    pub tenant_id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 255)]
    pub project_id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 255)]
    pub access: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 255)]
    pub secret: Sent<String>,
}

/// An optional key of the OS-EC2 create body: absent or null means "generate one".
pub fn ec2_key(sent: &Sent<String>, key: &str) -> ApiResult<Option<String>> {
    match sent {
        Sent::Absent | Sent::Null => Ok(None),
        Sent::Is(s) if !s.is_empty() && s.chars().count() <= MAX_KEY => Ok(Some(s.clone())),
        _ => Err(ApiError::bad_request(format!(
            "Invalid input for field '{key}': must be a non-empty string of at most {MAX_KEY} characters."
        ))),
    }
}

/// A request signed with a signature credential's secret (AWS V4, V2, V1 or V0 signing).
/// Read leniently, as Keystone reads it: a member of another type counts as absent.
#[derive(Deserialize, ToSchema)]
pub struct SignedRequest {
    /// The plaintext access key; without it no token is issued (401).
    #[serde(default)]
    #[schema(required = true, value_type = String)]
    pub access: Sent<String>,
    #[serde(default)]
    #[schema(required = true, value_type = String)]
    pub signature: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub host: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub verb: Sent<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub path: Sent<String>,
    /// Signed query parameters (numbers are read as their text).
    #[serde(default)]
    #[schema(value_type = Option<BTreeMap<String, String>>)]
    pub params: Sent<Obj>,
    /// Signed headers (V4: `X-Amz-Date`, `Authorization`, ...).
    #[serde(default)]
    #[schema(value_type = Option<BTreeMap<String, String>>)]
    pub headers: Sent<Obj>,
    /// Hex SHA-256 of the signed request's body (V4).
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub body_hash: Sent<String>,
}

/// `POST /v3/sigtokens`: the signed request under `credentials` (Keystone also accepts
/// `credential` and `ec2Credentials`; the first of them present counts, and one that is not
/// an object carries no signature).
#[derive(Deserialize, ToSchema)]
pub struct SignedTokenRequest {
    #[serde(default)]
    #[schema(value_type = Option<SignedRequest>)]
    pub credentials: Sent<SignedRequest>,
    #[serde(default)]
    #[schema(value_type = Option<SignedRequest>)]
    pub credential: Sent<SignedRequest>,
    #[serde(rename = "ec2Credentials", default)]
    #[schema(value_type = Option<SignedRequest>)]
    pub ec2_credentials: Sent<SignedRequest>,
    /// Ignored.
    #[serde(flatten)]
    #[schema(ignore)]
    pub extra: Obj,
}

impl SignedTokenRequest {
    /// The signed request, if the body carries one with an access key; 400 for a body that is
    /// no object or an empty one, or for malformed signed maps.
    pub fn signed(body: Body<Self>) -> ApiResult<Option<SignedRequest>> {
        let no_body = || ApiError::bad_request("The request must include a JSON object body.");
        let top = body.into_inner().ok_or_else(no_body)?;
        let sent = [top.credentials, top.credential, top.ec2_credentials];
        if top.extra.is_empty() && !sent.iter().any(Sent::is_present) {
            return Err(no_body());
        }
        let Some(Sent::Is(r)) = sent.into_iter().find(Sent::is_present) else { return Ok(None) };
        if !matches!(r.access, Sent::Is(_)) {
            return Ok(None);
        }
        string_map(&r.params, "params")?;
        string_map(&r.headers, "headers")?;
        Ok(Some(r))
    }
}

/// `params` and `headers`: an object of strings (or numbers, read as their text), or null.
pub fn string_map(sent: &Sent<Obj>, field: &str) -> ApiResult<BTreeMap<String, String>> {
    let invalid = || ApiError::bad_request(format!("Invalid input for field '{field}': must be an object of strings."));
    match sent {
        Sent::Absent | Sent::Null => Ok(BTreeMap::new()),
        Sent::Is(o) => o
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                Value::Number(n) => Ok((k.clone(), n.to_string())),
                _ => Err(invalid()),
            })
            .collect(),
        Sent::Wrong(_) => Err(invalid()),
    }
}

/// One S3 request as an S3 service presents it (Swift's s3token, Ceph's RADOS Gateway).
#[derive(Deserialize, ToSchema)]
pub struct S3Credentials {
    /// The plaintext access key; without it the answer is 401.
    #[serde(default)]
    #[schema(required = true, value_type = String)]
    pub access: Sent<String>,
    /// Base64 (standard or URL-safe alphabet) of the request's string to sign, as the S3
    /// service built it.
    #[serde(default)]
    #[schema(required = true, value_type = String)]
    pub token: Sent<String>,
    /// The request's signature: base64 HMAC-SHA1 (Version 2) or hex HMAC-SHA256 (Version 4).
    #[serde(default)]
    #[schema(required = true, value_type = String)]
    pub signature: Sent<String>,
}

/// `POST /v3/s3tokens`: the request under `credentials` (Keystone also accepts `credential`
/// and `ec2Credentials`; the first of them present counts).
#[derive(Deserialize, ToSchema)]
pub struct S3TokenRequest {
    #[serde(default)]
    #[schema(value_type = Option<S3Credentials>)]
    pub credentials: Sent<S3Credentials>,
    #[serde(default)]
    #[schema(value_type = Option<S3Credentials>)]
    pub credential: Sent<S3Credentials>,
    #[serde(rename = "ec2Credentials", default)]
    #[schema(value_type = Option<S3Credentials>)]
    pub ec2_credentials: Sent<S3Credentials>,
    /// Ignored.
    #[serde(flatten)]
    #[schema(ignore)]
    pub extra: Obj,
}

/// A presented S3 request: access key, base64 string to sign, signature.
pub struct S3Presented {
    pub access: String,
    pub token: String,
    pub signature: String,
}

impl S3TokenRequest {
    /// The presented request; `None` when it names no access key (Keystone's 401). 400 for a
    /// body that is no object or an empty one, and for a request whose members are not strings
    /// or that lacks its string to sign or signature.
    pub fn presented(body: Body<Self>) -> ApiResult<Option<S3Presented>> {
        let no_body = || ApiError::bad_request("The request must include a JSON object body.");
        let top = body.into_inner().ok_or_else(no_body)?;
        let sent = [top.credentials, top.credential, top.ec2_credentials];
        if top.extra.is_empty() && !sent.iter().any(Sent::is_present) {
            return Err(no_body());
        }
        let r = match sent.into_iter().find(|c| !matches!(c, Sent::Absent | Sent::Null)) {
            None => return Ok(None),
            Some(Sent::Is(r)) => r,
            Some(_) => return Err(ApiError::bad_request("Invalid input for field 'credentials': must be an object.")),
        };
        let field = |sent: Sent<String>, key: &str| match sent {
            Sent::Is(v) => Ok(Some(v)),
            Sent::Absent | Sent::Null => Ok(None),
            Sent::Wrong(_) => Err(ApiError::bad_request(format!("Invalid input for field '{key}': must be a string."))),
        };
        let required = |v: Option<String>, key: &str| {
            v.ok_or_else(|| ApiError::bad_request(format!("'{key}' is a required property.")))
        };
        let access = field(r.access, "access")?;
        let token = required(field(r.token, "token")?, "token")?;
        let signature = required(field(r.signature, "signature")?, "signature")?;
        Ok(access.map(|access| S3Presented { access, token, signature }))
    }
}
