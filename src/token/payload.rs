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
}

impl Method {
    pub const ALL: [Method; 3] = [Method::Password, Method::Token, Method::Ec2Credential];
    pub fn name(self) -> &'static str {
        match self {
            Method::Password => "password",
            Method::Token => "token",
            Method::Ec2Credential => "ec2credential",
        }
    }
}

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
}

impl TokenPayload {
    pub fn method_names(&self) -> Vec<&'static str> {
        Method::ALL.iter().filter(|m| self.methods & (**m as u8) != 0).map(|m| m.name()).collect()
    }

    /// Minted from a delegated credential (a signed request) rather than by the user directly.
    pub fn is_delegated(&self) -> bool {
        self.methods & Method::Ec2Credential as u8 != 0
    }

    pub fn audit_id_strings(&self) -> Vec<String> {
        use base64::Engine;
        self.audit_ids.iter().map(|a| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(a)).collect()
    }
}
