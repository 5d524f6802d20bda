//! The OAuth2 / OpenID Connect provider's persisted model: per-domain signing keys, clients,
//! authorization codes, device grants, refresh-token families, remembered consents and
//! revoked access-token ids, all in the `oauth2` column family, and the commands that change
//! them. Every time here is unix seconds (JWT time), stamped by the service.
//!
//! No bearer secret reaches the log or the state: codes, device codes, refresh tokens and
//! client secrets are stored as keyed hashes (the cluster's index key), so a copy of the
//! state cannot be turned back into a credential.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Key layouts of the `oauth2` column family.
pub mod keys {
    /// A domain's signing keys.
    pub fn signing_keys(domain_id: &str) -> Vec<u8> {
        format!("k/{domain_id}").into_bytes()
    }
    /// Every domain's signing keys.
    pub const SIGNING_KEYS_PREFIX: &[u8] = b"k/";
    pub fn client(domain_id: &str, client_id: &str) -> Vec<u8> {
        format!("c/{domain_id}/{client_id}").into_bytes()
    }
    pub fn clients_prefix(domain_id: &str) -> Vec<u8> {
        format!("c/{domain_id}/").into_bytes()
    }
    /// An authorization code by the hex of its keyed hash.
    pub fn code(hash: &str) -> Vec<u8> {
        format!("a/{hash}").into_bytes()
    }
    pub fn device(hash: &str) -> Vec<u8> {
        format!("d/{hash}").into_bytes()
    }
    /// A pending device grant by its user code (normalized: upper case, no dash).
    pub fn user_code(code: &str) -> Vec<u8> {
        format!("u/{code}").into_bytes()
    }
    pub fn family(id: &str) -> Vec<u8> {
        format!("f/{id}").into_bytes()
    }
    pub const FAMILY_PREFIX: &[u8] = b"f/";
    /// The time (unix seconds) of a family's last successful refresh, from cluster version
    /// 15. Apart from the family's record, which is postcard and cannot grow a field that
    /// records already stored would read; removed when the family is pruned.
    pub fn family_last_used(id: &str) -> Vec<u8> {
        format!("fl/{id}").into_bytes()
    }
    /// A user's refresh families of one client (consent withdrawal revokes them).
    pub fn user_family(user_id: &str, client_id: &str, family_id: &str) -> Vec<u8> {
        format!("fu/{user_id}/{client_id}/{family_id}").into_bytes()
    }
    pub fn user_client_families_prefix(user_id: &str, client_id: &str) -> Vec<u8> {
        format!("fu/{user_id}/{client_id}/").into_bytes()
    }
    /// Every refresh family of a user, of any client (`fu/{user}/{client}/{family}`).
    pub fn user_families_prefix(user_id: &str) -> Vec<u8> {
        format!("fu/{user_id}/").into_bytes()
    }
    pub fn consent(user_id: &str, client_id: &str) -> Vec<u8> {
        format!("n/{user_id}/{client_id}").into_bytes()
    }
    pub fn consents_prefix(user_id: &str) -> Vec<u8> {
        format!("n/{user_id}/").into_bytes()
    }
    /// A revoked access-token id of a domain, until the token's `exp`.
    pub fn revoked_jti(domain_id: &str, jti: &str) -> Vec<u8> {
        format!("j/{domain_id}/{jti}").into_bytes()
    }
    pub fn revoked_jtis_prefix(domain_id: &str) -> Vec<u8> {
        format!("j/{domain_id}/").into_bytes()
    }
    pub const REVOKED_JTI_PREFIX: &[u8] = b"j/";
    /// The latest `exp` of a revoked access-token id of the domain that pruning dropped.
    pub fn jtis_pruned_through(domain_id: &str) -> Vec<u8> {
        format!("jw/{domain_id}").into_bytes()
    }
    /// Expiry index: `x/{expiry, order-preserving big-endian}{key of the record}`; records
    /// whose time is over are dropped a few per command, without a scan.
    pub const EXPIRY_PREFIX: &[u8] = b"x/";
    pub fn expiry(at: i64, key: &[u8]) -> Vec<u8> {
        let mut k = EXPIRY_PREFIX.to_vec();
        k.extend_from_slice(&((at as u64) ^ (1 << 63)).to_be_bytes());
        k.extend_from_slice(key);
        k
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SigningKeyState {
    /// Published in `/jwks`, not yet signing: relying parties learn it before it signs.
    Staged,
    /// Signs every new token.
    Primary,
    /// No longer signs; published until `retire_at`, when every token it signed has expired.
    Retired,
}

/// One ES256 key. The private key (PKCS#8 DER) is a secret of the state: sealed at rest
/// like every value, never rendered.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct SigningKey {
    pub kid: String,
    pub state: SigningKeyState,
    pub pkcs8: Vec<u8>,
    /// Public point, base64url (JWK `x`, `y`).
    pub x: String,
    pub y: String,
    pub created_at: i64,
    pub retire_at: Option<i64>,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey").field("kid", &self.kid).field("state", &self.state).finish_non_exhaustive()
    }
}

