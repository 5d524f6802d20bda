//! Credentials: `/v3/credentials`, Keystone's legacy signature credential view under
//! `/v3/users/{user_id}/credentials/OS-EC2`, tokens for signed requests (`/v3/sigtokens`) and
//! the S3 service's signature check (`/v3/s3tokens`).

pub mod credentials;
pub mod ec2;
pub mod replay;
mod s3sign;
pub mod s3tokens;
pub mod schemas;
mod signer;
pub mod sigtokens;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::http::fields::with_extra;
use crate::state::model::Credential;

pub use crate::state::apply::credential::EC2;

/// The id of a signature credential: hex SHA-256 of its access key (Keystone), so a signed
/// request finds its credential without the access key being stored as a key.
pub fn ec2_id(access: &str) -> String {
    hex::encode(Sha256::digest(access.as_bytes()))
}

/// The credential object; it carries the blob, secrets included (the spec says so).
pub fn credential_json(c: &Credential, base: &str) -> Value {
    with_extra(
        json!({
            "id": c.id, "type": c.cred_type, "blob": c.blob, "user_id": c.user_id, "project_id": c.project_id,
            "links": {"self": format!("{base}/v3/credentials/{}", c.id)},
        }),
        &c.extra,
    )
}

/// A string member of a credential's JSON blob.
pub fn blob_field(c: &Credential, key: &str) -> Option<String> {
    serde_json::from_str::<Value>(&c.blob).ok()?.get(key)?.as_str().map(str::to_string)
}

#[cfg(test)]
mod s3tokens_tests;
#[cfg(test)]
pub(crate) mod tests;
