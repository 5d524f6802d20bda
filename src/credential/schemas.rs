//! OpenAPI schemas of credential, signature credential (OS-EC2) and signed-request bodies.
//! Schema only: the handlers build and read JSON directly.
#![allow(dead_code)]

use std::collections::BTreeMap;

use utoipa::ToSchema;

use crate::http::openapi::{CollectionLinks, SelfLink};

/// A credential. Responses carry the decrypted blob: treat them as secret.
#[derive(ToSchema)]
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
pub struct CredentialEnvelope {
    credential: Credential,
}

#[derive(ToSchema)]
pub struct CredentialList {
    credentials: Vec<Credential>,
    links: CollectionLinks,
}

#[derive(ToSchema)]
pub struct CredentialCreate {
    #[schema(rename = "type")]
    cred_type: String,
    /// JSON-encoded string; for `ec2` it must hold `access`.
    blob: String,
    /// Default: the caller.
    user_id: Option<String>,
    /// Required for `ec2`.
    project_id: Option<String>,
}

#[derive(ToSchema)]
pub struct CredentialCreateRequest {
    credential: CredentialCreate,
}

#[derive(ToSchema)]
pub struct CredentialUpdate {
    #[schema(rename = "type")]
    cred_type: Option<String>,
    blob: Option<String>,
    user_id: Option<String>,
    project_id: Option<String>,
}

#[derive(ToSchema)]
pub struct CredentialUpdateRequest {
    credential: CredentialUpdate,
}

/// A signature credential, with its plaintext secret.
#[derive(ToSchema)]
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
pub struct Ec2CredentialEnvelope {
    credential: Ec2Credential,
}

#[derive(ToSchema)]
pub struct Ec2CredentialList {
    credentials: Vec<Ec2Credential>,
    links: CollectionLinks,
}

/// Not wrapped in an envelope. `access` and `secret` are generated when omitted.
#[derive(ToSchema)]
pub struct Ec2CredentialCreate {
    /// The project (also accepted as `project_id`).
    tenant_id: String,
    access: Option<String>,
    secret: Option<String>,
}

/// A request signed with a signature credential's secret (AWS V4, V2, V1 or V0 signing).
#[derive(ToSchema)]
pub struct SignedRequest {
    /// The plaintext access key.
    access: String,
    signature: String,
    host: Option<String>,
    verb: Option<String>,
    path: Option<String>,
    /// Signed query parameters.
    params: Option<BTreeMap<String, String>>,
    /// Signed headers (V4: `X-Amz-Date`, `Authorization`, ...).
    headers: Option<BTreeMap<String, String>>,
    /// Hex SHA-256 of the signed request's body (V4).
    body_hash: Option<String>,
}

/// The signed request under `credentials` (Keystone also accepts `credential` and `ec2Credentials`).
#[derive(ToSchema)]
pub struct SignedTokenRequest {
    credentials: SignedRequest,
}
