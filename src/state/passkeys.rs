//! Passkeys (WebAuthn credentials) of users and their pending ceremonies, in the `passkeys`
//! column family. A ceremony's server state (webauthn-rs's registration or authentication
//! state, as JSON) is replicated, so a ceremony started on one node finishes on any other; it
//! is keyed by its challenge, bound to one user, single use, and expires. Times are unix
//! seconds stamped by the service.

use serde::{Deserialize, Serialize};

/// Key layouts of the `passkeys` column family. User ids never hold `/`.
pub mod keys {
    pub fn passkey(user_id: &str, passkey_id: &str) -> Vec<u8> {
        format!("p/{user_id}/{passkey_id}").into_bytes()
    }
    /// A user's passkeys, in id order.
    pub fn of_user(user_id: &str) -> Vec<u8> {
        format!("p/{user_id}/").into_bytes()
    }
    /// Credential id (base64url) → `user_id/passkey_id`: a credential belongs to one user.
    pub fn credential(credential_id: &str) -> Vec<u8> {
        format!("c/{credential_id}").into_bytes()
    }
    /// A pending ceremony by its challenge (base64url).
    pub fn ceremony(challenge: &str) -> Vec<u8> {
        format!("w/{challenge}").into_bytes()
    }
    pub const EXPIRY_PREFIX: &[u8] = b"x/";
    /// Expiry index: `x/` + big-endian seconds + challenge, so the due ones come first.
    pub fn expiry(at: i64, challenge: &str) -> Vec<u8> {
        let mut k = EXPIRY_PREFIX.to_vec();
        k.extend_from_slice(&(at.max(0) as u64).to_be_bytes());
        k.extend_from_slice(challenge.as_bytes());
        k
    }
}

/// One registered passkey.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredPasskey {
    pub id: String,
    pub user_id: String,
    pub description: Option<String>,
    /// The credential id, base64url without padding.
    pub credential_id: String,
    /// webauthn-rs's `Passkey` as JSON (public key, counter, flags).
    pub credential: String,
    /// The authenticator's signature counter last seen (0: it keeps none).
    pub counter: u32,
    pub backup_eligible: bool,
    pub backup_state: bool,
    pub created_at: i64,
    pub last_used_at: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Purpose {
    Register,
    Login,
}

/// A ceremony begun and not finished yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ceremony {
    pub user_id: String,
    pub purpose: Purpose,
    /// webauthn-rs's ceremony state as JSON.
    pub state: String,
    /// The login of an unknown user (or one without passkeys): a challenge for a passkey
    /// nobody holds, which no answer finishes.
    pub decoy: bool,
    /// The description a registration will store.
    pub description: Option<String>,
    pub expires_at: i64,
}

/// What a login proved, for apply to check against the stored passkey and record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoginProof {
    pub passkey_id: String,
    pub counter: u32,
    pub backup_eligible: bool,
    pub backup_state: bool,
    /// The credential with the new counter and flags (webauthn-rs JSON).
    pub credential: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum PasskeyCommand {
    /// Stores a pending ceremony under its challenge (which must be new) and drops expired
    /// ones.
    Start { challenge: String, ceremony: Ceremony, at: i64 },
    /// Finishes a registration: the ceremony must be pending, unexpired, a registration of
    /// this user, who must exist; the credential id must be new. Spends the ceremony.
    Register { challenge: String, passkey: Box<StoredPasskey>, at: i64 },
    /// Finishes a login: the ceremony must be pending, unexpired, a login of this user, who
    /// must exist and be enabled; the passkey must still be the user's; the counter must move
    /// forward (unless it stays 0) and backup eligibility must not change. Spends the ceremony
    /// and records the counter, the flags and the time.
    Login { challenge: String, user_id: String, proof: LoginProof, at: i64 },
    /// Removes a passkey. From cluster version 15 (`apply::SELF_SERVICE_VERSION`) refused when
    /// it is the last passkey of a user without a password: the user could no longer sign in.
    Delete { user_id: String, passkey_id: String },
    /// Renames a passkey of this user (1 to 255 characters, trimmed by the service).
    /// Command version 15.
    Rename { user_id: String, passkey_id: String, description: String },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum PasskeyApplied {
    Done,
    Passkey(Box<StoredPasskey>),
}

/// The longest description a passkey keeps (characters).
pub const MAX_DESCRIPTION: usize = 255;

/// Why apply refused the removal of a passkey-only account's last passkey (409).
pub const LAST_PASSKEY: &str =
    "The last passkey of an account without a password cannot be removed; set a password first.";

/// Why apply refused a login (the service answers 401 to all of them alike, and logs this).
pub const CLONED: &str = "the signature counter did not move forward: the authenticator may have been cloned";
