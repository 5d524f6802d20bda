use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TokenScope {
    Unscoped,
    Project(String),
    Domain(String),
    System,
}

/// Authentication methods, in the order Keystone reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Password = 1,
    Token = 2,
    /// Keystone's marker for tokens minted from a signed request (`/v3/sigtokens`): such a
    /// token is delegated, so it cannot be re-scoped or used to call the identity API.
    Ec2Credential = 4,
    /// Issued for an application credential: the scope is the credential's project and the
    /// roles are the credential's (those the user still holds).
    ApplicationCredential = 8,
    /// Issued through a mapping ruleset for an external identity (an OIDC IdP's JWT, a
    /// Kubernetes service account, a SPIFFE JWT-SVID): Keystone's federated `mapped` method.
    Mapped = 16,
    /// Issued for a WebAuthn passkey login (`/v4/auth/passkey/finish`), unscoped.
    Passkey = 32,
    /// A time-based one-time password (RFC 6238) of one of the user's `totp` credentials.
    Totp = 64,
    /// An OS-OAUTH1 access token (`oauth1::auth`): the token is the consumer's, acting for
    /// the user who authorized it, so it is delegated.
    OAuth1 = 128,
}

impl Method {
    pub const ALL: [Method; 8] = [
        Method::Password,
        Method::Token,
        Method::Ec2Credential,
        Method::ApplicationCredential,
        Method::Mapped,
        Method::Passkey,
        Method::Totp,
        Method::OAuth1,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Method::Password => "password",
            Method::Token => "token",
            Method::Ec2Credential => "ec2credential",
            Method::ApplicationCredential => "application_credential",
            Method::Mapped => "mapped",
            Method::Passkey => "passkey",
            Method::Totp => "totp",
            Method::OAuth1 => "oauth1",
        }
    }
}

/// The payload version new tokens carry: 3 added the token restriction, 4 the user's cut-off.
pub const PAYLOAD_VERSION: u8 = 4;

/// What a token carries. Sealed with postcard + XChaCha20-Poly1305, so it is both compact
/// and opaque; user ids are uuid hex, stored as 16 bytes when they parse as such.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenPayload {
    pub version: u8,
    pub user_id: String,
    pub methods: u8,
    pub scope: TokenScope,
    /// Unix microseconds.
    pub issued_at: i64,
    pub expires_at: i64,
    /// Random 16-byte ids; the first is this token's, the second its parent's after re-scope.
    pub audit_ids: Vec<[u8; 16]>,
    /// What the user delegated this token's authority through, if anything (payload
    /// version 2; older tokens decode with none).
    pub delegation: Delegation,
    /// The token restriction it stands under (`state::restrictions`, payload version 3): its
    /// scope and roles are narrowed to what the restriction allows while it exists.
    pub restriction: Option<String>,
    /// The user's `tokens_valid_after` as the issuer read it with the credential it checked
    /// (payload version 4; older tokens decode with `None`). While it is still the user's, no
    /// password change or disable came after the token, whatever the members' clocks say
    /// (`state::apply::cutoff`).
    pub user_cutoff: Option<i64>,
}

/// The credential a delegated token stands on; the token is valid only while it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Delegation {
    None,
    /// An application credential (its id).
    AppCred(String),
    /// An OS-TRUST trust (its id): the token acts for the trustor.
    Trust(String),
    /// A mapping rule: the token's roles are what the rule grants, and it is valid only while
    /// the ruleset is still the version it was minted from (`token::rulesets`).
    Mapped(MappedGrant),
    /// A Keystone federated login (a token Keystone issued before the move, or one re-scoped
    /// from it): the token's roles include what the login's groups hold.
    Federated(FederatedLogin),
    /// An OS-OAUTH1 access token (its id): the token holds the access token's roles that its
    /// authorizing user still holds on its project.
    OAuth1(String),
}

