//! OpenAPI schemas of credential, signature credential (OS-EC2) and signed-request bodies,
//! and the typed create and update bodies (with Keystone's checks).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::http::body::{envelope, Checked};
use crate::http::error::{ApiError, ApiResult};
use crate::http::fields::{self as f, Obj};
use crate::http::openapi::{CollectionLinks, SelfLink};

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

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON with the extra attributes merged in
pub struct CredentialEnvelope {
    credential: Credential,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON with the extra attributes merged in
pub struct CredentialList {
    credentials: Vec<Credential>,
    links: CollectionLinks,
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

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON with the extra attributes merged in
pub struct Ec2CredentialEnvelope {
    credential: Ec2Credential,
}

#[derive(ToSchema)]
#[allow(dead_code)] // schema only: the handlers render JSON with the extra attributes merged in
pub struct Ec2CredentialList {
    credentials: Vec<Ec2Credential>,
    links: CollectionLinks,
}

/// `POST /v3/credentials`.
#[derive(Deserialize, ToSchema)]
pub struct CredentialCreateRequest {
    pub credential: CredentialCreate,
}

impl Checked for CredentialCreateRequest {
    fn check(raw: &Value) -> ApiResult<()> {
        let o = envelope(raw, "credential")?;
        let cred_type = f::req_name(o, "type", 255)?;
        let blob = req_blob(o)?;
        let project_id = f::opt_str(o, "project_id", 64)?;
        if cred_type == super::EC2 {
            if project_id.is_none() {
                return Err(ApiError::bad_request("'project_id' is a required property of an ec2 credential."));
            }
            ec2_access(&blob)?;
        }
        f::opt_name(o, "user_id", 64).map(drop)
    }
}

#[derive(Deserialize, ToSchema)]
pub struct CredentialCreate {
    /// `ec2` for signature credentials, or any other type (`totp`, `cert`, ...).
    #[serde(rename = "type")]
    #[schema(min_length = 1, max_length = 255)]
    pub cred_type: String,
    /// JSON-encoded string; for `ec2` an object with a non-empty string `access`.
    #[schema(max_length = 65535)]
    pub blob: String,
    /// Default: the caller.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 64)]
    pub user_id: Option<String>,
    /// Required for `ec2`.
    #[serde(default)]
    #[schema(max_length = 64)]
    pub project_id: Option<String>,
    /// Other attributes, kept and echoed back.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `PATCH /v3/credentials/{id}`.
#[derive(Deserialize, ToSchema)]
pub struct CredentialUpdateRequest {
    pub credential: CredentialUpdate,
}

impl Checked for CredentialUpdateRequest {
    fn check(raw: &Value) -> ApiResult<()> {
        let o = envelope(raw, "credential")?;
        f::opt_name(o, "type", 255)?;
        if o.contains_key("blob") {
            req_blob(o)?;
        }
        f::opt_name(o, "user_id", 64)?;
        f::opt_str(o, "project_id", 64).map(drop)
    }
}

/// An absent field is left as it is; `null` clears `project_id`. `id`, if sent, must be the
/// credential's own.
#[derive(Deserialize, ToSchema)]
pub struct CredentialUpdate {
    #[serde(rename = "type", default)]
    #[schema(min_length = 1, max_length = 255)]
    pub cred_type: Option<String>,
    /// A signature credential's blob keeps its access key's bindings (`trust_id`, ...).
    #[serde(default)]
    #[schema(max_length = 65535)]
    pub blob: Option<String>,
    #[serde(default)]
    #[schema(min_length = 1, max_length = 64)]
    pub user_id: Option<String>,
    #[serde(default, deserialize_with = "f::present")]
    #[schema(value_type = Option<String>, max_length = 64)]
    pub project_id: Option<Option<String>>,
    /// Other attributes, merged into the stored ones.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn req_blob(o: &Obj) -> ApiResult<String> {
    f::opt_str(o, "blob", MAX_BLOB)?.ok_or_else(|| ApiError::bad_request("'blob' is a required property."))
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
    #[schema(min_length = 1, max_length = 255)]
    pub tenant_id: Option<String>,
    #[serde(default)]
    #[schema(min_length = 1, max_length = 255)]
    pub project_id: Option<String>,
    #[serde(default)]
    #[schema(min_length = 1, max_length = 255)]
    pub access: Option<String>,
    #[serde(default)]
    #[schema(min_length = 1, max_length = 255)]
    pub secret: Option<String>,
}

impl Checked for Ec2CredentialCreate {
    fn check(raw: &Value) -> ApiResult<()> {
        if !raw.is_object() {
            return Err(ApiError::bad_request("The request body must be a JSON object."));
        }
        let (tenant_id, project_id) = (opt_key(raw, "tenant_id")?, opt_key(raw, "project_id")?);
        if tenant_id.is_none() && project_id.is_none() {
            return Err(ApiError::bad_request("'tenant_id' is a required property."));
        }
        opt_key(raw, "access")?;
        opt_key(raw, "secret").map(drop)
    }
}

/// An optional key of the create body: absent or null means "generate one".
fn opt_key(body: &Value, key: &str) -> ApiResult<Option<String>> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.is_empty() && s.chars().count() <= MAX_KEY => Ok(Some(s.clone())),
        Some(_) => Err(ApiError::bad_request(format!(
            "Invalid input for field '{key}': must be a non-empty string of at most {MAX_KEY} characters."
        ))),
    }
}

/// A request signed with a signature credential's secret (AWS V4, V2, V1 or V0 signing).
/// Read leniently, as Keystone reads it: a member of another type counts as absent.
#[derive(Default, Deserialize, ToSchema)]
pub struct SignedRequest {
    /// The plaintext access key; without it no token is issued (401).
    #[serde(default, deserialize_with = "lenient_text")]
    #[schema(required = true, value_type = String)]
    pub access: Option<String>,
    #[serde(default, deserialize_with = "lenient_text")]
    #[schema(required = true, value_type = String)]
    pub signature: Option<String>,
    #[serde(default, deserialize_with = "lenient_text")]
    pub host: Option<String>,
    #[serde(default, deserialize_with = "lenient_text")]
    pub verb: Option<String>,
    #[serde(default, deserialize_with = "lenient_text")]
    pub path: Option<String>,
    /// Signed query parameters (numbers are read as their text).
    #[serde(default, deserialize_with = "lenient_map")]
    #[schema(value_type = Option<BTreeMap<String, String>>)]
    pub params: BTreeMap<String, String>,
    /// Signed headers (V4: `X-Amz-Date`, `Authorization`, ...).
    #[serde(default, deserialize_with = "lenient_map")]
    #[schema(value_type = Option<BTreeMap<String, String>>)]
    pub headers: BTreeMap<String, String>,
    /// Hex SHA-256 of the signed request's body (V4).
    #[serde(default, deserialize_with = "lenient_text")]
    pub body_hash: Option<String>,
}

/// `POST /v3/sigtokens`: the signed request under `credentials` (Keystone also accepts
/// `credential` and `ec2Credentials`; the first of them present counts, and one that is not
/// an object carries no signature).
#[derive(Deserialize, ToSchema)]
pub struct SignedTokenRequest {
    #[serde(default, deserialize_with = "lenient_object")]
    #[schema(value_type = Option<SignedRequest>)]
    pub credentials: Option<Option<SignedRequest>>,
    #[serde(default, deserialize_with = "lenient_object")]
    #[schema(value_type = Option<SignedRequest>)]
    pub credential: Option<Option<SignedRequest>>,
    #[serde(rename = "ec2Credentials", default, deserialize_with = "lenient_object")]
    #[schema(value_type = Option<SignedRequest>)]
    pub ec2_credentials: Option<Option<SignedRequest>>,
}

impl SignedTokenRequest {
    /// The signed request, if the body carries one with an access key.
    pub fn signed(self) -> Option<SignedRequest> {
        self.credentials.or(self.credential).or(self.ec2_credentials).flatten().filter(|r| r.access.is_some())
    }
}

impl Checked for SignedTokenRequest {
    fn check(raw: &Value) -> ApiResult<()> {
        let Some(top) = raw.as_object().filter(|o| !o.is_empty()) else {
            return Err(ApiError::bad_request("The request must include a JSON object body."));
        };
        let creds = ["credentials", "credential", "ec2Credentials"].iter().find_map(|k| top.get(*k));
        if let Some(Value::Object(c)) = creds {
            if c.get("access").is_some_and(Value::is_string) {
                string_map(c.get("params"), "params")?;
                string_map(c.get("headers"), "headers")?;
            }
        }
        Ok(())
    }
}

/// `params` and `headers`: an object of strings (or numbers, read as their text), or null.
fn string_map(v: Option<&Value>, field: &str) -> ApiResult<BTreeMap<String, String>> {
    let invalid = || ApiError::bad_request(format!("Invalid input for field '{field}': must be an object of strings."));
    match v {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(o)) => o
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                Value::Number(n) => Ok((k.clone(), n.to_string())),
                _ => Err(invalid()),
            })
            .collect(),
        Some(_) => Err(invalid()),
    }
}

fn lenient_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        _ => None,
    })
}

/// The check refused a malformed map wherever it matters; elsewhere it reads as empty.
fn lenient_map<'de, D: serde::Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(string_map(Some(&v), "").unwrap_or_default())
}

/// Present: `Some`; an object: `Some(Some(request))`.
fn lenient_object<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<SignedRequest>>, D::Error> {
    use serde::de::Error;
    match Value::deserialize(d)? {
        v @ Value::Object(_) => serde_json::from_value(v).map(Some).map_err(D::Error::custom).map(Some),
        _ => Ok(Some(None)),
    }
}
