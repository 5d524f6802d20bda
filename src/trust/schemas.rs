//! Bodies of OS-TRUST trusts. The request types are the ones the handlers parse (fields as
//! [`Sent`], so the handlers answer wrong types with Keystone's messages).
#![allow(dead_code)]

use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::http::body::Sent;
use crate::http::fields::Obj;
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

/// Other attributes are kept and echoed back.
#[derive(Deserialize, ToSchema)]
pub struct TrustBody {
    /// The caller itself.
    #[serde(default)]
    #[schema(value_type = String, required = true)]
    pub trustor_user_id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = String, required = true)]
    pub trustee_user_id: Sent<String>,
    #[serde(default)]
    #[schema(value_type = bool, required = true)]
    pub impersonation: Sent<bool>,
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub project_id: Sent<String>,
    /// `{"id"}` or `{"name"}` of roles the trustor holds on the project.
    #[serde(default)]
    #[schema(value_type = Option<Vec<Object>>)]
    pub roles: Sent<Vec<Value>>,
    /// An ISO 8601 time in the future.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub expires_at: Sent<String>,
    /// At least 1; not with redelegation.
    #[serde(default)]
    #[schema(value_type = Option<i64>)]
    pub remaining_uses: Sent<i64>,
    #[serde(default)]
    #[schema(value_type = Option<bool>)]
    pub allow_redelegation: Sent<bool>,
    /// At most 3 (the default when redelegation is allowed).
    #[serde(default)]
    #[schema(value_type = Option<i64>)]
    pub redelegation_count: Sent<i64>,
    /// Ignored.
    #[serde(default, rename = "redelegated_trust_id")]
    #[schema(value_type = Option<String>)]
    pub _redelegated_trust_id: Sent<Value>,
    /// Ignored: the id is generated.
    #[serde(default, rename = "id")]
    #[schema(value_type = Option<String>)]
    pub _id: Sent<Value>,
    #[serde(flatten)]
    #[schema(value_type = std::collections::BTreeMap<String, serde_json::Value>)]
    pub extra: Obj,
}

#[derive(Deserialize, ToSchema)]
pub struct TrustRequest {
    #[serde(default)]
    #[schema(value_type = TrustBody, required = true)]
    pub trust: Sent<TrustBody>,
}