/// A domain's key set; `epoch` counts promotions (a metric, and a cache key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SigningKeys {
    pub domain_id: String,
    pub epoch: u64,
    pub keys: Vec<SigningKey>,
}

impl SigningKeys {
    pub fn primary(&self) -> Option<&SigningKey> {
        self.keys.iter().find(|k| k.state == SigningKeyState::Primary)
    }
    pub fn staged(&self) -> Option<&SigningKey> {
        self.keys.iter().find(|k| k.state == SigningKeyState::Staged)
    }
}

/// A registered client of one domain's authorization server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Client {
    pub client_id: String,
    pub domain_id: String,
    pub name: String,
    pub description: Option<String>,
    /// The mapping coordinate (domain_id, provider_id) of the client's principals.
    pub provider_id: Option<String>,
    /// A confidential client has a secret; a public one (browser or device app) has none.
    pub confidential: bool,
    pub token_endpoint_auth_method: String,
    pub grant_types: Vec<String>,
    pub redirect_uris: Vec<String>,
    pub require_pkce: bool,
    pub allowed_scopes: Vec<String>,
    /// Output claim -> template (`${user.id}`, `${user.name}`, `${user.email}`, …).
    pub claims_template: BTreeMap<String, String>,
    pub pre_authorized: bool,
    pub enabled: bool,
    /// Hex keyed hash of the secret (confidential clients).
    pub secret_hash: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Client {
    pub fn allows_grant(&self, grant: &str) -> bool {
        self.grant_types.iter().any(|g| g == grant)
    }
}

/// What one redemption issued, so that a second redemption can revoke it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Issued {
    pub jti: String,
    pub access_exp: i64,
    pub family_id: Option<String>,
}

/// An authorization code (single use, 60 s).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuthCode {
    pub domain_id: String,
    pub client_id: String,
    pub user_id: String,
    pub redirect_uri: String,
    pub scopes: Vec<String>,
    /// PKCE S256 challenge.
    pub code_challenge: Option<String>,
    pub nonce: Option<String>,
    pub auth_time: i64,
    pub expires_at: i64,
    pub redeemed: Option<Issued>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum DeviceStatus {
    Pending,
    Approved { user_id: String, auth_time: i64 },
    Denied,
    Redeemed(Issued),
}

/// A device authorization (RFC 8628).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceGrant {
    pub domain_id: String,
    pub client_id: String,
    pub scopes: Vec<String>,
    /// Normalized (upper case, no dash).
    pub user_code: String,
    pub expires_at: i64,
    /// Seconds the client must wait between polls; `slow_down` adds 5.
    pub interval: i64,
    pub last_poll: Option<i64>,
    pub status: DeviceStatus,
}

/// A refresh-token family: every token rotated from one grant. Only the current token's
/// hash is live; spent hashes are kept to recognise a replay, which revokes the family.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefreshFamily {
    pub id: String,
    pub domain_id: String,
    pub client_id: String,
    pub user_id: String,
    pub scopes: Vec<String>,
    pub auth_time: i64,
    pub created_at: i64,
    /// The absolute end of the family (`refresh_token_absolute_lifetime_days`).
    pub expires_at: i64,
    pub current: String,
    pub spent: Vec<String>,
    pub revoked_at: Option<i64>,
}

impl RefreshFamily {
    pub fn live(&self, now: i64) -> bool {
        self.revoked_at.is_none() && now < self.expires_at
    }
}

/// Spent refresh-token hashes a family remembers (a replay of an older one is refused
/// without revoking the family).
pub const MAX_SPENT: usize = 64;

