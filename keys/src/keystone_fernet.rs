//! Keystone's fernet tokens, opened with the keys of a Keystone fernet key repository (issue
//! 52: a token issued before the move keeps validating until it expires). A token is a fernet
//! envelope (Keystone strips its base64 padding) around a msgpack list: the payload kind's
//! version, then that kind's fields (`keystone/token/token_formatters.py`). Ids are stored as
//! `[true, 16 uuid bytes]` or `[false, text]`, audit ids as their 16 raw bytes, the expiry as
//! float seconds; the issue time is the envelope's own timestamp.
//!
//! This module only reads what a token says; whether its user, scope and roles still hold is
//! the validator's question, as for idnode's own tokens.

use std::path::Path;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rmpv::Value;

/// Why a Keystone token cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FernetError {
    #[error("not a token these keys opened")]
    Undecryptable,
    #[error("malformed Keystone token payload: {0}")]
    Malformed(&'static str),
    #[error("Keystone token payload version {0} is not read yet")]
    Unsupported(u64),
    #[error("fernet key repository {0}: {1}")]
    Repository(String, String),
    #[error("not a fernet key (url-safe base64 of 32 bytes)")]
    BadKey,
    #[error("no fernet key")]
    NoKey,
}

/// What a token is scoped to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeystoneScope {
    Unscoped,
    Domain(String),
    Project(String),
    /// Keystone's only system scope is `all`.
    System(String),
}

/// A Keystone token as its payload says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeystoneToken {
    /// The payload kind (0 unscoped, 1 domain, 2 project, 3 trust, 4 to 6 federated unscoped,
    /// project and domain, 7 OAuth1, 8 system, 9 application credential).
    pub version: u64,
    pub user_id: String,
    /// The authentication methods as Keystone's bitmask: bit `i` is the `i`-th entry of its
    /// `[auth] methods` (see [`method_names`]).
    pub methods: u64,
    pub scope: KeystoneScope,
    /// Unix microseconds.
    pub expires_at: i64,
    /// Unix seconds (the fernet timestamp).
    pub issued_at: i64,
    /// Base64url without padding, as Keystone shows them.
    pub audit_ids: Vec<String>,
    /// What the token acts through, for the delegated kinds.
    pub delegation: KeystoneDelegation,
}

/// The delegation a token carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeystoneDelegation {
    None,
    /// Kind 3: an OS-TRUST trust (its id).
    Trust(String),
    /// Kind 9: an application credential (its id).
    AppCred(String),
    /// Kinds 4 to 6: a federated login, with the groups its mapping put the user in.
    Federated(KeystoneFederation),
    /// Kind 7: an OS-OAUTH1 access token (its id).
    OAuth1(String),
}

/// What a federated token says of the login it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeystoneFederation {
    pub identity_provider_id: String,
    /// The protocol's id, which is also the token's method name (Keystone authenticates a
    /// federated login with the method named after its protocol).
    pub protocol_id: String,
    pub group_ids: Vec<String>,
}

/// Keystone 30's default `[auth] methods`, in its order.
pub const DEFAULT_METHODS: &[&str] = &["external", "password", "token", "oauth1", "mapped", "application_credential"];

/// The method names a bitmask stands for, given Keystone's `[auth] methods`.
pub fn method_names(mask: u64, methods: &[&str]) -> Vec<String> {
    methods.iter().enumerate().filter(|(i, _)| *i < 64 && mask & (1 << i) != 0).map(|(_, m)| m.to_string()).collect()
}

/// The keys of a Keystone fernet key repository (`keystone-manage fernet_setup` writes files
/// named `0`, `1`, ...: the staged key, secondary keys and the primary, the highest).
pub struct KeystoneFernetKeys {
    keys: Vec<fernet::Fernet>,
}

