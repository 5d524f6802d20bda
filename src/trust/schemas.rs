//! OpenAPI schemas of OS-TRUST trusts. Schema only.
#![allow(dead_code)]

use utoipa::ToSchema;

use crate::http::openapi::{CollectionLinks, SelfLink};

/// A trust: the trustor's roles on a project, delegated to the trustee.
#[derive(ToSchema)]
pub struct Trust {
    id: String,
    trustor_user_id: String,
    trustee_user_id: String,
    project_id: Option<String>,
    /// The trustee's tokens act as the trustor.
    impersonation: bool,
    /// `YYYY-MM-DDTHH:MM:SS.000000Z`, or null for no expiry.
    expires_at: Option<String>,
    /// Tokens that may still be issued for it; null for no limit.
    remaining_uses: Option<i64>,
    redelegated_trust_id: Option<String>,
    /// How many more times it may be redelegated.
    redelegation_count: i64,
    /// The delegated roles (not in lists).
    #[schema(value_type = Option<Vec<Object>>)]
    roles: Option<Vec<serde_json::Value>>,
    links: SelfLink,
}

#[derive(ToSchema)]
pub struct TrustEnvelope {
    trust: Trust,
}

#[derive(ToSchema)]
pub struct TrustList {
    trusts: Vec<Trust>,
    links: CollectionLinks,
}

#[derive(ToSchema)]
pub struct TrustBody {
    /// The caller itself.
    trustor_user_id: String,
    trustee_user_id: String,
    impersonation: bool,
    project_id: Option<String>,
    /// `{"id"}` or `{"name"}` of roles the trustor holds on the project.
    #[schema(value_type = Option<Vec<Object>>)]
    roles: Option<Vec<serde_json::Value>>,
    expires_at: Option<String>,
    /// At least 1; not with redelegation.
    remaining_uses: Option<i64>,
    allow_redelegation: Option<bool>,
    /// At most 3 (the default when redelegation is allowed).
    redelegation_count: Option<i64>,
}

#[derive(ToSchema)]
pub struct TrustRequest {
    trust: TrustBody,
}