/// The cluster version from which every voter opens tokens carrying
/// [`Delegation::Federated`] or [`Delegation::OAuth1`]: until then a Keystone federated token
/// is not re-scoped and the `oauth1` method issues nothing.
pub const KEYSTONE_DELEGATIONS_VERSION: u32 = 12;
const _: () = assert!(crate::state::apply::COMMAND_VERSION >= KEYSTONE_DELEGATIONS_VERSION);

/// The login a Keystone federated token came from, as its payload names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FederatedLogin {
    pub identity_provider_id: String,
    /// Also the token's method name in place of `mapped` (Keystone names a federated
    /// login's method after its protocol).
    pub protocol_id: String,
    pub group_ids: Vec<String>,
}

/// The mapping rule a token was minted from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MappedGrant {
    pub mapping_id: String,
    pub rule_name: String,
    /// The ruleset's `ruleset_version` at issuance (32 hex digits).
    pub ruleset_version: String,
    /// The principal is a virtual user of the shadow registry, not a user record.
    pub ephemeral: bool,
}

/// The fields every payload version starts with: payload version 1 is exactly these. Postcard
/// writes a nested struct as its fields in order, so a struct holding this one reads an older
/// layout that continues with more fields.
#[derive(Deserialize)]
struct Base {
    version: u8,
    user_id: String,
    methods: u8,
    scope: TokenScope,
    issued_at: i64,
    expires_at: i64,
    audit_ids: Vec<[u8; 16]>,
}

/// Payload version 2: the delegation, no restriction.
#[derive(Deserialize)]
struct PayloadV2 {
    base: Base,
    delegation: Delegation,
}

/// Payload version 3: the restriction, no cut-off.
#[derive(Deserialize)]
struct PayloadV3 {
    base: Base,
    delegation: Delegation,
    restriction: Option<String>,
}

impl Base {
    fn with(self, delegation: Delegation) -> TokenPayload {
        TokenPayload {
            version: self.version,
            user_id: self.user_id,
            methods: self.methods,
            scope: self.scope,
            issued_at: self.issued_at,
            expires_at: self.expires_at,
            audit_ids: self.audit_ids,
            delegation,
            restriction: None,
            user_cutoff: None,
        }
    }
}

impl TokenPayload {
    /// Decodes any payload version, still accepted until such tokens expire (postcard is not
    /// self-describing: each layout is tried newest first, and a newer one is longer, so an
    /// older token never reads as newer).
    pub fn decode(bytes: &[u8]) -> Option<TokenPayload> {
        if let Ok(p) = postcard::from_bytes::<TokenPayload>(bytes) {
            if p.version >= 4 {
                return Some(p);
            }
        }
        if let Ok(v3) = postcard::from_bytes::<PayloadV3>(bytes) {
            if v3.base.version == 3 {
                return Some(TokenPayload { restriction: v3.restriction, ..v3.base.with(v3.delegation) });
            }
        }
        if let Ok(v2) = postcard::from_bytes::<PayloadV2>(bytes) {
            if v2.base.version == 2 {
                return Some(v2.base.with(v2.delegation));
            }
        }
        Some(postcard::from_bytes::<Base>(bytes).ok()?.with(Delegation::None))
    }
}

