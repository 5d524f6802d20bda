//! Token restrictions (api-shapes §13.3, Keystone-NG's token restriction provider): a named,
//! domain-owned narrowing that a mapping rule attaches to the tokens it mints. A restricted
//! token is project-scoped, holds only the restriction's roles (and what they imply) that its
//! bearer still holds, and may be renewed or re-scoped by the token method only where the
//! restriction allows. Tokens carry the restriction's id, never a copy: validation reads the
//! record as this node has applied it, so a change or a deletion takes effect on every token
//! at once. Kept in the `restrictions` column family.

use serde::{Deserialize, Serialize};

/// Key layouts of the `restrictions` column family.
pub mod keys {
    pub const RECORD_PREFIX: &[u8] = b"r/";
    pub fn record(id: &str) -> Vec<u8> {
        format!("r/{id}").into_bytes()
    }
}

/// One restriction as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRestriction {
    pub id: String,
    /// The owning domain; fixed at creation.
    pub domain_id: String,
    /// Only this user's tokens may stand on it (`None`: any principal the rule resolves).
    pub user_id: Option<String>,
    /// The project its tokens are scoped to (`None`: the project the login asks for).
    pub project_id: Option<String>,
    pub allow_renew: bool,
    pub allow_rescope: bool,
    /// The roles its tokens may carry (with what they imply), in the order given. The API
    /// names at least one; when deleted roles leave none, its tokens carry no role and stop
    /// validating (Keystone-NG reads an empty list as "not narrowed"; a restriction that
    /// widens when its last role is deleted would not be one).
    pub role_ids: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum RestrictionCommand {
    /// Stores a restriction: `create` needs the id free, otherwise the restriction must exist
    /// in the same domain. Its domain, user, project and roles must exist and belong together.
    Put { restriction: Box<TokenRestriction>, create: bool },
    /// Deletes the restriction of `domain_id` (one of another domain is not found); answers
    /// `Applied::Done`.
    Delete { id: String, domain_id: String },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum RestrictionApplied {
    Restriction(Box<TokenRestriction>),
}