/// A remembered consent of a user for a client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Consent {
    pub user_id: String,
    pub domain_id: String,
    pub client_id: String,
    pub scopes: Vec<String>,
    pub granted_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum OAuth2Command {
    /// A domain's first keys (a primary and a staged one); a no-op when it has keys already
    /// (two nodes may race to create them; the first wins, both answer with it).
    InstallKeys {
        domain_id: String,
        primary: SigningKey,
        staged: SigningKey,
    },
    /// Rotation: the staged key signs from now on, the primary retires (published until
    /// `retire_at`), `staged` is the next one; retired keys past their time go. Refused when
    /// the staged key is not `expected_staged` (a concurrent rotation won).
    RotateKeys {
        domain_id: String,
        expected_staged: String,
        staged: SigningKey,
        retire_at: i64,
        at: i64,
    },
    /// Creates (the id must be free) or replaces (it must exist) a client.
    PutClient {
        client: Client,
        create: bool,
    },
    DeleteClient {
        domain_id: String,
        client_id: String,
    },
    /// A code for an approved authorization request; `consent` is remembered with it.
    IssueCode {
        hash: String,
        code: AuthCode,
        consent: Option<Consent>,
    },
    /// Redeems a code once; a second redemption revokes what the first issued.
    RedeemCode {
        hash: String,
        client_id: String,
        at: i64,
        issued: Issued,
        family: Option<RefreshFamily>,
    },
    /// Rotates a family's refresh token (`presented` -> `next`, both keyed hashes).
    Refresh {
        family_id: String,
        client_id: String,
        presented: String,
        next: String,
        at: i64,
    },
    RevokeFamily {
        family_id: String,
        client_id: String,
        at: i64,
    },
    /// Lists an access token's id as revoked until `exp`; with `family_id`, its refresh
    /// family goes too.
    RevokeJti {
        domain_id: String,
        jti: String,
        exp: i64,
        family_id: Option<String>,
        at: i64,
    },
    StartDevice {
        hash: String,
        grant: DeviceGrant,
    },
    /// The user's decision on a pending device grant (`approve`: user id and auth time).
    DecideDevice {
        domain_id: String,
        user_code: String,
        approve: Option<(String, i64)>,
        consent: Option<Consent>,
        at: i64,
    },
    /// A poll of the device client. `issued`: the tokens the service minted, having read the
    /// grant as approved; without them an approved grant answers pending (it was approved
    /// after the service read it), so it is never spent without tokens.
    PollDevice {
        hash: String,
        client_id: String,
        at: i64,
        issued: Option<Issued>,
        family: Option<RefreshFamily>,
    },
    PutConsent(Consent),
    /// Withdraws a consent and revokes the user's refresh families of the client.
    DeleteConsent {
        user_id: String,
        client_id: String,
        at: i64,
    },
    /// `StartDevice` stamped with the proposer's time, so that starting a grant also drops
    /// expired records: a stream of device starts alone cannot grow the state.
    StartDeviceAt {
        hash: String,
        grant: DeviceGrant,
        at: i64,
    },
    /// Replaces a client only while it is still exactly `expected` (what the writer read);
    /// otherwise a conflict, so a write computed from an older record (an update racing a
    /// secret rotation) cannot undo the other one.
    ReplaceClient {
        expected: Box<Client>,
        client: Box<Client>,
    },
    /// Ends sessions of a user (live refresh families, `/v4/users/{id}/oauth2/sessions`): the
    /// family `family_id`, which must be a live family of this user of a client that still
    /// exists (else not found), or with `None` every live family of the user. Command
    /// version 15.
    RevokeSessions {
        user_id: String,
        family_id: Option<String>,
        at: i64,
    },
}

/// Whether an access token (`jti`, `exp`) of `domain_id` must be refused as revoked: listed, or
/// no longer listed because pruning went past its `exp`. Pruning runs on a proposer's clock;
/// one running ahead may drop an id whose token other clocks still call live, and such a
/// token must stay refused rather than become valid again.
pub fn jti_revoked<R: crate::state::read::reader::Reader>(
    read: &R,
    domain_id: &str,
    jti: &str,
    exp: i64,
) -> idnode_storage::Result<bool> {
    if read.get_raw(crate::state::cf::OAUTH2, &keys::revoked_jti(domain_id, jti))?.is_some() {
        return Ok(true);
    }
    let pruned_through: Option<i64> = read.get(crate::state::cf::OAUTH2, &keys::jtis_pruned_through(domain_id))?;
    Ok(pruned_through.is_some_and(|t| exp <= t))
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum DevicePoll {
    Pending,
    SlowDown { interval: i64 },
    Denied,
    Expired,
    Issued(DeviceGrant),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum OAuth2Applied {
    Done,
    Keys(SigningKeys),
    Client(Client),
    /// The code as it was before this redemption.
    Redeemed(AuthCode),
    /// A second redemption: what the first one issued is revoked now.
    CodeReplayed,
    Family(RefreshFamily),
    /// A spent refresh token came back: the family is revoked now.
    FamilyReused,
    /// The user, the client or the domain is gone or disabled: the family is revoked now.
    FamilyRevoked,
    Device(DevicePoll),
}
