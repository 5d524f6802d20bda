//! Bearer secrets of the provider (client secrets, codes, device codes, refresh tokens):
//! drawn here, shown once, and stored only as keyed hashes under the cluster's index key,
//! so every node computes the same hash and the state never holds the secret itself.

use super::error::OAuthResult;
use crate::context::Core;
use crate::http::ApiError;
use crate::state::Reader;

/// Purposes, so a value of one kind can never match a hash of another.
pub const CLIENT_SECRET: &[u8] = b"oauth2-client-secret";
pub const CODE: &[u8] = b"oauth2-code";
pub const DEVICE_CODE: &[u8] = b"oauth2-device-code";
pub const REFRESH: &[u8] = b"oauth2-refresh-token";

/// A fresh secret with 256 bits of entropy, URL-safe.
pub fn new_secret() -> String {
    idnode_keys::random_token(32)
}

/// Hex of the keyed hash of `secret` for `purpose`.
pub fn keyed_hash(node: &Core, purpose: &[u8], secret: &str) -> OAuthResult<String> {
    let hasher = node
        .engine
        .read()
        .index_hasher()?
        .ok_or_else(|| ApiError::unavailable("The cluster is not bootstrapped yet."))?;
    Ok(hex::encode(hasher.hash(purpose, secret.as_bytes())))
}

/// Whether two stored hashes are equal, in constant time.
pub fn same_hash(a: &str, b: &str) -> bool {
    idnode_keys::constant_time_eq(a.as_bytes(), b.as_bytes())
}
