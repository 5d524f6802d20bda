//! Confined tokens: a token under a token restriction (`state::restrictions`) or a virtual
//! user's (an `ephemeral` mapping rule, spec Authentication item 6). Such a token stands for
//! less than its user: its scope and roles are the restriction's, or the rule's. Whatever it
//! reaches must not hand back more: a secret (an EC2 or `/v3/credentials` blob, a client or
//! API-key secret) signs requests that mint tokens with none of the narrowing, and a credential
//! or delegation it created would outlive the restriction and renew without it. So a confined
//! token reads no secret, creates no credential or delegation, and reshapes no restriction or
//! ruleset; further tokens it buys come only from the token method, which carries the
//! restriction on (`auth::restricted`). docs/decisions.md, "Token restrictions", lists every
//! path.

use super::validate::ValidToken;
use crate::http::error::{ApiError, ApiResult};

/// Why a token is confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confinement {
    /// It stands under a token restriction.
    Restricted,
    /// Its principal is a virtual user (a mapped workload).
    Virtual,
}

impl ValidToken {
    /// Whether, and why, this token stands for less than its user.
    pub fn confinement(&self) -> Option<Confinement> {
        if self.payload.is_virtual() {
            Some(Confinement::Virtual)
        } else if self.payload.restriction.is_some() {
            Some(Confinement::Restricted)
        } else {
            None
        }
    }

    /// 403 for a confined token, naming what it tried (`what`: "read credential secrets").
    pub fn refuse_confined(&self, what: &str) -> ApiResult<()> {
        let who = match self.confinement() {
            None => return Ok(()),
            Some(Confinement::Virtual) => "a virtual user (mapped workload)",
            Some(Confinement::Restricted) => "a restricted token",
        };
        Err(ApiError::forbidden(format!(
            "You are not authorized to perform the requested action: {who} cannot {what}."
        )))
    }

    /// Spec, Authentication item 6: a virtual user uses no application credentials,
    /// credentials or trusts; nor does a restricted token create them.
    pub fn refuse_credential_creation(&self) -> ApiResult<()> {
        self.refuse_confined("use or create application credentials, credentials or trusts")
    }

    /// Reads that answer a secret (an EC2 secret, a credential's blob).
    pub fn refuse_secret_read(&self) -> ApiResult<()> {
        self.refuse_confined("read credentials or their secrets")
    }
}