impl TokenPayload {
    pub fn method_names(&self) -> Vec<&'static str> {
        Method::ALL.iter().filter(|m| self.methods & (**m as u8) != 0).map(|m| m.name()).collect()
    }

    /// Minted from a delegated credential (a signed request, an OAuth1 access token) rather
    /// than by the user directly.
    pub fn is_delegated(&self) -> bool {
        self.methods & Method::Ec2Credential as u8 != 0 || self.oauth1().is_some()
    }

    /// Minted from an application credential.
    pub fn app_cred(&self) -> Option<&str> {
        match &self.delegation {
            Delegation::AppCred(id) => Some(id),
            _ => None,
        }
    }

    /// Issued for a trust.
    pub fn trust(&self) -> Option<&str> {
        match &self.delegation {
            Delegation::Trust(id) => Some(id),
            _ => None,
        }
    }

    /// Minted from a mapping rule.
    pub fn mapped(&self) -> Option<&MappedGrant> {
        match &self.delegation {
            Delegation::Mapped(m) => Some(m),
            _ => None,
        }
    }

    /// From a Keystone federated login.
    pub fn federated(&self) -> Option<&FederatedLogin> {
        match &self.delegation {
            Delegation::Federated(f) => Some(f),
            _ => None,
        }
    }

    /// From a Keystone OAuth1 access token.
    pub fn oauth1(&self) -> Option<&str> {
        match &self.delegation {
            Delegation::OAuth1(id) => Some(id),
            _ => None,
        }
    }

    /// The principal is a virtual user (an `ephemeral` mapping rule): it cannot create
    /// application credentials, credentials or trusts (spec, Authentication item 6).
    pub fn is_virtual(&self) -> bool {
        self.mapped().is_some_and(|m| m.ephemeral)
    }

    pub fn audit_id_strings(&self) -> Vec<String> {
        use base64::Engine;
        self.audit_ids.iter().map(|a| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(a)).collect()
    }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;

    use super::*;

    fn v4() -> TokenPayload {
        TokenPayload {
            version: PAYLOAD_VERSION,
            user_id: "u".into(),
            methods: Method::Mapped as u8,
            scope: TokenScope::Project("p".into()),
            issued_at: 1,
            expires_at: 2,
            audit_ids: vec![[7; 16]],
            delegation: Delegation::Trust("t".into()),
            restriction: Some("r".into()),
            user_cutoff: Some(5),
        }
    }

    /// How the three older versions were written: the same fields, fewer of them.
    #[derive(Serialize)]
    struct OldV3(u8, String, u8, TokenScope, i64, i64, Vec<[u8; 16]>, Delegation, Option<String>);
    #[derive(Serialize)]
    struct OldV2(u8, String, u8, TokenScope, i64, i64, Vec<[u8; 16]>, Delegation);
    #[derive(Serialize)]
    struct OldV1(u8, String, u8, TokenScope, i64, i64, Vec<[u8; 16]>);

    #[test]
    fn every_payload_version_decodes_as_written() {
        let p = v4();
        let bytes = postcard::to_allocvec(&p).unwrap();
        assert_eq!(TokenPayload::decode(&bytes), Some(p.clone()));
        // A member still on payload version 3 reads a version 4 token's leading fields alike.
        let as_v3 = postcard::from_bytes::<PayloadV3>(&bytes).unwrap();
        assert_eq!((as_v3.base.version, as_v3.restriction), (4, p.restriction.clone()));
        let v3 =
            OldV3(3, "u".into(), p.methods, p.scope.clone(), 1, 2, p.audit_ids.clone(), p.delegation.clone(), None);
        let got = TokenPayload::decode(&postcard::to_allocvec(&v3).unwrap()).unwrap();
        assert_eq!((got.version, &got.delegation, got.user_cutoff), (3, &p.delegation, None));
        let v3 = OldV3(
            3,
            "u".into(),
            p.methods,
            p.scope.clone(),
            1,
            2,
            p.audit_ids.clone(),
            p.delegation.clone(),
            p.restriction.clone(),
        );
        let got = TokenPayload::decode(&postcard::to_allocvec(&v3).unwrap()).unwrap();
        assert_eq!((got.restriction, got.user_cutoff), (p.restriction.clone(), None));
        let v2 = OldV2(2, "u".into(), p.methods, p.scope.clone(), 1, 2, p.audit_ids.clone(), p.delegation.clone());
        let got = TokenPayload::decode(&postcard::to_allocvec(&v2).unwrap()).unwrap();
        assert_eq!((got.version, &got.delegation, &got.restriction), (2, &p.delegation, &None));
        let v1 = OldV1(1, "u".into(), p.methods, p.scope.clone(), 1, 2, p.audit_ids.clone());
        let got = TokenPayload::decode(&postcard::to_allocvec(&v1).unwrap()).unwrap();
        assert_eq!((got.version, &got.delegation, &got.user_id), (1, &Delegation::None, &p.user_id));
        assert_eq!(TokenPayload::decode(b"\x03"), None);
    }
}