impl KeystoneFernetKeys {
    /// Keys as the repository's files hold them (url-safe base64 of 32 bytes).
    pub fn new(keys: &[String]) -> Result<Self, FernetError> {
        let keys = keys
            .iter()
            .map(|k| {
                fernet::Fernet::new(k.trim())
                    .ok_or_else(|| FernetError::Repository("key".into(), "not a fernet key".into()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if keys.is_empty() {
            return Err(FernetError::Repository("keys".into(), "no key".into()));
        }
        Ok(KeystoneFernetKeys { keys })
    }

    /// Reads every key file (a file named by a number) of a repository directory.
    pub fn read_repository(dir: &Path) -> Result<Vec<String>, FernetError> {
        let repo = |e: std::io::Error| FernetError::Repository(dir.display().to_string(), e.to_string());
        let mut found: Vec<(u64, String)> = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(repo)? {
            let entry = entry.map_err(repo)?;
            let Some(n) = entry.file_name().to_str().and_then(|n| n.parse::<u64>().ok()) else { continue };
            found.push((n, std::fs::read_to_string(entry.path()).map_err(repo)?.trim().to_string()));
        }
        if found.is_empty() {
            return Err(FernetError::Repository(dir.display().to_string(), "holds no key file".into()));
        }
        found.sort();
        Ok(found.into_iter().rev().map(|(_, k)| k).collect())
    }

    /// Opens and reads a token.
    pub fn decode(&self, token: &str) -> Result<KeystoneToken, FernetError> {
        let padded = format!("{token}{}", "=".repeat((4 - token.len() % 4) % 4));
        let plain = self.keys.iter().find_map(|k| k.decrypt(&padded).ok()).ok_or(FernetError::Undecryptable)?;
        let issued_at = envelope_time(&padded)?;
        let value = rmpv::decode::read_value(&mut plain.as_slice()).map_err(|_| FernetError::Malformed("msgpack"))?;
        parse(&value, issued_at)
    }
}

/// The fernet timestamp: bytes 1..9 of the envelope, big-endian seconds.
fn envelope_time(padded: &str) -> Result<i64, FernetError> {
    let raw = base64::engine::general_purpose::URL_SAFE.decode(padded).map_err(|_| FernetError::Undecryptable)?;
    let bytes: [u8; 8] = raw.get(1..9).and_then(|b| b.try_into().ok()).ok_or(FernetError::Undecryptable)?;
    i64::try_from(u64::from_be_bytes(bytes)).map_err(|_| FernetError::Malformed("timestamp"))
}

fn bytes_of(v: &Value) -> Option<&[u8]> {
    match v {
        Value::Binary(b) => Some(b),
        Value::String(s) => Some(s.as_bytes()),
        _ => None,
    }
}

fn text(b: &[u8], what: &'static str) -> Result<String, FernetError> {
    String::from_utf8(b.to_vec()).map_err(|_| FernetError::Malformed(what))
}

/// `[true, uuid bytes]` (the id's hex) or `[false, text]`.
fn id(v: &Value, what: &'static str) -> Result<String, FernetError> {
    let pair = v.as_array().filter(|a| a.len() == 2).ok_or(FernetError::Malformed(what))?;
    let raw = bytes_of(&pair[1]).ok_or(FernetError::Malformed(what))?;
    match pair[0].as_bool() {
        Some(true) if raw.len() == 16 => Ok(hex::encode(raw)),
        Some(false) => text(raw, what),
        _ => Err(FernetError::Malformed(what)),
    }
}

/// A domain id: 16 uuid bytes, else the (default domain's) id as text.
fn domain_id(v: &Value) -> Result<String, FernetError> {
    let raw = bytes_of(v).ok_or(FernetError::Malformed("domain id"))?;
    if raw.len() == 16 {
        return Ok(hex::encode(raw));
    }
    text(raw, "domain id")
}

fn parse(v: &Value, issued_at: i64) -> Result<KeystoneToken, FernetError> {
    let list = v.as_array().ok_or(FernetError::Malformed("not a list"))?;
    let version = list.first().and_then(Value::as_u64).ok_or(FernetError::Malformed("version"))?;
    let fields = &list[1..];
    // The scope, and where the expiry is (the audit ids follow it), per kind.
    let (scope, at_expiry) = match (version, fields.len()) {
        (0, 4) => (KeystoneScope::Unscoped, 2),
        (1, 5) => (KeystoneScope::Domain(domain_id(&fields[2])?), 3),
        (2, 5) => (KeystoneScope::Project(id(&fields[2], "project id")?), 3),
        (8, 5) => {
            let system = bytes_of(&fields[2]).ok_or(FernetError::Malformed("system"))?;
            (KeystoneScope::System(text(system, "system")?), 3)
        }
        (3 | 9, 6) => (KeystoneScope::Project(id(&fields[2], "project id")?), 3),
        (7, 6) => (KeystoneScope::Project(id(&fields[2], "project id")?), 4),
        (4, 7) => (KeystoneScope::Unscoped, 5),
        (5, 8) => (KeystoneScope::Project(id(&fields[2], "project id")?), 6),
        // Unlike kind 1, a federated domain scope is an id pair like every other id.
        (6, 8) => (KeystoneScope::Domain(id(&fields[2], "domain id")?), 6),
        (0..=9, _) => return Err(FernetError::Malformed("field count")),
        (other, _) => return Err(FernetError::Unsupported(other)),
    };
    let user_id = id(&fields[0], "user id")?;
    let methods = fields[1].as_u64().ok_or(FernetError::Malformed("methods"))?;
    let expires = fields[at_expiry].as_f64().or_else(|| fields[at_expiry].as_i64().map(|i| i as f64));
    let expires = expires.filter(|e| e.is_finite()).ok_or(FernetError::Malformed("expiry"))?;
    let audit_ids = fields[at_expiry + 1]
        .as_array()
        .ok_or(FernetError::Malformed("audit ids"))?
        .iter()
        .map(|a| bytes_of(a).map(|b| URL_SAFE_NO_PAD.encode(b)).ok_or(FernetError::Malformed("audit id")))
        .collect::<Result<Vec<_>, _>>()?;
    let delegation = match version {
        // A trust's id is its 16 raw uuid bytes, without the is-bytes flag of other ids.
        3 => match bytes_of(&fields[5]) {
            Some(raw) if raw.len() == 16 => KeystoneDelegation::Trust(hex::encode(raw)),
            _ => return Err(FernetError::Malformed("trust id")),
        },
        4..=6 => KeystoneDelegation::Federated(federation(&fields[at_expiry - 3..at_expiry])?),
        7 => KeystoneDelegation::OAuth1(id(&fields[3], "access token id")?),
        9 => KeystoneDelegation::AppCred(id(&fields[5], "application credential id")?),
        _ => KeystoneDelegation::None,
    };
    Ok(KeystoneToken {
        version,
        user_id,
        methods,
        scope,
        expires_at: (expires * 1_000_000.0).round() as i64,
        issued_at,
        audit_ids,
        delegation,
    })
}

/// A federated payload's group ids (each an id pair), identity provider (an id pair) and
/// protocol (text), in that order.
fn federation(fields: &[Value]) -> Result<KeystoneFederation, FernetError> {
    let [groups, idp, protocol] = fields else { return Err(FernetError::Malformed("field count")) };
    let group_ids = groups
        .as_array()
        .ok_or(FernetError::Malformed("group ids"))?
        .iter()
        .map(|g| id(g, "group id"))
        .collect::<Result<Vec<_>, _>>()?;
    let protocol = bytes_of(protocol).ok_or(FernetError::Malformed("protocol id"))?;
    Ok(KeystoneFederation {
        identity_provider_id: id(idp, "identity provider id")?,
        protocol_id: text(protocol, "protocol id")?,
        group_ids,
    })
}

#[cfg(test)]
#[path = "keystone_fernet_tests.rs"]
mod tests;
